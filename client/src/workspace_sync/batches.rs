//! Many chunks per request: an upload of a framed body (`POST /workspace/batch/upload`) and a
//! fetch answered with one (`POST /workspace/batch/fetch`), each retried under the client's
//! policy, and the grouping of chunks into batches within the contract's limits
//! ([`stasis_domain::chunk_store::frames`]).

use std::io::Read;

use serde::{Deserialize, Serialize};
use stasis_domain::chunk_store::frames::{self, BATCH_BODY_LIMIT, FRAME_HEADER, MAX_BATCH_CHUNKS};
use stasis_domain::workspace::ContentHash;

use super::chunks::ChunkRoutes;
use crate::error::{Error, Result};
use crate::http;
use crate::retry::Attempt;

/// Batches in flight at once, each way (a few batches of memory).
pub(crate) const BATCHES_IN_FLIGHT: usize = 4;

/// Framed bytes a batch of ours holds at most: under the contract's limit, leaving room.
pub(crate) const BATCH_BYTES: u64 = BATCH_BODY_LIMIT / 2;

/// Groups `items` (each with its size) into consecutive batches of at most
/// [`MAX_BATCH_CHUNKS`] chunks and [`BATCH_BYTES`] framed bytes (a chunk larger than that
/// alone in its batch).
pub(crate) fn group<T: Copy>(items: &[(T, u64)]) -> Vec<Vec<(T, u64)>> {
    let mut batches = Vec::new();
    let mut current: Vec<(T, u64)> = Vec::new();
    let mut bytes = 0;
    for &(item, size) in items {
        let framed = size + FRAME_HEADER as u64;
        if !current.is_empty()
            && (current.len() == MAX_BATCH_CHUNKS || bytes + framed > BATCH_BYTES)
        {
            batches.push(std::mem::take(&mut current));
            bytes = 0;
        }
        current.push((item, size));
        bytes += framed;
    }
    if !current.is_empty() {
        batches.push(current);
    }
    batches
}

#[derive(Deserialize)]
struct Uploaded {
    chunks: u64,
    bytes: u64,
}

#[derive(Serialize)]
struct FetchQuery<'a> {
    chunks: &'a [ContentHash],
}

impl ChunkRoutes<'_> {
    /// Uploads the framed `body` of `count` distinct chunks and `bytes` chunk bytes; the
    /// receipt must count the same.
    pub fn upload_batch(&self, body: &[u8], count: u64, bytes: u64) -> Result<()> {
        let path = self.agent.path("/workspace/batch/upload");
        let what = format!("POST {path}");
        let stored: Uploaded = self.client.retrying(&what, self.deadline, || {
            let url = self.client.config().url(&path);
            let request = self
                .client
                .prepare(self.client.agent().post(url), self.deadline)?
                .header("Content-Type", "application/octet-stream");
            let response = request.send(body).map_err(|e| http::transport(&what, e))?;
            http::read_json(&what, http::check_status(&what, response)?)
        })?;
        if stored.chunks != count || stored.bytes != bytes {
            return Err(Error::Protocol {
                what,
                detail: format!(
                    "stored {} chunks ({} bytes); {count} ({bytes} bytes) were sent",
                    stored.chunks, stored.bytes
                ),
            });
        }
        Ok(())
    }

    /// Fetches `chunks` (distinct, each with its size) in one request; each answered frame must
    /// be the one asked for, its bytes hashing to its name, else the batch is fetched again.
    pub fn fetch_batch(&self, chunks: &[(ContentHash, u64)]) -> Result<Vec<Vec<u8>>> {
        let path = self.agent.path("/workspace/batch/fetch");
        let what = format!("POST {path}");
        let names: Vec<ContentHash> = chunks.iter().map(|(name, _)| *name).collect();
        let query =
            serde_json::to_vec(&FetchQuery { chunks: &names }).map_err(|e| Error::Protocol {
                what: what.clone(),
                detail: format!("the request body does not encode: {e}"),
            })?;
        let expected: u64 = chunks
            .iter()
            .map(|(_, size)| size + FRAME_HEADER as u64)
            .sum();
        self.client.retrying(&what, self.deadline, || {
            let url = self.client.config().url(&path);
            let request = self
                .client
                .prepare(self.client.agent().post(url), self.deadline)?
                .header("Content-Type", "application/json");
            let response = request
                .send(&query[..])
                .map_err(|e| http::transport(&what, e))?;
            let mut body = Vec::new();
            http::check_status(&what, response)?
                .into_body()
                .into_with_config()
                .limit(expected + 1)
                .reader()
                .read_to_end(&mut body)
                .map_err(|e| http::broken_stream(&what, e))?;
            checked(&what, chunks, &body).map_err(|error| Attempt::retry(error, None))
        })
    }
}

/// The chunks of a fetched body, once each frame is the one asked for and hashes to its name.
fn checked(what: &str, chunks: &[(ContentHash, u64)], body: &[u8]) -> Result<Vec<Vec<u8>>> {
    let frames = frames::decode_frames(body).map_err(|e| Error::Protocol {
        what: what.to_owned(),
        detail: e.to_string(),
    })?;
    if frames.len() != chunks.len() {
        return Err(Error::Protocol {
            what: what.to_owned(),
            detail: format!(
                "{} chunks answered, {} asked for",
                frames.len(),
                chunks.len()
            ),
        });
    }
    let mut out = Vec::with_capacity(chunks.len());
    for ((name, bytes), (wanted, size)) in frames.iter().zip(chunks) {
        let actual = ContentHash::of(bytes);
        if ContentHash::from_raw(*name) != *wanted
            || actual != *wanted
            || bytes.len() as u64 != *size
        {
            return Err(Error::Integrity {
                what: format!(
                    "workspace chunk {wanted} ({} bytes) in a batch",
                    bytes.len()
                ),
                expected: wanted.to_hex(),
                actual: actual.to_hex(),
            });
        }
        out.push(bytes.to_vec());
    }
    Ok(out)
}
