//! Push: a consistent copy of a live database (in memory when small enough), split into chunks
//! and hashed, then sent by the delta protocol (see [`super::delta_push`]), or whole (streamed)
//! to a server without the chunk routes or when asked; the receipt is checked either way.

use std::path::Path;

use ureq::SendBody;
use ureq::http::Response;

use super::chunks::ChunkedFile;
use super::delta_push::{Delta, DeltaPush};
use super::image::{Image, LocalCopy};
use super::options::PushOptions;
use super::push_receipt::{PushReceipt, check_receipt, current_if_ours};
use super::quote_etag;
use super::transfer::{PushTransfer, TransferMode};
use crate::error::Result;
use crate::http::{self, Client};
use crate::ids::AgentRef;
use crate::progress;
use crate::retry::Attempt;

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
