//! What an object's committed calls tell the metrics: appends and their
//! events, and whether a town is draining.

use super::{calls::ObjectAnswer, object::ObjectKind};
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

/// Records what one committed call answered.
pub fn answered(metrics: &Metrics, object: &Path, answer: &Result<ObjectAnswer, DomainError>) {
    match answer {
        Ok(ObjectAnswer::Agent(AgentReply::Appended(outcome))) if !outcome.duplicate => {
            metrics.appends.inc();
            let events = outcome.last_seq.saturating_sub(outcome.first_seq) + 1;
            metrics.events_appended.inc_by(events);
        }
        Ok(ObjectAnswer::Town(TownReply::Evicted(outcome))) => {
            metrics.town_draining(object, outcome.draining);
        }
        Ok(ObjectAnswer::Town(TownReply::Heartbeat(outcome))) => {
            metrics.town_draining(object, outcome.draining);
        }
        Ok(ObjectAnswer::Town(TownReply::State(state))) => {
            metrics.town_draining(object, state.draining);
        }
        _ => {}
    }
}
