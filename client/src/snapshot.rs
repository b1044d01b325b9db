//! A kilo.db snapshot: push (a consistent copy, hashed, streamed up) and pull (streamed down,
//! verified, written atomically).

use std::fs::File;
use std::io::{self, Read, Write};
use std::path::Path;
use std::time::Instant;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use ureq::SendBody;

use crate::atomic_write::AtomicFile;
use crate::backup::{self, BackupOptions};
use crate::error::{Error, Result};
use crate::http::{self, Client};
use crate::ids::AgentRef;
use crate::progress;
use crate::retry::Attempt;

/// The largest snapshot the server stores (25 MiB, Workers KV's value limit).
pub const SNAPSHOT_MAX_BYTES: u64 = 26_214_400;
/// The most bytes a pull reads before giving up on a server that does not stop.
const PULL_READ_LIMIT: u64 = 1 << 30;
/// Files SQLite keeps beside a database; stale ones would corrupt a replaced database.
const SIDECARS: [&str; 3] = ["-wal", "-shm", "-journal"];

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

/// Takes a consistent copy of the live database at `db` (see [`backup`]), hashes it, and
/// uploads it as `agent`'s snapshot.
///
/// Failed exchanges are retried. When an attempt's answer is lost after its body went out and
/// the retry is refused with 412 (the first attempt was stored and moved the ETag on), the
/// current snapshot is checked: if it is ours, that counts as success.
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

/// Uploads a file that is already a consistent database (nothing may write to it meanwhile)
/// as `agent`'s snapshot, announcing `sha256` and `size`.
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
    let path = agent.path("/db-snapshot");
    let what = format!("PUT {path}");
    let if_match = options.if_match.as_deref().map(quote_etag);
    let mut maybe_stored = false;
    client.retrying(&what, options.deadline, || {
        let body = File::open(file)
            .map_err(|e| Attempt::Fail(Error::io(format!("reading {}", file.display()), e)))?;
        let bar = progress::bar(options.progress, size, &format!("push {agent}"));
        let mut request = client
            .prepare(client.agent().put(client.config().url(&path)), options.deadline)
            .header("Content-Type", "application/octet-stream")
            .header("Content-Length", size.to_string())
            .header("X-Stasis-Sha256", sha256);
        if let Some(seq) = options.event_seq {
            request = request.header("X-Stasis-Event-Seq", seq.to_string());
        }
        if let Some(etag) = &if_match {
            request = request.header("If-Match", etag.as_str());
        }
        let sent = request.send(SendBody::from_owned_reader(progress::Counted::new(
            body,
            bar.clone(),
        )));
        bar.finish_and_clear();
        let response = sent.map_err(|e| {
            maybe_stored = true;
            http::transport(&what, e)
        })?;
        let status = response.status().as_u16();
        if status == 412 && maybe_stored {
            if let Some(receipt) = current_if_ours(client, agent, sha256, size, options.deadline) {
                return Ok(receipt);
            }
        }
        let response = http::check_status(&what, response).inspect_err(|attempt| {
            maybe_stored |= matches!(attempt, Attempt::Retry { .. });
        })?;
        let etag = http::header(&response, "etag").map(str::to_owned);
        let mut receipt: PushReceipt = http::read_json(&what, response)?;
        receipt.etag = etag;
        if !receipt.sha256.eq_ignore_ascii_case(sha256) {
            return Err(Attempt::Fail(Error::Integrity {
                what: format!("the server's receipt of {agent}'s snapshot"),
                expected: sha256.to_owned(),
                actual: receipt.sha256,
            }));
        }
        if receipt.size != size {
            return Err(Attempt::Fail(Error::Protocol {
                what: what.clone(),
                detail: format!("stored {} bytes, {size} were sent", receipt.size),
            }));
        }
        Ok(receipt)
    })
}

/// `HEAD .../db-snapshot`: a receipt when the current snapshot has hash `sha256`.
fn current_if_ours(
    client: &Client,
    agent: &AgentRef,
    sha256: &str,
    size: u64,
    deadline: Option<Instant>,
) -> Option<PushReceipt> {
    let url = client.config().url(&agent.path("/db-snapshot"));
    let response = client
        .prepare(client.agent().head(url), deadline)
        .call()
        .ok()?;
    if response.status().as_u16() != 200 {
        return None;
    }
    let current = announced_sha256(&response)?;
    if !current.eq_ignore_ascii_case(sha256) {
        return None;
    }
    Some(PushReceipt {
        version: http::header(&response, "x-stasis-snapshot-version")?
            .parse()
            .ok()?,
        sha256: sha256.to_owned(),
        size,
        storage: None,
        event_watermark: http::header(&response, "x-stasis-event-seq").and_then(|v| v.parse().ok()),
        etag: http::header(&response, "etag").map(str::to_owned),
    })
}

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

