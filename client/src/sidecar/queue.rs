//! The bounded queue between the stream reader and the forwarder.
//!
//! Past its bound (events or bytes) new events are not queued: they are counted into a
//! [`Gap`] and dropped, and every later event is dropped too until the forwarder has stored
//! enough to bring the queue under half its bound ([`Queue::reopen_if_room`]). Then a
//! [`Resync`] marker carrying the gap takes its place in the order, so that the forwarder
//! appends the gap event and re-reads the conversation from the runtime exactly where the
//! events went missing. Markers ignore the bound: they are small and there are few.

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Instant;

use serde::Serialize;

use super::event::Outgoing;

/// What the queue may hold before it drops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bound {
    /// Events.
    pub events: usize,
    /// Bytes of encoded events.
    pub bytes: usize,
}

/// Events dropped while the queue was full.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub(crate) struct Gap {
    pub(crate) dropped_events: u64,
    pub(crate) dropped_bytes: u64,
    /// When the first and the last were read (ms since the epoch).
    pub(crate) from_ms: u64,
    pub(crate) to_ms: u64,
}

/// Why the conversation is re-read from the runtime.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ResyncReason {
    /// The first connection of a sidecar with no state: the runtime may have run first.
    Start,
    /// The first connection after a restart of the sidecar.
    Restart,
    /// The event stream was lost and reopened (the runtime does not replay).
    Reconnect,
    /// The queue was full and events were dropped.
    BufferFull,
}

impl std::fmt::Display for ResyncReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ResyncReason::Start => "start",
            ResyncReason::Restart => "restart",
            ResyncReason::Reconnect => "reconnect",
            ResyncReason::BufferFull => "buffer_full",
        })
    }
}

/// A request to re-read messages that changed since `since_ms`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Resync {
    pub(crate) reason: ResyncReason,
    pub(crate) since_ms: u64,
    pub(crate) gap: Option<Gap>,
    /// The opening of the runtime's event stream this resync follows, when it follows one.
    pub(crate) opened: Option<StreamOpened>,
}

/// When the runtime's event stream was asked for and when it answered (ms since the epoch): a
/// recovery's timeline tells the runtime's first answer from the sidecar's own work by them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub(crate) struct StreamOpened {
    pub(crate) requested_ms: u64,
    pub(crate) answered_ms: u64,
}

/// One queued thing.
#[derive(Debug)]
pub(crate) enum Item {
    Event(Outgoing),
    Resync(Resync),
}

/// What [`Queue::push_event`] did.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Pushed {
    Queued,
    /// Dropped into the gap; `first` for the first drop of a gap.
    Dropped {
        first: bool,
    },
    /// The queue is closed (the sidecar is stopping).
    Closed,
}

#[derive(Debug, Default)]
struct Inner {
    items: VecDeque<Item>,
    events: usize,
    bytes: usize,
    gap: Option<Gap>,
    /// Where the open gap's resync starts: its first drop, or an earlier folded resync.
    gap_since_ms: u64,
    closed: bool,
}

/// The queue (see the module doc).
#[derive(Debug)]
pub(crate) struct Queue {
    inner: Mutex<Inner>,
    ready: Condvar,
    bound: Bound,
}

