//! Push: a consistent copy of a live database (in memory when small enough), split into chunks
//! and hashed, then sent by the delta protocol (see [`super::delta_push`]), or whole (streamed)
//! to a server without the chunk routes or when asked; the receipt is checked either way.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use serde::{Deserialize, Serialize};
use ureq::SendBody;
use ureq::http::Response;

use super::cache::ChunkCache;
use super::chunks::ChunkedFile;
use super::delta_push::{Delta, DeltaPush};
use super::image::{Image, LocalCopy};
use super::transfer::{PushTransfer, TransferMode};
use super::{announced_sha256, header_u64, quote_etag};
use crate::backup::BackupOptions;
use crate::error::{Error, Result};
use crate::http::{self, Client};
use crate::ids::AgentRef;
use crate::progress;
use crate::retry::Attempt;

/// How a push proceeds.
#[derive(Debug, Clone, Default)]
pub struct PushOptions {
    /// The event watermark stored with the snapshot (`X-Stasis-Event-Seq`).
    pub event_seq: Option<u64>,
    /// Store only if the current snapshot has this ETag (`If-Match`; quotes optional).
    pub if_match: Option<String>,
    /// Show a progress bar (on a terminal only).
    pub progress: bool,
    /// Give up (retries included) at this instant.
    pub deadline: Option<Instant>,
    /// How the local copy is taken.
    pub backup: BackupOptions,
    /// Send the whole file in one request even when the server knows the chunk routes.
    pub whole_file: bool,
    /// A local chunk cache the push fills with the copy's chunks (so that a pull of what was
    /// pushed fetches nothing).
    pub cache: Option<ChunkCache>,
    /// The chunks of this agent's snapshot as last pushed from here by chunks (the sidecar keeps
    /// them): the chunks that differ from them are uploaded without first asking the server
    /// which it lacks. A server that no longer holds some of the others (collected, or another
    /// pusher's snapshot replaced them) answers the commit `409 chunks_missing`; those are
    /// uploaded and the commit tried again.
    pub previous: Option<Arc<ChunkedFile>>,
}

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
    /// the receipt was rebuilt from the snapshot's headers (see [`push`]).
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

/// Takes a consistent copy of the live database at `db` (see [`LocalCopy`]: in memory when it
/// is small enough, else in a temporary directory), hashes its chunks, and uploads it as
/// `agent`'s snapshot (see [`upload_image`]).
pub fn push(
    client: &Client,
    agent: &AgentRef,
    db: &Path,
    options: &PushOptions,
) -> Result<PushReceipt> {
    let mut copy = LocalCopy::take(db, &options.backup, None)?;
    let bytes = copy.bytes()?;
    let image = bytes.image();
    let chunked = image.chunked()?;
    upload_image(client, agent, image, &chunked, options)
}

/// Snapshots up to this size go whole: one request instead of three or more, and the server
/// keeps them inline in SQL (its default inline limit), with no KV operation at all.
pub const SMALL_SNAPSHOT_BYTES: u64 = 1024 * 1024;

/// [`upload_image`] of a file.
pub fn upload_file(
    client: &Client,
    agent: &AgentRef,
    file: &Path,
    chunked: &ChunkedFile,
    options: &PushOptions,
) -> Result<PushReceipt> {
    upload_image(client, agent, Image::File(file), chunked, options)
}

/// Uploads `image`, a consistent database nothing writes to meanwhile, whose chunks `chunked`
/// describes, as `agent`'s snapshot: by the delta protocol (only the chunks the server lacks),
/// or whole when it is at most [`SMALL_SNAPSHOT_BYTES`], when `options.whole_file` says so, or
/// when the server does not know the chunk routes.
/// Fills `options.cache` with the image's chunks once the snapshot is stored.
pub fn upload_image(
    client: &Client,
    agent: &AgentRef,
    image: Image<'_>,
    chunked: &ChunkedFile,
    options: &PushOptions,
) -> Result<PushReceipt> {
    let delta = if options.whole_file || chunked.size <= SMALL_SNAPSHOT_BYTES {
        Delta::Unsupported
    } else {
        DeltaPush {
            client,
            agent,
            image,
            chunked,
            options,
        }
        .run()?
    };
    let receipt = match delta {
        Delta::Stored(receipt) => receipt,
        Delta::Unsupported => upload_whole(client, agent, image, chunked, options)?,
    };
    if let Some(cache) = &options.cache
        && let Ok(opened) = image.open()
    {
        cache.fill_with(&chunked.chunks, |index| opened.chunk(chunked, index).ok());
    }
    Ok(receipt)
}

