//! The whole-file pull: `GET .../db-snapshot` streamed into a temporary file while hashed,
//! checked against `X-Stasis-Sha256`, then landed (see [`super::landing`]). The path for a
//! server without the chunk routes, or when asked for.

use std::io::{self, Read, Write};
use std::path::Path;

use sha2::{Digest, Sha256};
use ureq::http::Response;

use super::landing;
use super::options::PullOptions;
use super::pull_outcome::{NO_SNAPSHOT, PullOutcome, PulledSnapshot};
use super::transfer::{PullTransfer, TransferMode};
use super::{announced_sha256, header_u64, is_sha256_hex, quote_etag};
use crate::atomic_write::AtomicFile;
use crate::error::{Error, Result};
use crate::http::{self, Client};
use crate::ids::AgentRef;
use crate::progress;
use crate::retry::Attempt;

/// The most bytes a pull reads before giving up on a server that does not stop.
const PULL_READ_LIMIT: u64 = 64 << 30;

/// Downloads `agent`'s snapshot whole into `out` (whose directory exists); `local` is the hash
/// and size of what `out` holds, sent as `If-None-Match`.
pub(crate) fn pull_whole_file(
    client: &Client,
    agent: &AgentRef,
    out: &Path,
    options: &PullOptions,
    local: Option<(String, u64)>,
) -> Result<PullOutcome> {
    let download = Download {
        client,
        agent,
        out,
        options,
        local,
        what: format!("GET {}", agent.path("/db-snapshot")),
    };
    client.retrying(&download.what, options.deadline, || download.attempt())
}

/// The destination of a pull and what is already there.
struct Download<'a> {
    client: &'a Client,
    agent: &'a AgentRef,
    out: &'a Path,
    options: &'a PullOptions,
    /// The hash and size of `out` when its bytes alone are its database.
    local: Option<(String, u64)>,
    what: String,
}

impl Download<'_> {
    fn attempt(&self) -> Result<PullOutcome, Attempt> {
        let url = self.client.config().url(&self.agent.path("/db-snapshot"));
        let mut request = self
            .client
            .prepare(self.client.agent().get(url), self.options.deadline)?
            .header("Accept", "application/octet-stream");
        if let Some((sha, _)) = &self.local {
            request = request.header("If-None-Match", quote_etag(sha));
        }
        let response = request.call().map_err(|e| http::transport(&self.what, e))?;
        match response.status().as_u16() {
            404 => self.not_found(response),
            304 => self.not_modified(&response),
            _ => self.write(http::check_status(&self.what, response)?),
        }
    }

    /// Only stasis's `snapshot_not_found` means "no snapshot": any other 404 (a wrong
    /// STASIS_URL, a proxy) must not pass for a fresh agent.
    fn not_found(&self, response: Response<ureq::Body>) -> Result<PullOutcome, Attempt> {
        match http::api_error(&self.what, response) {
            Error::Api { code, .. } if code == NO_SNAPSHOT => Ok(PullOutcome::NoSnapshot),
            other => Err(Attempt::fail(other)),
        }
    }

    fn not_modified(&self, response: &Response<ureq::Body>) -> Result<PullOutcome, Attempt> {
        let Some((sha256, size)) = &self.local else {
            return Err(Attempt::fail(Error::Protocol {
                what: self.what.clone(),
                detail: "304 Not Modified to a request without If-None-Match".into(),
            }));
        };
        Ok(PullOutcome::Pulled(PulledSnapshot {
            version: header_u64(response, "x-stasis-snapshot-version"),
            sha256: sha256.clone(),
            size: *size,
            event_seq: header_u64(response, "x-stasis-event-seq"),
            unchanged: true,
            transfer: None,
        }))
    }

    /// Streams a 200's body into place, verified.
    fn write(&self, response: Response<ureq::Body>) -> Result<PullOutcome, Attempt> {
        let expected = announced_sha256(&response)
            .filter(|sha| is_sha256_hex(sha))
            .map(str::to_ascii_lowercase)
            .ok_or_else(|| {
                Attempt::fail(Error::Protocol {
                    what: self.what.clone(),
                    detail: "no valid X-Stasis-Sha256 (or ETag) to verify the bytes against".into(),
                })
            })?;
        let length = header_u64(&response, "content-length");
        let version = header_u64(&response, "x-stasis-snapshot-version");
        let event_seq = header_u64(&response, "x-stasis-event-seq");
        let mut file = AtomicFile::create(self.out).map_err(Attempt::fail)?;
        let label = format!("pull {}", self.agent);
        let bar = progress::bar(self.options.progress, length.unwrap_or(0), &label);
        let body = response.into_body();
        let mut reader = body.into_with_config().limit(PULL_READ_LIMIT).reader();
        let streamed = copy_hashing(&mut reader, &mut file, &bar, &self.what);
        bar.finish_and_clear();
        let (actual, size) = streamed?;
        if length.is_some_and(|len| len != size) {
            let cut = io::Error::new(io::ErrorKind::UnexpectedEof, "the body ended early");
            return Err(http::broken_stream(&self.what, cut));
        }
        if actual != expected {
            return Err(Attempt::fail(Error::Integrity {
                what: format!("the snapshot of {}", self.agent),
                expected,
                actual,
            }));
        }
        landing::land(file, &format!("the snapshot of {}", self.agent)).map_err(Attempt::fail)?;
        Ok(PullOutcome::Pulled(PulledSnapshot {
            version,
            sha256: actual,
            size,
            event_seq,
            unchanged: false,
            transfer: Some(PullTransfer {
                mode: TransferMode::WholeFile,
                chunks_total: 0,
                chunks_cached: 0,
                chunks_fetched: 0,
                bytes_fetched: size,
                cache_rejected: 0,
            }),
        }))
    }
}

/// Copies `reader` into `file`, hashing; a read failure is a broken stream (retried), a write
/// failure a local one (not retried).
fn copy_hashing(
    reader: &mut impl Read,
    file: &mut AtomicFile,
    bar: &indicatif::ProgressBar,
    what: &str,
) -> Result<(String, u64), Attempt> {
    let mut hasher = Sha256::new();
    let mut size = 0u64;
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(http::broken_stream(what, e)),
        };
        let chunk = buf.get(..n).unwrap_or_default();
        hasher.update(chunk);
        file.write_all(chunk).map_err(|e| {
            let context = format!("writing {}", file.temp_path().display());
            Attempt::fail(Error::io(context, e))
        })?;
        size += n as u64;
        bar.inc(n as u64);
    }
    Ok((hex::encode(hasher.finalize()), size))
}