impl Queue {
    pub(crate) fn new(bound: Bound) -> Self {
        Queue {
            inner: Mutex::default(),
            ready: Condvar::new(),
            bound,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Queues `event`, or drops it into the gap when the queue is full or a gap is open.
    pub(crate) fn push_event(&self, event: Outgoing) -> Pushed {
        let mut inner = self.lock();
        if inner.closed {
            return Pushed::Closed;
        }
        let len = event.len();
        let over = inner.events + 1 > self.bound.events || inner.bytes + len > self.bound.bytes;
        if inner.gap.is_some() || over {
            let at = event.received_ms;
            let first = inner.gap.is_none();
            if first {
                inner.gap_since_ms = at;
            }
            let gap = inner.gap.get_or_insert(Gap {
                dropped_events: 0,
                dropped_bytes: 0,
                from_ms: at,
                to_ms: at,
            });
            gap.dropped_events += 1;
            gap.dropped_bytes += len as u64;
            gap.to_ms = at;
            return Pushed::Dropped { first };
        }
        inner.events += 1;
        inner.bytes += len;
        inner.items.push_back(Item::Event(event));
        drop(inner);
        self.ready.notify_one();
        Pushed::Queued
    }

    /// Queues a resync request. While a gap is open, the gap's own resync (which starts no
    /// later) will cover it, so it is folded into the gap instead.
    pub(crate) fn push_resync(&self, resync: Resync) {
        let mut inner = self.lock();
        if inner.gap.is_some() {
            inner.gap_since_ms = inner.gap_since_ms.min(resync.since_ms);
            return;
        }
        inner.items.push_back(Item::Resync(resync));
        drop(inner);
        self.ready.notify_one();
    }

    /// After a batch was stored: ends an open gap once the queue is under half its bound,
    /// queuing its resync marker. Answers whether it did.
    pub(crate) fn reopen_if_room(&self) -> bool {
        let mut inner = self.lock();
        let room = inner.events <= self.bound.events / 2 && inner.bytes <= self.bound.bytes / 2;
        if !room {
            return false;
        }
        let Some(gap) = inner.gap.take() else {
            return false;
        };
        let resync = gap_resync(gap, inner.gap_since_ms);
        inner.items.push_back(Item::Resync(resync));
        drop(inner);
        self.ready.notify_one();
        true
    }

    /// Refuses further events; an open gap becomes its resync marker (to be handled in the
    /// flush). Wakes the forwarder, so that it stops lingering.
    pub(crate) fn close(&self) {
        let mut inner = self.lock();
        inner.closed = true;
        if let Some(gap) = inner.gap.take() {
            let resync = gap_resync(gap, inner.gap_since_ms);
            inner.items.push_back(Item::Resync(resync));
        }
        drop(inner);
        self.ready.notify_all();
    }

    /// The next item, waiting for one; `None` once the queue is closed and empty.
    pub(crate) fn next(&self) -> Option<Item> {
        let mut inner = self.lock();
        loop {
            if let Some(item) = inner.items.pop_front() {
                forget(&mut inner, &item);
                return Some(item);
            }
            if inner.closed {
                return None;
            }
            inner = self
                .ready
                .wait(inner)
                .unwrap_or_else(|poisoned| poisoned.into_inner());
        }
    }

    /// The next event if it comes before `until` and `fits`; `None` on a marker at the front,
    /// an event that does not fit, the time running out, or a closed queue with nothing left
    /// (a closed queue does not linger).
    pub(crate) fn next_event_until(
        &self,
        until: Instant,
        fits: impl Fn(&Outgoing) -> bool,
    ) -> Option<Outgoing> {
        let mut inner = self.lock();
        loop {
            match inner.items.front() {
                Some(Item::Event(event)) if fits(event) => {
                    let item = inner.items.pop_front()?;
                    forget(&mut inner, &item);
                    let Item::Event(event) = item else {
                        return None;
                    };
                    return Some(event);
                }
                Some(_) => return None,
                None if inner.closed => return None,
                None => {}
            }
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            inner = self
                .ready
                .wait_timeout(inner, left)
                .map(|(guard, _)| guard)
                .unwrap_or_else(|poisoned| poisoned.into_inner().0);
        }
    }

    /// Events queued now.
    pub(crate) fn queued_events(&self) -> usize {
        self.lock().events
    }
}

fn gap_resync(gap: Gap, since_ms: u64) -> Resync {
    Resync {
        reason: ResyncReason::BufferFull,
        since_ms,
        gap: Some(gap),
        opened: None,
    }
}

fn forget(inner: &mut Inner, item: &Item) {
    if let Item::Event(event) = item {
        inner.events -= 1;
        inner.bytes -= event.len();
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::expect_used, clippy::panic, reason = "tests fail loudly")]

    use std::time::Duration;

    use super::*;
    use crate::sidecar::event::encode;

    fn event(n: u64) -> Outgoing {
        encode("x", None, None, n).expect("encodes").0
    }

    fn bound(events: usize) -> Bound {
        Bound {
            events,
            bytes: usize::MAX,
        }
    }

    #[test]
    fn past_the_bound_events_are_counted_into_a_gap_until_room_is_back() {
        let queue = Queue::new(bound(4));
        for n in 0..4 {
            assert_eq!(queue.push_event(event(n)), Pushed::Queued);
        }
        assert_eq!(queue.push_event(event(10)), Pushed::Dropped { first: true });
        assert_eq!(
            queue.push_event(event(11)),
            Pushed::Dropped { first: false }
        );
        assert!(!queue.reopen_if_room(), "still full");
        for _ in 0..2 {
            assert!(matches!(queue.next(), Some(Item::Event(_))));
        }
        // Room again, but the gap stays open until the forwarder reopens it: no event may
        // slip in between the dropped ones.
        assert_eq!(
            queue.push_event(event(12)),
            Pushed::Dropped { first: false }
        );
        assert!(queue.reopen_if_room());
        assert_eq!(queue.push_event(event(13)), Pushed::Queued);

        let mut rest = Vec::new();
        while queue.queued_events() > 0 {
            rest.push(queue.next().expect("an item"));
        }
        let Item::Resync(resync) = &rest[2] else {
            panic!("the marker sits where the events went missing: {rest:?}")
        };
        assert_eq!(resync.reason, ResyncReason::BufferFull);
        assert_eq!(
            resync.gap,
            Some(Gap {
                dropped_events: 3,
                dropped_bytes: 3 * event(0).len() as u64,
                from_ms: 10,
                to_ms: 12
            })
        );
        assert_eq!(resync.since_ms, 10);
        assert!(matches!(&rest[3], Item::Event(e) if e.received_ms == 13));
    }

    #[test]
    fn the_byte_bound_counts_too() {
        let one = event(0).len();
        let queue = Queue::new(Bound {
            events: 100,
            bytes: one * 2,
        });
        assert_eq!(queue.push_event(event(0)), Pushed::Queued);
        assert_eq!(queue.push_event(event(1)), Pushed::Queued);
        assert_eq!(queue.push_event(event(2)), Pushed::Dropped { first: true });
    }

    #[test]
    fn a_resync_asked_for_during_a_gap_is_folded_into_the_gaps_resync() {
        let queue = Queue::new(bound(1));
        queue.push_event(event(0));
        queue.push_event(event(50));
        queue.push_resync(Resync {
            reason: ResyncReason::Reconnect,
            since_ms: 20,
            gap: None,
            opened: None,
        });
        queue.next();
        assert!(queue.reopen_if_room());
        let Some(Item::Resync(resync)) = queue.next() else {
            panic!("the gap's resync")
        };
        assert_eq!(
            (resync.reason, resync.since_ms),
            (ResyncReason::BufferFull, 20)
        );
        assert_eq!(resync.gap.map(|g| (g.from_ms, g.to_ms)), Some((50, 50)));
    }

    #[test]
    fn lingering_stops_at_a_marker_at_an_event_that_does_not_fit_and_at_close() {
        let queue = Queue::new(bound(10));
        let soon = || Instant::now() + Duration::from_millis(20);
        queue.push_event(event(1));
        queue.push_resync(Resync {
            reason: ResyncReason::Start,
            since_ms: 0,
            gap: None,
            opened: None,
        });
        assert!(queue.next_event_until(soon(), |_| true).is_some());
        assert!(
            queue.next_event_until(soon(), |_| true).is_none(),
            "a marker"
        );
        assert!(matches!(queue.next(), Some(Item::Resync(_))));
        queue.push_event(event(2));
        assert!(
            queue.next_event_until(soon(), |_| false).is_none(),
            "no fit"
        );
        assert!(queue.next_event_until(soon(), |_| true).is_some());

        let started = Instant::now();
        queue.close();
        let far = Instant::now() + Duration::from_secs(30);
        assert!(queue.next_event_until(far, |_| true).is_none());
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "a closed queue does not linger"
        );
        assert_eq!(queue.push_event(event(3)), Pushed::Closed);
        assert!(queue.next().is_none());
    }
}
