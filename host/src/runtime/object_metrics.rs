//! What an object's committed calls tell the metrics: appends and their
//! events, and whether a town is draining.

use super::object::ObjectKind;
use crate::metrics::{Metrics, kind};
use stasis_domain::{DomainError, agent::AgentReply, town::TownReply};
use std::{path::Path, time::Duration};

/// The label of an object's kind.
pub fn kind_label(object: ObjectKind) -> &'static str {
    match object {
        ObjectKind::Agent => "agent",
        ObjectKind::Town => "town",
    }
}

/// Records one group commit: its size and how long its COMMIT took.
pub fn group_committed(metrics: &Metrics, object: ObjectKind, calls: usize, commit: Duration) {
    let label = kind(kind_label(object));
    metrics
        .group_calls
        .get_or_create(&label)
        .observe(calls as f64);
    metrics
        .commit_seconds
        .get_or_create(&label)
        .observe(commit.as_secs_f64());
}

/// Records what one committed agent call answered: appends and their
/// events.
pub fn agent_answered(metrics: &Metrics, answer: &Result<AgentReply, DomainError>) {
    if let Ok(AgentReply::Appended(outcome)) = answer
        && !outcome.duplicate
    {
        metrics.appends.inc();
        let events = outcome.last_seq.saturating_sub(outcome.first_seq) + 1;
        metrics.events_appended.inc_by(events);
    }
}

/// Records what one committed town call answered: whether the town is
/// draining.
pub fn town_answered(metrics: &Metrics, object: &Path, answer: &Result<TownReply, DomainError>) {
    let draining = match answer {
        Ok(TownReply::Evicted(outcome)) => outcome.draining,
        Ok(TownReply::Heartbeat(outcome)) => outcome.draining,
        Ok(TownReply::State(state)) => state.draining,
        _ => return,
    };
    metrics.town_draining(object, draining);
}
