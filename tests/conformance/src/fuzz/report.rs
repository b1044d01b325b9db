//! What a fuzz run saw: requests, answers by status and code, dropped
//! exchanges, state checks, and every failure with the request behind it.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use crate::{Reply, Value};

/// Counts and failures of one world, or of a whole run once merged.
#[derive(Debug, Default)]
pub struct Report {
    /// Requests sent.
    pub requests: usize,
    /// Of those, the ones sent as generated (no mutation).
    pub valid: usize,
    /// Answers by status.
    pub statuses: BTreeMap<u16, usize>,
    /// Error answers by code.
    pub codes: BTreeMap<String, usize>,
    /// Exchanges that broke off or timed out without an answer.
    pub dropped: usize,
    /// Refused requests and reads whose state was compared before and after.
    pub unchanged_checked: usize,
    /// Reads made after the fuzz, each of which had to answer.
    pub reads_after: usize,
    /// Everything that broke the contract.
    pub failures: Vec<String>,
    /// How long the whole run took.
    pub elapsed: Duration,
}

impl Report {
    /// Counts an answer.
    pub fn answered(&mut self, reply: &Reply) {
        *self.statuses.entry(reply.status).or_default() += 1;
        if reply.status >= 400
            && let Ok(body) = serde_json::from_slice::<Value>(&reply.body)
            && let Some(code) = body["error"]["code"].as_str()
        {
            *self.codes.entry(code.to_owned()).or_default() += 1;
        }
    }

    /// Records a failure.
    pub fn fail(&mut self, what: String) {
        self.failures.push(what);
    }

    /// Adds another world's counts and failures.
    pub fn merge(&mut self, other: Report) {
        self.requests += other.requests;
        self.valid += other.valid;
        self.dropped += other.dropped;
        self.unchanged_checked += other.unchanged_checked;
        self.reads_after += other.reads_after;
        for (status, n) in other.statuses {
            *self.statuses.entry(status).or_default() += n;
        }
        for (code, n) in other.codes {
            *self.codes.entry(code).or_default() += n;
        }
        self.failures.extend(other.failures);
    }

    /// The summary a run prints.
    pub fn summary(&self, seed: u64, worlds: usize) -> String {
        let mut text = String::new();
        let _ = writeln!(
            text,
            "http fuzz (seed {seed}, {worlds} towns): {} requests ({} valid as generated) in {:.1} s; \
             dropped: {}; refusals and reads with state compared: {}; reads after the fuzz: {}; \
             failures: {}",
            self.requests,
            self.valid,
            self.elapsed.as_secs_f64(),
            self.dropped,
            self.unchanged_checked,
            self.reads_after,
            self.failures.len()
        );
        let statuses: Vec<String> = self
            .statuses
            .iter()
            .map(|(s, n)| format!("{s}: {n}"))
            .collect();
        let _ = writeln!(text, "  statuses: {}", statuses.join(", "));
        let codes: Vec<String> = self
            .codes
            .iter()
            .map(|(c, n)| format!("{c}: {n}"))
            .collect();
        let _ = writeln!(text, "  error codes: {}", codes.join(", "));
        for failure in self.failures.iter().take(25) {
            let _ = writeln!(text, "  FAILURE {failure}");
        }
        if self.failures.len() > 25 {
            let _ = writeln!(text, "  ... and {} more", self.failures.len() - 25);
        }
        text
    }
}
