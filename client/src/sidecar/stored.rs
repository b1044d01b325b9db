//! What the agent's log already holds of the messages a resync reads back: the latest `info` of
//! each message (`message.updated`) and the latest state of each part (`message.part.updated`),
//! by id, for the sessions the resync touches. A resync re-sends only what differs, so a
//! restarted sidecar (or one in a new container) does not store again what an earlier one
//! stored.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::Value;

use crate::error::Result;
use crate::http::Client;
use crate::ids::{AgentRef, check_id};

/// Events read per page.
const PAGE: u32 = 1_000;
/// Pages read per session and type at most (the log keeps 10,000 events by default).
const MAX_PAGES: u32 = 50;
/// The longest one page may take.
const PAGE_TIMEOUT: Duration = Duration::from_secs(30);

/// What a resynced event says, to compare with what the log holds.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Said {
    /// A message's `info`, by message id.
    Message(String),
    /// A part's state, by part id.
    Part(String),
}

/// The latest stored state of each message and part, by id.
#[derive(Debug, Default)]
pub(crate) struct Stored {
    latest: HashMap<Said, Value>,
}

impl Stored {
    /// Whether the log's latest state of `said` is `value`.
    pub(crate) fn holds(&self, said: &Said, value: &Value) -> bool {
        self.latest.get(said) == Some(value)
    }

    /// Notes one stored event's data (the later replaces the earlier).
    pub(crate) fn record(&mut self, data: &Value) {
        if let Some(info) = data.get("info")
            && let Some(id) = info.get("id").and_then(Value::as_str)
        {
            self.latest
                .insert(Said::Message(id.to_owned()), info.clone());
        }
        if let Some(part) = data.get("part")
            && let Some(id) = part.get("id").and_then(Value::as_str)
        {
            self.latest.insert(Said::Part(id.to_owned()), part.clone());
        }
    }
}

/// Where a resync learns what the log holds.
pub(crate) trait StoredLog {
    /// The latest stored messages and parts of `sessions`.
    fn stored(&self, sessions: &[String]) -> Result<Stored>;
}

/// The agent's log in stasis.
pub(crate) struct AgentLog<'a> {
    pub(crate) client: &'a Client,
    pub(crate) agent: &'a AgentRef,
}

#[derive(Deserialize)]
struct Page {
    events: Vec<StoredEvent>,
    next_after: u64,
    has_more: bool,
    #[serde(default)]
    first_seq: u64,
}

#[derive(Deserialize)]
struct StoredEvent {
    #[serde(default)]
    data: Value,
}

impl StoredLog for AgentLog<'_> {
    fn stored(&self, sessions: &[String]) -> Result<Stored> {
        let mut stored = Stored::default();
        for session in sessions {
            check_id("session", session)?;
            for kind in ["message.updated", "message.part.updated"] {
                self.read_all(session, kind, &mut stored)?;
            }
        }
        Ok(stored)
    }
}

impl AgentLog<'_> {
    /// Every retained event of `kind` in `session`, oldest first, recorded into `stored`.
    fn read_all(&self, session: &str, kind: &str, stored: &mut Stored) -> Result<()> {
        // A probe past the end tells where the retained log starts (an older cursor is 410).
        let mut after = self.page(session, kind, u64::MAX >> 12, 1)?.first_seq;
        after = after.saturating_sub(1);
        for _ in 0..MAX_PAGES {
            let page = self.page(session, kind, after, PAGE)?;
            for event in &page.events {
                stored.record(&event.data);
            }
            if !page.has_more {
                break;
            }
            after = page.next_after;
        }
        Ok(())
    }

    fn page(&self, session: &str, kind: &str, after: u64, limit: u32) -> Result<Page> {
        let path = self.agent.path(&format!(
            "/events?session_id={session}&type={kind}&after={after}&limit={limit}"
        ));
        self.client
            .get_json::<Page>(&path, Some(Instant::now() + PAGE_TIMEOUT))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_latest_state_of_each_message_and_part_is_what_the_log_holds() {
        let mut stored = Stored::default();
        let first = serde_json::json!({"info": {"id": "m1", "role": "assistant"}});
        let later =
            serde_json::json!({"info": {"id": "m1", "role": "assistant", "finish": "stop"}});
        let part = serde_json::json!({"part": {"id": "p1", "text": "hi"}, "time": 5});
        stored.record(&first);
        stored.record(&later);
        stored.record(&part);
        let message = Said::Message("m1".into());
        assert!(stored.holds(&message, &later["info"]));
        assert!(!stored.holds(&message, &first["info"]));
        assert!(stored.holds(&Said::Part("p1".into()), &part["part"]));
        assert!(!stored.holds(&Said::Part("p2".into()), &part["part"]));
    }
}