/// The file being uploaded and what is announced with it.
struct Upload<'a> {
    client: &'a Client,
    agent: &'a AgentRef,
    image: Image<'a>,
    sha256: &'a str,
    size: u64,
    options: &'a PushOptions,
    what: String,
}

/// Uploads a file that is already a consistent database (nothing may write to it meanwhile)
/// as `agent`'s snapshot in one `PUT`, announcing `sha256` and `size`, streaming it from disk,
/// and checks the receipt's hash and size against them.
///
/// Failed exchanges are retried, the file sent again whole. When an attempt's answer was lost
/// after its body went out and the retry is refused with 412 (the lost attempt was stored and
/// moved the ETag on), the current snapshot is checked: if it is ours, that counts as success.
pub fn upload_whole_file(
    client: &Client,
    agent: &AgentRef,
    file: &Path,
    sha256: &str,
    size: u64,
    options: &PushOptions,
) -> Result<PushReceipt> {
    Upload {
        client,
        agent,
        image: Image::File(file),
        sha256,
        size,
        options,
        what: format!("PUT {}", agent.path("/db-snapshot")),
    }
    .run()
}

/// [`upload_whole_file`] of an image.
fn upload_whole(
    client: &Client,
    agent: &AgentRef,
    image: Image<'_>,
    chunked: &ChunkedFile,
    options: &PushOptions,
) -> Result<PushReceipt> {
    Upload {
        client,
        agent,
        image,
        sha256: &chunked.sha256,
        size: chunked.size,
        options,
        what: format!("PUT {}", agent.path("/db-snapshot")),
    }
    .run()
}

impl Upload<'_> {
    /// The `PUT`, retried (see [`upload_whole_file`]).
    fn run(&self) -> Result<PushReceipt> {
        let (client, agent, options) = (self.client, self.agent, self.options);
        let mut maybe_stored = false;
        let mut receipt = client.retrying(&self.what, options.deadline, || {
            let response = self.send().inspect_err(|_| maybe_stored = true)?;
            if response.status().as_u16() == 412
                && maybe_stored
                && let Some(receipt) =
                    current_if_ours(client, agent, self.sha256, self.size, options.deadline)
            {
                return Ok(receipt);
            }
            let response = http::check_status(&self.what, response).inspect_err(|attempt| {
                maybe_stored |= matches!(attempt, Attempt::Retry { .. });
            })?;
            self.receipt(response)
        })?;
        receipt.transfer = Some(PushTransfer {
            mode: TransferMode::WholeFile,
            chunks_total: 0,
            chunks_sent: 0,
            bytes_sent: self.size,
            body_bytes_sent: self.size,
        });
        Ok(receipt)
    }

    /// One `PUT`, the body streamed from the image.
    fn send(&self) -> Result<Response<ureq::Body>, Attempt> {
        let url = self.client.config().url(&self.agent.path("/db-snapshot"));
        let body = self.image.open().map_err(Attempt::fail)?.into_reader();
        let mut request = self
            .client
            .prepare(self.client.agent().put(url), self.options.deadline)?
            .header("Content-Type", "application/octet-stream")
            .header("Content-Length", self.size.to_string())
            .header("X-Stasis-Sha256", self.sha256);
        if let Some(seq) = self.options.event_seq {
            request = request.header("X-Stasis-Event-Seq", seq.to_string());
        }
        if let Some(etag) = &self.options.if_match {
            request = request.header("If-Match", quote_etag(etag));
        }
        let bar = progress::bar(
            self.options.progress,
            self.size,
            &format!("push {}", self.agent),
        );
        let mut reader = progress::Counted::new(body, bar.clone());
        let sent = request.send(SendBody::from_reader(&mut reader));
        bar.finish_and_clear();
        sent.map_err(|e| http::transport(&self.what, e))
    }

    /// The 201's receipt, checked against what was sent.
    fn receipt(&self, response: Response<ureq::Body>) -> Result<PushReceipt, Attempt> {
        let etag = http::header(&response, "etag").map(str::to_owned);
        let mut receipt: PushReceipt = http::read_json(&self.what, response)?;
        receipt.etag = etag;
        receipt.transfer = None;
        check_receipt(receipt, self.agent, self.sha256, self.size, &self.what)
            .map_err(Attempt::fail)
    }
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
