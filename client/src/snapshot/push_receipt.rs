//! The server's receipt for a stored snapshot, whichever way it went (delta or whole file):
//! checked against what was sent, or rebuilt from the current snapshot's headers when the
//! answer to a stored upload was lost.

use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::transfer::PushTransfer;
use super::{announced_sha256, header_u64};
use crate::error::{Error, Result};
use crate::http::{self, Client};
use crate::ids::AgentRef;

/// The server's receipt for a stored snapshot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PushReceipt {
    /// The snapshot's version, increasing per agent.
    pub version: u64,
    /// The hex sha256 of the stored bytes (checked against the local one).
    pub sha256: String,
    /// Bytes stored.
    pub size: u64,
    /// Where the server keeps it: `inline` or `kv`. `None` only when an answer was lost and
    /// the receipt was rebuilt from the snapshot's headers (see [`push`](fn@super::push)).
    #[serde(default)]
    pub storage: Option<String>,
    /// The event watermark stored with it.
    #[serde(default)]
    pub event_watermark: Option<u64>,
    /// The `ETag` answered, for a later `If-Match`.
    #[serde(default)]
    pub etag: Option<String>,
    /// What went over the wire (set by the client, not by the server).
    #[serde(default)]
    pub transfer: Option<PushTransfer>,
}

/// `receipt` when it stores `sha256` and `size` (what was sent), else the error saying how
/// it differs.
pub(crate) fn check_receipt(
    receipt: PushReceipt,
    agent: &AgentRef,
    sha256: &str,
    size: u64,
    what: &str,
) -> Result<PushReceipt> {
    if !receipt.sha256.eq_ignore_ascii_case(sha256) {
        return Err(Error::Integrity {
            what: format!("the server's receipt of {agent}'s snapshot"),
            expected: sha256.to_owned(),
            actual: receipt.sha256,
        });
    }
    if receipt.size != size {
        return Err(Error::Protocol {
            what: what.to_owned(),
            detail: format!("stored {} bytes, {size} were sent", receipt.size),
        });
    }
    Ok(receipt)
}

/// `HEAD .../db-snapshot`: a receipt when the current snapshot is the one being pushed.
pub(crate) fn current_if_ours(
    client: &Client,
    agent: &AgentRef,
    sha256: &str,
    size: u64,
    deadline: Option<Instant>,
) -> Option<PushReceipt> {
    let url = client.config().url(&agent.path("/db-snapshot"));
    let request = client.prepare(client.agent().head(url), deadline).ok()?;
    let response = request.call().ok()?;
    let current = announced_sha256(&response)?;
    if response.status().as_u16() != 200 || !current.eq_ignore_ascii_case(sha256) {
        return None;
    }
    Some(PushReceipt {
        version: header_u64(&response, "x-stasis-snapshot-version")?,
        sha256: sha256.to_owned(),
        size,
        storage: None,
        event_watermark: header_u64(&response, "x-stasis-event-seq"),
        etag: http::header(&response, "etag").map(str::to_owned),
        transfer: None,
    })
}
