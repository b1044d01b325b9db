//! Sending one batch until stasis stores it: the stamp state written first, then retries
//! forever while stasis is unreachable (or answers 5xx/429), a split when stasis refuses the
//! batch itself (400, 413), a new producer when stasis forgot this one's window, and the end
//! of the run on a refusal that retrying cannot fix (401, 403, 404, 409 `container_fenced`).

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use serde::Deserialize;

use super::{Forwarder, Stop};
use crate::error::Error;
use crate::retry::{self, RetryPolicy};
use crate::sidecar::Log;
use crate::sidecar::batch::Batch;
use crate::sidecar::snapshots::SnapshotCall;
use crate::sidecar::stats::add;

/// The longest one append attempt may take (a 4 MiB body on a slow link included).
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(60);
/// While stasis stays unreachable, a reminder at most this often.
const REMIND_EVERY: Duration = Duration::from_secs(30);

/// stasis's answer to an append.
#[derive(Debug, Deserialize)]
struct Ack {
    last_seq: u64,
    #[serde(default)]
    duplicate: bool,
}

/// What became of one send.
enum Sent {
    Stored(Ack),
    /// stasis refused this batch itself (400, 413): split it, or skip its only event.
    Refused(Error),
}

impl Forwarder {
    /// Sends `batch` until stored; a refused batch is split, a refused single event skipped.
    pub(super) fn deliver(&mut self, batch: Batch) -> Result<(), Stop> {
        let mut work = vec![batch];
        while let Some(batch) = work.pop() {
            let count = batch.events.len();
            match self.send(batch)? {
                Sent::Stored(ack) => self.stored(&ack, count),
                Sent::Refused(error) => {
                    let Some(refused) = self.state.in_flight.take() else {
                        continue;
                    };
                    if count > 1 {
                        let (first, second) = refused.split(self.state.take_seq());
                        (self.log)(&format!(
                            "stasis refused a batch of {count} events ({error}): sending it in two"
                        ));
                        work.push(second);
                        work.push(first);
                    } else {
                        add(&self.stats.refused, 1);
                        (self.log)(&format!("stasis refused an event ({error}): skipped"));
                    }
                }
            }
        }
        Ok(())
    }

    /// Writes the state with `batch` in flight, then posts it until stasis answers for good.
    fn send(&mut self, batch: Batch) -> Result<Sent, Stop> {
        self.state.covered_until_ms = self.state.covered_until_ms.max(batch.newest_received_ms);
        self.state.in_flight = Some(batch);
        self.save()?;
        let path = self.agent.path("/events");
        let mut failures = Failures::new();
        loop {
            let Some(batch) = &self.state.in_flight else {
                return Err(Stop::Fatal(Error::Config("no batch in flight".into())));
            };
            let body = batch
                .body(&self.state.producer_id)
                .map_err(|e| Stop::Fatal(Error::Config(format!("encoding a batch: {e}"))))?;
            let deadline = self.attempt_deadline();
            let error = match self.client.post_json::<Ack>(&path, &body, Some(deadline)) {
                Ok(ack) => {
                    failures.recovered(&self.log);
                    return Ok(Sent::Stored(ack));
                }
                Err(error) => error,
            };
            match (error.status(), error.code()) {
                (Some(409), Some("producer_seq_stale")) => self.restamp()?,
                (Some(400 | 413), _) => return Ok(Sent::Refused(error)),
                _ if retryable(&error) => self.wait_to_retry(&mut failures, &error)?,
                _ => return Err(Stop::Fatal(error)),
            }
        }
    }

    /// stasis forgot this producer's window: the batch goes again under a new producer.
    fn restamp(&mut self) -> Result<(), Stop> {
        let old = self.state.producer_id.clone();
        self.state.rotate();
        let seq = self.state.take_seq();
        if let Some(batch) = &mut self.state.in_flight {
            batch.seq = seq;
        }
        (self.log)(&format!(
            "stasis no longer remembers producer {old}: continuing as {}",
            self.state.producer_id
        ));
        self.save()
    }

    fn save(&self) -> Result<(), Stop> {
        self.state_file.save(&self.state).map_err(Stop::Fatal)
    }

    fn stored(&mut self, ack: &Ack, count: usize) {
        add(&self.stats.batches, 1);
        if ack.duplicate {
            add(&self.stats.duplicates, 1);
        } else {
            add(&self.stats.events_forwarded, count as u64);
        }
        self.acked.fetch_max(ack.last_seq, Ordering::SeqCst);
        if self.state.in_flight.as_ref().is_some_and(|b| b.ends_turn) {
            // The channel only closes when the snapshot thread is gone: nothing to tell then.
            let _ = self.snapshots.send(SnapshotCall::TurnEnded);
        }
        if self.queue.reopen_if_room() {
            (self.log)(
                "the buffer has room again: queuing events (a gap event and a resync follow)",
            );
        }
    }

    /// An attempt ends within [`ATTEMPT_TIMEOUT`], and never past the shutdown deadline.
    pub(super) fn attempt_deadline(&self) -> Instant {
        let normal = Instant::now() + ATTEMPT_TIMEOUT;
        self.control
            .stop_deadline()
            .map_or(normal, |stop| stop.min(normal))
    }

    /// Sleeps before the next attempt, or gives up when the shutdown deadline is past.
    pub(super) fn wait_to_retry(&self, failures: &mut Failures, error: &Error) -> Result<(), Stop> {
        let delay = failures.next(error, &self.log);
        let resume = Instant::now() + delay;
        if self
            .control
            .stop_deadline()
            .is_some_and(|stop| resume >= stop)
        {
            return Err(Stop::OutOfTime);
        }
        std::thread::sleep(delay);
        Ok(())
    }
}

/// Whether retrying the same request may succeed: stasis unreachable, 5xx, 503, 429.
pub(super) fn retryable(error: &Error) -> bool {
    match error.root() {
        Error::Api { status, .. } => retry::is_retryable_status(*status) && !error.is_permanent(),
        Error::Transport { .. } | Error::Protocol { .. } | Error::OutOfTime { .. } => true,
        _ => false,
    }
}

/// Consecutive failures of one request: the backoff and what gets logged.
pub(super) struct Failures {
    count: u32,
    since: Option<Instant>,
    reminded: Option<Instant>,
}

impl Failures {
    pub(super) fn new() -> Self {
        Failures {
            count: 0,
            since: None,
            reminded: None,
        }
    }

    /// The wait before the next attempt (250 ms doubling up to 5 s, jittered); logs the first
    /// failure and then a reminder every 30 s.
    fn next(&mut self, error: &Error, log: &Log) -> Duration {
        let policy = RetryPolicy {
            initial_delay: Duration::from_millis(250),
            max_delay: Duration::from_secs(5),
            ..RetryPolicy::default()
        };
        let delay = policy.delay(self.count, None, retry::jitter());
        let now = Instant::now();
        let since = *self.since.get_or_insert(now);
        if self
            .reminded
            .is_none_or(|at| now.duration_since(at) >= REMIND_EVERY)
        {
            log(&format!(
                "stasis unreachable for {:.1?} ({} attempts; last: {error}); retrying until it answers",
                now.duration_since(since),
                self.count + 1
            ));
            self.reminded = Some(now);
        }
        self.count = self.count.saturating_add(1);
        delay
    }

    pub(super) fn recovered(&self, log: &Log) {
        if let Some(since) = self.since {
            log(&format!(
                "stasis answered again after {:.1?}",
                since.elapsed()
            ));
        }
    }
}
