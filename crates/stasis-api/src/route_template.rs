//! A request's route label: its route template from the route table,
//! spelled as `docs/http-api.md` spells the path
//! (`/api/towns/{town}/rigs/{rig}/agents/{agent}/events`), which metrics and
//! request logs group requests by so that ids never become label values.

use crate::{
    route::{self, Endpoint},
    table,
};
use stasis_domain::ids;

/// The template of a path no route matches.
pub const UNMATCHED: &str = "unmatched";

/// What a request's path says about it, for metrics and logs: its route
/// template, and the town, rig and agent it names when they are valid ids
/// (an invalid one is left out, so a log line never carries what a client
/// forged). Read from the path's shape alone, so that a request refused
/// before routing (401) is still labelled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteLabel {
    /// The route template, or [`UNMATCHED`].
    pub template: &'static str,
    /// The town the path names.
    pub town: Option<String>,
    /// The rig the path names.
    pub rig: Option<String>,
    /// The agent the path names.
    pub agent: Option<String>,
}

/// Labels `raw_path` (still percent-encoded).
pub fn label(raw_path: &str) -> RouteLabel {
    let decoded = route::decode_segments(raw_path);
    let segments: Vec<&str> = decoded.iter().map(String::as_str).collect();
    let valid = |id: &str| ids::is_valid_id(id).then(|| id.to_owned());
    let Some((route, params)) = table::find(&segments) else {
        return RouteLabel {
            template: UNMATCHED,
            town: None,
            rig: None,
            agent: None,
        };
    };
    let (town, rig, agent) = match (route.endpoint)(&params) {
        Endpoint::Agent(key, _) => (valid(&key.town), valid(&key.rig), valid(&key.agent)),
        Endpoint::Town(town, _) => (valid(&town), None, None),
        _ => (None, None, None),
    };
    RouteLabel {
        template: route.template,
        town,
        rig,
        agent,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_name_placeholders_and_keep_valid_ids_only() {
        let events = label("/api/towns/t1/rigs/r/agents/a%3A1/events");
        assert_eq!(
            events.template,
            "/api/towns/{town}/rigs/{rig}/agents/{agent}/events"
        );
        assert_eq!(events.town.as_deref(), Some("t1"));
        assert_eq!(events.agent.as_deref(), Some("a:1"));
        let forged = label("/api/towns/a%0Ab/heartbeat");
        assert_eq!(forged.template, "/api/towns/{town}/heartbeat");
        assert_eq!(forged.town, None);
        assert_eq!(label("/nope").template, UNMATCHED);
        assert_eq!(label("/metrics").template, "/metrics");
        let chunk = label(&format!(
            "/api/towns/t/rigs/r/agents/a/db-snapshot/chunks/{}",
            "0".repeat(64)
        ));
        assert_eq!(
            chunk.template,
            "/api/towns/{town}/rigs/{rig}/agents/{agent}/db-snapshot/chunks/{sha256}"
        );
    }
}
