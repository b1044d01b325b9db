//! Batches within stasis's append limits (1,000 events and 4 MiB of body), and the body of
//! `POST /events` with the batch's producer stamp.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::event::Outgoing;

/// Events in one append.
pub(crate) const MAX_BATCH_EVENTS: usize = 1_000;
/// Bytes in one append body.
pub(crate) const MAX_BODY_BYTES: usize = 4 * 1024 * 1024;
/// `{"events":[` + `],"producer_id":"` + `","producer_seq":` + 20 digits + `}`, and the id.
const BODY_OVERHEAD: usize = 11 + 17 + 17 + 20 + 1;

/// Events stamped with one `producer_seq`: what the state file holds while it is in flight.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Batch {
    pub(crate) seq: u64,
    pub(crate) events: Vec<Box<RawValue>>,
    /// It holds a `session.idle`: a snapshot is due once it is stored.
    #[serde(default)]
    pub(crate) ends_turn: bool,
    /// When its newest event was read (ms since the epoch).
    #[serde(default)]
    pub(crate) newest_received_ms: u64,
}

#[derive(Serialize)]
struct Body<'a> {
    events: &'a [Box<RawValue>],
    producer_id: &'a str,
    producer_seq: u64,
}

impl Batch {
    /// The `POST /events` body.
    pub(crate) fn body(&self, producer_id: &str) -> Result<Box<RawValue>, serde_json::Error> {
        serde_json::value::to_raw_value(&Body {
            events: &self.events,
            producer_id,
            producer_seq: self.seq,
        })
    }

    /// This batch's stamp and flags, without its events.
    fn clone_stamp(&self) -> Batch {
        Batch {
            seq: self.seq,
            events: Vec::new(),
            ends_turn: self.ends_turn,
            newest_received_ms: self.newest_received_ms,
        }
    }

    /// Splits a refused batch in two: the first half keeps this stamp (a refused request
    /// stored nothing, so the stamp is unused), the second takes `next_seq`.
    pub(crate) fn split(mut self, next_seq: u64) -> (Batch, Batch) {
        let second = Batch {
            seq: next_seq,
            events: self.events.split_off(self.events.len() / 2),
            ..self.clone_stamp()
        };
        let first = Batch {
            events: std::mem::take(&mut self.events),
            ..self.clone_stamp()
        };
        (first, second)
    }
}

/// Collects events into a batch until one more would pass a limit.
#[derive(Debug)]
pub(crate) struct BatchBuilder {
    events: Vec<Box<RawValue>>,
    body_bytes: usize,
    ends_turn: bool,
    newest_received_ms: u64,
}

impl BatchBuilder {
    /// An empty batch for a producer id of `producer_id_len` bytes.
    pub(crate) fn new(producer_id_len: usize) -> Self {
        BatchBuilder {
            events: Vec::new(),
            body_bytes: BODY_OVERHEAD + producer_id_len,
            ends_turn: false,
            newest_received_ms: 0,
        }
    }

    /// Whether `event` still fits (an empty batch takes any event: each fits on its own).
    pub(crate) fn fits(&self, event: &Outgoing) -> bool {
        self.events.is_empty()
            || (self.events.len() < MAX_BATCH_EVENTS
                && self.body_bytes + 1 + event.len() <= MAX_BODY_BYTES)
    }

    /// Adds `event` (check [`BatchBuilder::fits`] first).
    pub(crate) fn push(&mut self, event: Outgoing) {
        self.body_bytes += event.len() + usize::from(!self.events.is_empty());
        self.ends_turn |= event.ends_turn;
        self.newest_received_ms = self.newest_received_ms.max(event.received_ms);
        self.events.push(event.json);
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// True when no further event can fit.
    pub(crate) fn is_full(&self) -> bool {
        self.events.len() >= MAX_BATCH_EVENTS
    }

    /// The batch, stamped with `seq`; the builder is empty again.
    pub(crate) fn take(&mut self, seq: u64) -> Batch {
        let batch = Batch {
            seq,
            events: std::mem::take(&mut self.events),
            ends_turn: self.ends_turn,
            newest_received_ms: self.newest_received_ms,
        };
        self.body_bytes -= batch.events.iter().map(|e| e.get().len()).sum::<usize>()
            + batch.events.len().saturating_sub(1);
        self.ends_turn = false;
        self.newest_received_ms = 0;
        batch
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::expect_used, reason = "tests fail loudly")]

    use super::*;
    use crate::sidecar::event::encode;

    fn event(kind: &str, data_bytes: usize) -> Outgoing {
        let data = serde_json::value::to_raw_value(&"d".repeat(data_bytes)).expect("raw");
        encode(kind, Some("ses_1"), Some(&data), 1)
            .expect("encodes")
            .0
    }

    #[test]
    fn a_batch_stops_at_a_thousand_events() {
        let mut builder = BatchBuilder::new(20);
        let mut count = 0;
        while builder.fits(&event("x", 1)) {
            builder.push(event("x", 1));
            count += 1;
        }
        assert_eq!(count, MAX_BATCH_EVENTS);
        assert!(builder.is_full());
    }

    #[test]
    fn a_batch_body_stays_within_four_mib_with_its_stamp() {
        let producer = "p".repeat(128);
        let mut builder = BatchBuilder::new(producer.len());
        let mut count = 0;
        while builder.fits(&event("x", 900_000)) {
            builder.push(event("x", 900_000));
            count += 1;
        }
        assert_eq!(count, 4);
        let body = builder.take(u64::MAX).body(&producer).expect("body");
        assert!(body.get().len() <= MAX_BODY_BYTES, "{}", body.get().len());
        assert!(builder.is_empty());
        assert!(
            builder.fits(&event("x", 900_000)),
            "the builder starts over"
        );
        let body: serde_json::Value = serde_json::from_str(body.get()).expect("JSON");
        assert_eq!(body["producer_seq"], u64::MAX);
        assert_eq!(body["events"].as_array().map(Vec::len), Some(4));
    }

    #[test]
    fn a_body_carries_the_events_in_order_with_the_stamp() {
        let mut builder = BatchBuilder::new(2);
        builder.push(event("first", 1));
        builder.push(event("session.idle", 1));
        let batch = builder.take(7);
        assert!(batch.ends_turn);
        let body: serde_json::Value =
            serde_json::from_str(batch.body("p1").expect("body").get()).expect("JSON");
        assert_eq!(body["producer_id"], "p1");
        assert_eq!(body["producer_seq"], 7);
        assert_eq!(body["events"][0]["type"], "first");
        assert_eq!(body["events"][1]["type"], "session.idle");
        assert_eq!(body["events"][1]["session_id"], "ses_1");
    }

    #[test]
    fn a_split_keeps_the_order_and_the_first_stamp() {
        let mut builder = BatchBuilder::new(2);
        for kind in ["a", "b", "c"] {
            builder.push(event(kind, 1));
        }
        let (first, second) = builder.take(4).split(9);
        assert_eq!((first.seq, first.events.len()), (4, 1));
        assert_eq!((second.seq, second.events.len()), (9, 2));
        assert!(second.events[1].get().contains(r#""type":"c""#));
    }
}
