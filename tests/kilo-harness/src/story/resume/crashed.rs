//! A delivery decided by a container that died before it sent it: the record of the gap's
//! message, appended under the stamp `resume` itself uses, with a message id minted before
//! container B existed. B must send it once; since B's continuation went in after that id
//! was minted, the old id no longer sorts last (kilo would store it and never answer it), so
//! B decides it again under a fresh id.

use super::super::Stage;
use anyhow::{Context, Result};
use serde_json::json;
use stasis_client::resume::{DELIVERED_EVENT, USER_MESSAGE_EVENT};
use std::time::{SystemTime, UNIX_EPOCH};

/// The recorded delivery: the message's seq and the id it named.
pub(super) struct Unsent {
    pub(super) seq: u64,
    pub(super) message_id: String,
}

/// Records the delivery of the newest inbox message into `session`, unsent.
pub(super) fn decide_unsent(stage: &Stage<'_>, session: &str) -> Result<Unsent> {
    let events = stage.api.events_after(&stage.agent_path, 0)?;
    let seq = events
        .iter()
        .rev()
        .find(|e| e.kind == USER_MESSAGE_EVENT)
        .map(|e| e.seq)
        .context("the log holds no inbox message")?;
    let now_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(0));
    // kilo's shape: `msg_`, 12 hex digits of ms × 4096 (low 48 bits), 14 base62 characters.
    let message_id = format!(
        "msg_{:012x}CrashedBefore1",
        now_ms.wrapping_mul(0x1000) & 0xffff_ffff_ffff
    );
    let body = json!({
        "events": [{
            "type": DELIVERED_EVENT,
            "session_id": session,
            "data": {"seq": seq, "session_id": session, "message_id": message_id, "via": "message"},
        }],
        "producer_id": format!("stasis.inbox.{seq}"),
        "producer_seq": 0,
    });
    stage.post_json(&format!("{}/events", stage.agent_path), &body)?;
    Ok(Unsent { seq, message_id })
}
