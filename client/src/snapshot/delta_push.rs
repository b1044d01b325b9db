//! The delta push: ask which chunks the server lacks (or, knowing the chunks of the previous
//! push from here, take those that differ from it), upload only those (in parallel, each
//! verified by the server on arrival), then commit the manifest with `If-Match`. A commit
//! answered `409 chunks_missing` (a chunk collected meanwhile, or a guess that the server held
//! one) uploads what it names and commits again, a bounded number of times.

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};
use ureq::http::Response;

use super::chunks::ChunkedFile;
use super::image::{Image, Opened};
use super::manifest::ManifestUpload;
use super::options::PushOptions;
use super::parallel::{self, TRANSFERS_IN_FLIGHT};
use super::push_receipt::{PushReceipt, check_receipt, current_if_ours};
use super::quote_etag;
use super::transfer::{Counters, PushTransfer, TransferMode};
use crate::error::{Error, Result};
use crate::http::{self, Client};
use crate::ids::AgentRef;
use crate::retry::Attempt;

/// Commits tried before giving up on a server that keeps naming missing chunks.
const COMMIT_ROUNDS: usize = 4;

/// What a delta push came to.
#[derive(Debug)]
pub(crate) enum Delta {
    /// The manifest is committed.
    Stored(PushReceipt),
    /// The server does not serve the chunk routes: push the whole file instead.
    Unsupported,
}

#[derive(Serialize)]
struct MissingQuery<'a> {
    chunks: &'a [String],
}

#[derive(Deserialize)]
struct MissingAnswer {
    missing: Vec<String>,
}

/// What a commit attempt came to.
enum Commit {
    Stored(PushReceipt),
    Missing(Vec<String>),
}

/// One delta push of a consistent copy.
pub(crate) struct DeltaPush<'a> {
    pub client: &'a Client,
    pub agent: &'a AgentRef,
    pub image: Image<'a>,
    pub chunked: &'a ChunkedFile,
    pub options: &'a PushOptions,
}