/// Downloads `agent`'s snapshot to `out`, creating missing parent directories.
///
/// The bytes stream into a temporary file beside `out` while their sha256 is computed; only
/// when it equals the server's `X-Stasis-Sha256` is the file fsynced and renamed over `out`, so
/// a failed or interrupted pull leaves `out` as it was and no partial file. SQLite files left
/// beside the old database (`-wal`, `-shm`, `-journal`) are removed just before the rename:
/// they belong to the old content and would corrupt the new one. Do not pull over a database
/// that a running process has open.
///
/// When `out` already exists (with no pending WAL or journal), its hash is sent as
/// `If-None-Match`, and a 304 leaves it untouched. `503 snapshot_propagating` (and other
/// transient failures) are retried within the client's policy.
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
    let local = local_version(out)?;
    let path = agent.path("/db-snapshot");
    let what = format!("GET {path}");
    client.retrying(&what, options.deadline, || {
        let mut request = client
            .prepare(client.agent().get(client.config().url(&path)), options.deadline)
            .header("Accept", "application/octet-stream");
        if let Some((sha, _)) = &local {
            request = request.header("If-None-Match", quote_etag(sha));
        }
        let response = request.call().map_err(|e| http::transport(&what, e))?;
        let version = http::header(&response, "x-stasis-snapshot-version").and_then(|v| v.parse().ok());
        let event_seq = http::header(&response, "x-stasis-event-seq").and_then(|v| v.parse().ok());
        match response.status().as_u16() {
            404 => return Ok(PullOutcome::NoSnapshot),
            304 => {
                if let Some((sha256, size)) = &local {
                    return Ok(PullOutcome::Pulled(PulledSnapshot {
                        version,
                        sha256: sha256.clone(),
                        size: *size,
                        event_seq,
                        unchanged: true,
                    }));
                }
                return Err(Attempt::Fail(Error::Protocol {
                    what: what.clone(),
                    detail: "304 Not Modified to a request without If-None-Match".into(),
                }));
            }
            _ => {}
        }
        let response = http::check_status(&what, response)?;
        let expected = announced_sha256(&response)
            .filter(|sha| is_sha256_hex(sha))
            .ok_or_else(|| {
                Attempt::Fail(Error::Protocol {
                    what: what.clone(),
                    detail: "no valid X-Stasis-Sha256 (or ETag) to verify the bytes against".into(),
                })
            })?
            .to_ascii_lowercase();
        let length: Option<u64> = http::header(&response, "content-length").and_then(|v| v.parse().ok());
        let mut file = AtomicFile::create(out).map_err(Attempt::Fail)?;
        let bar = progress::bar(options.progress, length.unwrap_or(0), &format!("pull {agent}"));
        let mut reader = response
            .into_body()
            .into_with_config()
            .limit(PULL_READ_LIMIT)
            .reader();
        let streamed = stream(&mut reader, &mut file, &bar, &what);
        bar.finish_and_clear();
        let (actual, size) = streamed?;
        if length.is_some_and(|len| len != size) {
            return Err(http::broken_stream(
                &what,
                io::Error::new(io::ErrorKind::UnexpectedEof, "the body ended early"),
            ));
        }
        if actual != expected {
            return Err(Attempt::Fail(Error::Integrity {
                what: format!("the snapshot of {agent}"),
                expected,
                actual,
            }));
        }
        file.commit_with(remove_sidecars).map_err(Attempt::Fail)?;
        Ok(PullOutcome::Pulled(PulledSnapshot {
            version,
            sha256: actual,
            size,
            event_seq,
            unchanged: false,
        }))
    })
}

/// Copies `reader` into `file`, hashing; a read failure is a broken stream (retried), a write
/// failure a local one (not retried).
fn stream(
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
            Attempt::Fail(Error::io(format!("writing {}", file.temp_path().display()), e))
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
                return Err(Error::io(
                    format!("removing {}", Path::new(&side).display()),
                    e,
                ));
            }
        }
    }
    Ok(())
}

/// The hex sha256 and size of a file, read in chunks.
pub fn hash_file(path: &Path) -> Result<(String, u64)> {
    let context = || format!("hashing {}", path.display());
    let mut file = File::open(path).map_err(|e| Error::io(context(), e))?;
    let mut hasher = Sha256::new();
    let size = io::copy(&mut file, &mut hasher).map_err(|e| Error::io(context(), e))?;
    Ok((hex::encode(hasher.finalize()), size))
}

/// The hash a response announces: `X-Stasis-Sha256`, else the `ETag` without its quotes.
fn announced_sha256(response: &ureq::http::Response<ureq::Body>) -> Option<&str> {
    http::header(response, "x-stasis-sha256").or_else(|| {
        http::header(response, "etag").map(|etag| {
            etag.trim_start_matches("W/")
                .trim_matches('"')
        })
    })
}

fn is_sha256_hex(text: &str) -> bool {
    text.len() == 64 && text.bytes().all(|b| b.is_ascii_hexdigit())
}

/// `"<etag>"`, whether or not `etag` came with its quotes.
fn quote_etag(etag: &str) -> String {
    let bare = etag.trim().trim_matches('"');
    format!("\"{bare}\"")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn etags_are_quoted_once() {
        assert_eq!(quote_etag("abc"), "\"abc\"");
        assert_eq!(quote_etag("\"abc\""), "\"abc\"");
    }

    #[test]
    fn only_64_hex_digits_are_a_sha256() {
        assert!(is_sha256_hex(&"a".repeat(64)));
        assert!(!is_sha256_hex(&"a".repeat(63)));
        assert!(!is_sha256_hex(&"g".repeat(64)));
    }
}
