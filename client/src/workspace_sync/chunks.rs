//! Chunks and manifest pages over the wire: which ones the agent's store lacks
//! (`POST /workspace/missing`, in batches), an upload (`PUT /workspace/chunks/{sha256}`, its
//! receipt checked) and a download (`GET /workspace/chunks/{sha256}`, its bytes checked against
//! the name and the size), each retried under the client's policy.

use std::collections::HashSet;
use std::io::Read;
use std::time::Instant;

use serde::{Deserialize, Serialize};
use stasis_domain::workspace::ContentHash;

use crate::error::{Error, Result};
use crate::http::{self, Client};
use crate::ids::AgentRef;
use crate::retry::Attempt;

/// The most names one `missing` call may ask about (the contract's limit).
pub const MISSING_BATCH: usize = 32_768;

/// The code of a chunk the agent's store does not hold.
pub(crate) const CHUNK_NOT_FOUND: &str = "chunk_not_found";

/// One agent's chunk routes, with a deadline for every call.
#[derive(Clone, Copy)]
pub(crate) struct ChunkRoutes<'a> {
    pub client: &'a Client,
    pub agent: &'a AgentRef,
    pub deadline: Option<Instant>,
}

#[derive(Serialize)]
struct MissingQuery<'a> {
    chunks: &'a [ContentHash],
}

#[derive(Deserialize)]
struct MissingAnswer {
    missing: Vec<ContentHash>,
}

#[derive(Deserialize)]
struct Stored {
    sha256: ContentHash,
    size: u64,
}

impl ChunkRoutes<'_> {
    /// Those of `names` the store lacks, asked [`MISSING_BATCH`] at a time.
    pub fn missing(&self, names: &[ContentHash]) -> Result<HashSet<ContentHash>> {
        let path = self.agent.path("/workspace/missing");
        let mut missing = HashSet::new();
        for batch in names.chunks(MISSING_BATCH) {
            let body = MissingQuery { chunks: batch };
            let answer: MissingAnswer = self.client.post_json(&path, &body, self.deadline)?;
            let asked: HashSet<&ContentHash> = batch.iter().collect();
            if let Some(stranger) = answer.missing.iter().find(|m| !asked.contains(m)) {
                return Err(Error::Protocol {
                    what: format!("POST {path}"),
                    detail: format!("{stranger} is missing, but it was not asked about"),
                });
            }
            missing.extend(answer.missing);
        }
        Ok(missing)
    }

    /// Uploads one chunk or page; the receipt must name the same bytes.
    pub fn upload(&self, hash: &ContentHash, bytes: &[u8]) -> Result<()> {
        let path = self.agent.path(&format!("/workspace/chunks/{hash}"));
        let what = format!("PUT {path}");
        let stored: Stored = self.client.retrying(&what, self.deadline, || {
            let url = self.client.config().url(&path);
            let request = self
                .client
                .prepare(self.client.agent().put(url), self.deadline)?
                .header("Content-Type", "application/octet-stream");
            let response = request.send(bytes).map_err(|e| http::transport(&what, e))?;
            http::read_json(&what, http::check_status(&what, response)?)
        })?;
        if stored.sha256 != *hash || stored.size != bytes.len() as u64 {
            return Err(Error::Protocol {
                what,
                detail: format!(
                    "stored {} ({} bytes), {hash} ({} bytes) was sent",
                    stored.sha256,
                    stored.size,
                    bytes.len()
                ),
            });
        }
        Ok(())
    }

    /// Downloads one chunk or page of `size` bytes; bytes that do not hash to the name (a body
    /// cut short or garbled on the way) are fetched again.
    pub fn fetch(&self, hash: &ContentHash, size: u64) -> Result<Vec<u8>> {
        let path = self.agent.path(&format!("/workspace/chunks/{hash}"));
        let what = format!("GET {path}");
        self.client.retrying(&what, self.deadline, || {
            let url = self.client.config().url(&path);
            let request = self
                .client
                .prepare(self.client.agent().get(url), self.deadline)?;
            let response = request.call().map_err(|e| http::transport(&what, e))?;
            let response = http::check_status(&what, response)?;
            let mut bytes = Vec::new();
            response
                .into_body()
                .into_with_config()
                .limit(size + 1)
                .reader()
                .read_to_end(&mut bytes)
                .map_err(|e| http::broken_stream(&what, e))?;
            let actual = ContentHash::of(&bytes);
            if actual != *hash || bytes.len() as u64 != size {
                let error = Error::Integrity {
                    what: format!("workspace chunk {hash} ({} bytes)", bytes.len()),
                    expected: hash.to_hex(),
                    actual: actual.to_hex(),
                };
                return Err(Attempt::retry(error, None));
            }
            Ok(bytes)
        })
    }
}
