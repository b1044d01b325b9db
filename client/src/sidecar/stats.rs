//! The sidecar's counters, shared by its threads, and the summary printed at exit.

use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;

/// Counters that every thread adds to.
#[derive(Debug, Default)]
pub(crate) struct Stats {
    pub(crate) events_forwarded: AtomicU64,
    pub(crate) batches: AtomicU64,
    pub(crate) duplicates: AtomicU64,
    pub(crate) dropped: AtomicU64,
    pub(crate) refused: AtomicU64,
    pub(crate) shrunk: AtomicU64,
    pub(crate) malformed: AtomicU64,
    pub(crate) resyncs: AtomicU64,
    pub(crate) resent_events: AtomicU64,
    pub(crate) reconnects: AtomicU64,
    pub(crate) snapshots_pushed: AtomicU64,
    pub(crate) snapshot_failures: AtomicU64,
}

/// Adds `n` to a counter.
pub(crate) fn add(counter: &AtomicU64, n: u64) {
    counter.fetch_add(n, Ordering::Relaxed);
}

fn get(counter: &AtomicU64) -> u64 {
    counter.load(Ordering::Relaxed)
}

/// What a sidecar run did, as printed on stdout at exit (one JSON line).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// `stopped` (a signal, everything done), `over_budget`, or `failed`.
    pub outcome: String,
    /// Why it failed or what the budget left undone.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// Events stored by stasis (gap and resync events included; duplicates not).
    pub events_forwarded: u64,
    /// Batches acknowledged.
    pub batches: u64,
    /// Batches stasis answered `duplicate: true` (a re-sent stamp it had already stored).
    pub duplicates: u64,
    /// Events not queued because the buffer was full (see the `stasis.sidecar.gap` events).
    pub dropped: u64,
    /// Events stasis refused on their own (400/413 for a single event) and that were skipped.
    pub refused: u64,
    /// Events over the size limit whose largest strings were cut.
    pub shrunk: u64,
    /// Stream lines that were not a kilo event (not JSON, no type).
    pub malformed: u64,
    /// Resyncs from the runtime's own API (start, reconnects, after gaps).
    pub resyncs: u64,
    /// Events forwarded by those resyncs.
    pub resent_events: u64,
    /// Times the runtime's event stream was reopened after a loss.
    pub reconnects: u64,
    /// Snapshots of kilo.db stored.
    pub snapshots_pushed: u64,
    /// Snapshot pushes that failed (each retried at the next trigger).
    pub snapshot_failures: u64,
}

impl Stats {
    /// The counters now, with an outcome.
    pub(crate) fn summary(&self, outcome: &str, detail: Option<String>) -> Summary {
        Summary {
            outcome: outcome.to_owned(),
            detail,
            events_forwarded: get(&self.events_forwarded),
            batches: get(&self.batches),
            duplicates: get(&self.duplicates),
            dropped: get(&self.dropped),
            refused: get(&self.refused),
            shrunk: get(&self.shrunk),
            malformed: get(&self.malformed),
            resyncs: get(&self.resyncs),
            resent_events: get(&self.resent_events),
            reconnects: get(&self.reconnects),
            snapshots_pushed: get(&self.snapshots_pushed),
            snapshot_failures: get(&self.snapshot_failures),
        }
    }
}
