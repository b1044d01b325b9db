//! Acting on a recorded decision once: a message whose id the decision names is sent only
//! when neither kilo nor the log has seen it.
//!
//! kilo's own database is the first witness (the message is there: it arrived). The log is
//! the second: kilo's `message.updated` for that id was forwarded by the sidecar, so kilo had
//! the message even if the database it runs on now is an older snapshot. Sending it again
//! would ask the model twice; the log already holds what happened.

use super::agent_log::{self, LogEvent};
use super::kilo_api::{Kilo, KiloMessage, id_order};
use crate::error::Result;
use crate::http::Client;
use crate::ids::AgentRef;

/// The event kilo sends for every message it stores.
const MESSAGE_UPDATED: &str = "message.updated";

/// Where a decided message goes.
pub(crate) struct Target<'a> {
    pub(crate) client: &'a Client,
    pub(crate) agent: &'a AgentRef,
    pub(crate) kilo: &'a Kilo,
    pub(crate) session: &'a str,
}

/// What became of a decided message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sent {
    /// Sent now.
    Now,
    /// It had arrived before: nothing sent.
    Before,
    /// Not sent: it never arrived, and its id no longer sorts after the session's newest
    /// message (others came in since it was decided), so kilo would not answer it. The caller
    /// decides it again under a fresh id.
    Stale,
}

/// Sends `text` as message `message_id`, decided at log seq `decided_at`, unless it arrived
/// already. `known` is kilo's view of the session when the caller read it (`None`: read it
/// now).
pub(crate) fn send_once(
    target: &Target<'_>,
    known: Option<&[KiloMessage]>,
    message_id: &str,
    text: &str,
    decided_at: u64,
) -> Result<Sent> {
    let read;
    let messages = match known {
        Some(messages) => messages,
        None => {
            read = target.kilo.messages(target.session)?;
            &read
        }
    };
    if arrived(target, messages, message_id, decided_at)? {
        return Ok(Sent::Before);
    }
    let newest = messages.iter().filter_map(|m| id_order(&m.info.id)).max();
    if newest.is_some_and(|newest| Some(newest) >= id_order(message_id)) {
        return Ok(Sent::Stale);
    }
    target.kilo.prompt(target.session, message_id, text)?;
    Ok(Sent::Now)
}

/// Whether kilo holds `message_id`, or the log holds kilo's own event for it.
fn arrived(
    target: &Target<'_>,
    messages: &[KiloMessage],
    message_id: &str,
    decided_at: u64,
) -> Result<bool> {
    if messages.iter().any(|m| m.info.id == message_id) {
        return Ok(true);
    }
    let after = decided_at.saturating_sub(1);
    let updates = agent_log::events_of_type(
        target.client,
        target.agent,
        MESSAGE_UPDATED,
        after,
        Some(target.session),
    )?;
    Ok(updates.events.iter().any(|e| names(e, message_id)))
}

/// The event is kilo's `message.updated` of `message_id`.
fn names(event: &LogEvent, message_id: &str) -> bool {
    #[derive(serde::Deserialize)]
    struct Data {
        info: Info,
    }
    #[derive(serde::Deserialize)]
    struct Info {
        id: String,
    }
    event
        .data_as::<Data>()
        .is_some_and(|d| d.info.id == message_id)
}
