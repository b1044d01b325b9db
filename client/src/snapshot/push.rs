//! Push: a consistent copy of a live database, hashed, streamed up, its receipt checked.

use std::fs::File;
use std::path::Path;
use std::time::Instant;

use serde::{Deserialize, Serialize};
use ureq::SendBody;
use ureq::http::Response;

use super::{SNAPSHOT_MAX_BYTES, announced_sha256, hash_file, header_u64, quote_etag};
use crate::backup::{self, BackupOptions};
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
}

/// Takes a consistent copy of the live database at `db` (see [`backup`]) into a temporary
/// directory, hashes it, and uploads it as `agent`'s snapshot (see [`upload_file`]).
pub fn push(
    client: &Client,
    agent: &AgentRef,
    db: &Path,
    options: &PushOptions,
) -> Result<PushReceipt> {
    let dir = tempfile::Builder::new()
        .prefix("stasis-push-")
        .tempdir()
        .map_err(|e| Error::io("creating a temporary directory for the copy", e))?;
    let copy = dir.path().join("kilo.db");
    backup::backup_database(db, &copy, &options.backup, |_, _| {})?;
    let (sha256, size) = hash_file(&copy)?;
    upload_file(client, agent, &copy, &sha256, size, options)
}

/// The file being uploaded and what is announced with it.
struct Upload<'a> {
    client: &'a Client,
    agent: &'a AgentRef,
    file: &'a Path,
    sha256: &'a str,
    size: u64,
    options: &'a PushOptions,
    what: String,
}

/// Uploads a file that is already a consistent database (nothing may write to it meanwhile)
/// as `agent`'s snapshot, announcing `sha256` and `size`, streaming it from disk, and checks
/// the receipt's hash and size against them.
///
/// Failed exchanges are retried, the file sent again whole. When an attempt's answer was lost
/// after its body went out and the retry is refused with 412 (the lost attempt was stored and
/// moved the ETag on), the current snapshot is checked: if it is ours, that counts as success.
pub fn upload_file(
    client: &Client,
    agent: &AgentRef,
    file: &Path,
    sha256: &str,
    size: u64,
    options: &PushOptions,
) -> Result<PushReceipt> {
    if size > SNAPSHOT_MAX_BYTES {
        return Err(Error::TooLarge {
            what: format!("the snapshot of {}", file.display()),
            size,
            limit: SNAPSHOT_MAX_BYTES,
        });
    }
    let upload = Upload {
        client,
        agent,
        file,
        sha256,
        size,
        options,
        what: format!("PUT {}", agent.path("/db-snapshot")),
    };
    let mut maybe_stored = false;
    client.retrying(&upload.what, options.deadline, || {
        let response = upload.send().inspect_err(|_| maybe_stored = true)?;
        if response.status().as_u16() == 412
            && maybe_stored
            && let Some(receipt) = upload.current_if_ours()
        {
            return Ok(receipt);
        }
        let response = http::check_status(&upload.what, response).inspect_err(|attempt| {
            maybe_stored |= matches!(attempt, Attempt::Retry { .. });
        })?;
        upload.receipt(response)
    })
}

impl Upload<'_> {
    /// One `PUT`, the body streamed from the file.
    fn send(&self) -> Result<Response<ureq::Body>, Attempt> {
        let url = self.client.config().url(&self.agent.path("/db-snapshot"));
        let body = File::open(self.file)
            .map_err(|e| Attempt::fail(Error::io(format!("reading {}", self.file.display()), e)))?;
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
        let reader = progress::Counted::new(body, bar.clone());
        let sent = request.send(SendBody::from_owned_reader(reader));
        bar.finish_and_clear();
        sent.map_err(|e| http::transport(&self.what, e))
    }

    /// The 201's receipt, checked against what was sent.
    fn receipt(&self, response: Response<ureq::Body>) -> Result<PushReceipt, Attempt> {
        let etag = http::header(&response, "etag").map(str::to_owned);
        let mut receipt: PushReceipt = http::read_json(&self.what, response)?;
        receipt.etag = etag;
        if !receipt.sha256.eq_ignore_ascii_case(self.sha256) {
            return Err(Attempt::fail(Error::Integrity {
                what: format!("the server's receipt of {}'s snapshot", self.agent),
                expected: self.sha256.to_owned(),
                actual: receipt.sha256,
            }));
        }
        if receipt.size != self.size {
            return Err(Attempt::fail(Error::Protocol {
                what: self.what.clone(),
                detail: format!("stored {} bytes, {} were sent", receipt.size, self.size),
            }));
        }
        Ok(receipt)
    }

    /// `HEAD .../db-snapshot`: a receipt when the current snapshot is the one being pushed.
    fn current_if_ours(&self) -> Option<PushReceipt> {
        let url = self.client.config().url(&self.agent.path("/db-snapshot"));
        let request = self
            .client
            .prepare(self.client.agent().head(url), self.options.deadline)
            .ok()?;
        let response = request.call().ok()?;
        let current = announced_sha256(&response)?;
        if response.status().as_u16() != 200 || !current.eq_ignore_ascii_case(self.sha256) {
            return None;
        }
        Some(PushReceipt {
            version: header_u64(&response, "x-stasis-snapshot-version")?,
            sha256: self.sha256.to_owned(),
            size: self.size,
            storage: None,
            event_watermark: header_u64(&response, "x-stasis-event-seq"),
            etag: http::header(&response, "etag").map(str::to_owned),
        })
    }
}
