//! What the soak's requests saw: counts, latencies and failures by kind.

use std::collections::BTreeMap;
use std::time::Duration;

/// What one kind of request saw.
#[derive(Debug, Default, Clone)]
pub struct KindTally {
    /// Requests sent.
    pub requests: u64,
    /// Of those, the ones that failed (any status but the expected one,
    /// or no answer).
    pub errors: u64,
    /// How long each took.
    pub latencies: Vec<Duration>,
}

/// What a client (or, merged, all of them) saw.
#[derive(Debug, Default, Clone)]
pub struct Tally {
    /// By kind of request.
    pub kinds: BTreeMap<&'static str, KindTally>,
    /// Failures by status (`transport` when no answer came).
    pub statuses: BTreeMap<String, u64>,
    /// Events received on live tails.
    pub tail_events: u64,
    /// The first few failures, described.
    pub problems: Vec<String>,
}

impl Tally {
    /// Adds another client's counts.
    pub fn merge(&mut self, other: Tally) {
        for (kind, theirs) in other.kinds {
            let mine = self.kinds.entry(kind).or_default();
            mine.requests += theirs.requests;
            mine.errors += theirs.errors;
            mine.latencies.extend(theirs.latencies);
        }
        for (status, n) in other.statuses {
            *self.statuses.entry(status).or_default() += n;
        }
        self.tail_events += other.tail_events;
        let room = 20_usize.saturating_sub(self.problems.len());
        self.problems.extend(other.problems.into_iter().take(room));
    }

    /// Counts one request of `kind`, failed when `failure` says how.
    pub fn record(
        &mut self,
        kind: &'static str,
        took: Duration,
        failure: Option<(String, String)>,
    ) {
        let tally = self.kinds.entry(kind).or_default();
        tally.requests += 1;
        tally.latencies.push(took);
        if let Some((status, what)) = failure {
            tally.errors += 1;
            *self.statuses.entry(status).or_default() += 1;
            if self.problems.len() < 20 {
                self.problems.push(format!("{kind}: {what}"));
            }
        }
    }
}
