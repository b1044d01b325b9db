//! Pull: the snapshot streamed into a temporary file, verified, then renamed into place.

use std::io::{self, Read, Write};
use std::path::Path;
use std::time::Instant;

use serde::Serialize;
use sha2::{Digest, Sha256};
use ureq::http::Response;

use super::{announced_sha256, hash_file, header_u64, is_sha256_hex, quote_etag};
use crate::atomic_write::AtomicFile;
use crate::error::{Error, Result};
use crate::http::{self, Client};
use crate::ids::AgentRef;
use crate::progress;
use crate::retry::Attempt;

/// The code of stasis's 404 for an agent without a snapshot.
const NO_SNAPSHOT: &str = "snapshot_not_found";
/// The most bytes a pull reads before giving up on a server that does not stop.
const PULL_READ_LIMIT: u64 = 1 << 30;
/// Files SQLite keeps beside a database; stale ones would corrupt a replaced database.
const SIDECARS: [&str; 3] = ["-wal", "-shm", "-journal"];

/// How a pull proceeds.
#[derive(Debug, Clone, Default)]
pub struct PullOptions {
    /// Show a progress bar (on a terminal only).
    pub progress: bool,
    /// Give up (retries included) at this instant.
    pub deadline: Option<Instant>,
}

/// A snapshot written by a pull.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PulledSnapshot {
    /// The snapshot's version, when the server said.
    pub version: Option<u64>,
    /// The hex sha256 of the bytes, verified.
    pub sha256: String,
    /// Bytes written.
    pub size: u64,
    /// The event watermark stored with it.
    pub event_seq: Option<u64>,
    /// True when the local file already held these bytes (304) and was left as it was.
    pub unchanged: bool,
}

/// What a pull found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PullOutcome {
    /// The snapshot is at the requested path.
    Pulled(PulledSnapshot),
    /// The server holds no snapshot for the agent; nothing was written.
    NoSnapshot,
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

/// Downloads `agent`'s snapshot to `out`, creating missing parent directories.
///
/// The bytes stream into a temporary file beside `out` while their sha256 is computed; only
/// when it equals the server's `X-Stasis-Sha256` is the file fsynced and renamed over `out`, so
/// a failed or interrupted pull leaves `out` as it was and no partial file. SQLite files left
/// beside the old database (`-wal`, `-shm`, `-journal`) are removed just before the rename:
/// they belong to the old content and would corrupt the new one. Do not pull over a database
/// that a running process has open.
///
/// A 404 `snapshot_not_found` (stasis's answer for an agent without a snapshot) is
/// [`PullOutcome::NoSnapshot`]; any other 404 (stasis's `not_found` for a path it does not
/// serve, a page from a proxy, a wrong URL) is an error.
///
/// When `out` already exists (with no pending WAL or journal), its hash is sent as
/// `If-None-Match`, and a 304 leaves it untouched. `503 snapshot_propagating` (and other
/// transient failures, a body cut short included) are retried within the client's policy.
pub fn pull(
    client: &Client,
    agent: &AgentRef,
    out: &Path,
    options: &PullOptions,
) -> Result<PullOutcome> {
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| Error::io(format!("creating {}", dir.display()), e))?;
    }
    let download = Download {
        client,
        agent,
        out,
        options,
        local: local_version(out)?,
        what: format!("GET {}", agent.path("/db-snapshot")),
    };
    client.retrying(&download.what, options.deadline, || download.attempt())
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
        file.commit_with(remove_sidecars).map_err(Attempt::fail)?;
        Ok(PullOutcome::Pulled(PulledSnapshot {
            version,
            sha256: actual,
            size,
            event_seq,
            unchanged: false,
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

/// The hash and size of `out` when it exists with no pending WAL or journal (then its bytes
/// alone are the database, and a 304 may keep it).
fn local_version(out: &Path) -> Result<Option<(String, u64)>> {
    if !out.is_file() {
        return Ok(None);
    }
    for suffix in ["-wal", "-journal"] {
        let mut side = out.as_os_str().to_owned();
        side.push(suffix);
        if std::fs::metadata(&side).is_ok_and(|m| m.len() > 0) {
            return Ok(None);
        }
    }
    hash_file(out).map(Some)
}

/// Removes `-wal`, `-shm` and `-journal` files beside `target`.
fn remove_sidecars(target: &Path) -> Result<()> {
    for suffix in SIDECARS {
        let mut side = target.as_os_str().to_owned();
        side.push(suffix);
        match std::fs::remove_file(&side) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => {
                let context = format!("removing {}", Path::new(&side).display());
                return Err(Error::io(context, e));
            }
        }
    }
    Ok(())
}