impl DeltaPush<'_> {
    /// Runs the push; a server without the routes is [`Delta::Unsupported`].
    pub fn run(&self) -> Result<Delta> {
        let counters = Counters::default();
        let missing = match &self.options.previous {
            Some(previous) => self.not_in(previous),
            None => match self.ask_missing(&counters)? {
                Some(missing) => missing,
                None => return Ok(Delta::Unsupported),
            },
        };
        let source = self.image.open()?;
        let positions: HashMap<&str, usize> = self
            .chunked
            .chunks
            .iter()
            .enumerate()
            .rev()
            .map(|(i, sha)| (sha.as_str(), i))
            .collect();
        let mut to_send = missing;
        for _ in 0..COMMIT_ROUNDS {
            self.upload(&source, &positions, &to_send, &counters)?;
            match self.commit(&counters)? {
                Commit::Stored(mut receipt) => {
                    receipt.transfer = Some(PushTransfer {
                        mode: TransferMode::Chunks,
                        chunks_total: self.chunked.chunks.len() as u64,
                        chunks_sent: Counters::get(&counters.chunks),
                        bytes_sent: Counters::get(&counters.bytes),
                        body_bytes_sent: Counters::get(&counters.body_bytes),
                    });
                    return Ok(Delta::Stored(receipt));
                }
                Commit::Missing(missing) => to_send = missing,
            }
        }
        Err(Error::Protocol {
            what: self.manifest_what(),
            detail: format!("chunks still missing after {COMMIT_ROUNDS} uploads: {to_send:?}"),
        })
    }

    /// The distinct chunks of the image that `previous` lacks, in order.
    fn not_in(&self, previous: &ChunkedFile) -> Vec<String> {
        let held: HashSet<&str> = previous.chunks.iter().map(String::as_str).collect();
        let mut unique = self.chunked.unique_chunks();
        unique.retain(|sha| !held.contains(sha.as_str()));
        unique
    }

    /// `POST .../db-snapshot/missing`: the chunks to upload, or `None` when the server does
    /// not know the route (404 `not_found`, 405).
    fn ask_missing(&self, counters: &Counters) -> Result<Option<Vec<String>>> {
        let path = self.agent.path("/db-snapshot/missing");
        let unique = self.chunked.unique_chunks();
        let body = MissingQuery { chunks: &unique };
        let encoded = serde_json::to_vec(&body).map_or(0, |b| b.len());
        Counters::add(&counters.body_bytes, encoded as u64);
        let answer: MissingAnswer = match self.client.post_json(&path, &body, self.deadline()) {
            Ok(answer) => answer,
            Err(Error::Api { status: 405, .. }) => return Ok(None),
            Err(Error::Api {
                status: 404, code, ..
            }) if code == "not_found" => return Ok(None),
            Err(e) => return Err(e),
        };
        let asked: HashSet<&str> = unique.iter().map(String::as_str).collect();
        if let Some(stranger) = answer.missing.iter().find(|m| !asked.contains(m.as_str())) {
            return Err(Error::Protocol {
                what: format!("POST {path}"),
                detail: format!("{stranger:?} is missing, but it was not asked about"),
            });
        }
        Ok(Some(answer.missing))
    }

    /// Uploads `shas` (each a chunk of the file), in parallel.
    fn upload(
        &self,
        source: &Opened<'_>,
        positions: &HashMap<&str, usize>,
        shas: &[String],
        counters: &Counters,
    ) -> Result<()> {
        parallel::for_each(shas, TRANSFERS_IN_FLIGHT, |sha| {
            let index = positions
                .get(sha.as_str())
                .copied()
                .ok_or_else(|| Error::Protocol {
                    what: self.manifest_what(),
                    detail: format!("the server asks for chunk {sha}, which the file lacks"),
                })?;
            let bytes = source.chunk(self.chunked, index)?;
            self.upload_chunk(sha, &bytes)?;
            Counters::add(&counters.chunks, 1);
            Counters::add(&counters.bytes, bytes.len() as u64);
            Counters::add(&counters.body_bytes, bytes.len() as u64);
            Ok(())
        })
    }

    /// `PUT .../db-snapshot/chunks/{sha}`, retried; the receipt must name the same chunk.
    fn upload_chunk(&self, sha: &str, bytes: &[u8]) -> Result<()> {
        let path = self.agent.path(&format!("/db-snapshot/chunks/{sha}"));
        let what = format!("PUT {path}");
        #[derive(Deserialize)]
        struct Stored {
            sha256: String,
            size: u64,
        }
        let stored: Stored = self.client.retrying(&what, self.deadline(), || {
            let url = self.client.config().url(&path);
            let request = self
                .client
                .prepare(self.client.agent().put(url), self.deadline())?
                .header("Content-Type", "application/octet-stream");
            let response = request.send(bytes).map_err(|e| http::transport(&what, e))?;
            http::read_json(&what, http::check_status(&what, response)?)
        })?;
        if !stored.sha256.eq_ignore_ascii_case(sha) || stored.size != bytes.len() as u64 {
            return Err(Error::Protocol {
                what,
                detail: format!(
                    "stored {} ({} bytes), {sha} ({} bytes) was sent",
                    stored.sha256,
                    stored.size,
                    bytes.len()
                ),
            });
        }
        Ok(())
    }

    /// `PUT .../db-snapshot/manifest`, retried. As for the whole-file PUT, a 412 after an
    /// attempt whose answer was lost is a success when the current snapshot is ours.
    fn commit(&self, counters: &Counters) -> Result<Commit> {
        let what = self.manifest_what();
        let manifest = ManifestUpload::of(self.chunked, self.options.event_seq);
        let body = serde_json::to_vec(&manifest).map_err(|e| Error::Protocol {
            what: what.clone(),
            detail: format!("the manifest does not encode: {e}"),
        })?;
        let mut maybe_stored = false;
        self.client.retrying(&what, self.deadline(), || {
            Counters::add(&counters.body_bytes, body.len() as u64);
            let response = self
                .send_manifest(&body)
                .inspect_err(|_| maybe_stored = true)?;
            match response.status().as_u16() {
                409 => self.missing_from(response),
                412 if maybe_stored => match self.current_if_ours() {
                    Some(receipt) => Ok(Commit::Stored(receipt)),
                    None => Err(http::refusal(&what, response)),
                },
                _ => {
                    let response = http::check_status(&what, response).inspect_err(|a| {
                        maybe_stored |= matches!(a, Attempt::Retry { .. });
                    })?;
                    self.receipt(response).map(Commit::Stored)
                }
            }
        })
    }

    fn send_manifest(&self, body: &[u8]) -> Result<Response<ureq::Body>, Attempt> {
        let what = self.manifest_what();
        let url = self
            .client
            .config()
            .url(&self.agent.path("/db-snapshot/manifest"));
        let mut request = self
            .client
            .prepare(self.client.agent().put(url), self.deadline())?
            .header("Content-Type", "application/json");
        if let Some(etag) = &self.options.if_match {
            request = request.header("If-Match", quote_etag(etag));
        }
        request.send(body).map_err(|e| http::transport(&what, e))
    }

    /// A 409: `chunks_missing` names the chunks to upload; any other conflict is final.
    fn missing_from(&self, response: Response<ureq::Body>) -> Result<Commit, Attempt> {
        let error = http::api_error(&self.manifest_what(), response);
        let missing = match &error {
            Error::Api {
                code,
                detail: Some(detail),
                ..
            } if code == "chunks_missing" => detail.get("missing").and_then(|m| m.as_array()),
            _ => None,
        };
        let Some(missing) = missing else {
            return Err(Attempt::fail(error));
        };
        let missing: Vec<String> = missing
            .iter()
            .filter_map(|m| m.as_str().map(str::to_ascii_lowercase))
            .collect();
        if missing.is_empty() {
            return Err(Attempt::fail(error));
        }
        Ok(Commit::Missing(missing))
    }

    fn receipt(&self, response: Response<ureq::Body>) -> Result<PushReceipt, Attempt> {
        let what = self.manifest_what();
        let etag = http::header(&response, "etag").map(str::to_owned);
        // The commit answers the same receipt as a whole-file PUT.
        let mut receipt: PushReceipt = http::read_json(&what, response)?;
        receipt.etag = etag;
        check_receipt(
            receipt,
            self.agent,
            &self.chunked.sha256,
            self.chunked.size,
            &what,
        )
        .map_err(Attempt::fail)
    }

    fn current_if_ours(&self) -> Option<PushReceipt> {
        current_if_ours(
            self.client,
            self.agent,
            &self.chunked.sha256,
            self.chunked.size,
            self.deadline(),
        )
    }

    fn manifest_what(&self) -> String {
        format!("PUT {}", self.agent.path("/db-snapshot/manifest"))
    }

    fn deadline(&self) -> Option<std::time::Instant> {
        self.options.deadline
    }
}
