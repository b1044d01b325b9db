//! The chunked pull: `GET .../db-snapshot/manifest`, then each distinct chunk from the local
//! cache or `GET .../db-snapshot/chunks/{sha256}` (in parallel, each re-hashed), written at its
//! offsets into a temporary file; the whole file's sha256, taken in file order as the chunks
//! land, is checked before it is landed.
//!
//! When most of the file must come over the wire in many chunks, the pull takes the whole file
//! in one `GET` instead (see [`fetch_whole`]).
//!
//! A chunk the server no longer holds (a newer push superseded the manifest and its chunks were
//! collected between the manifest's read and the chunk's) starts the pull over from a fresh
//! manifest, a bounded number of times.

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::Path;

use ureq::http::Response;

use super::cache::{CacheRead, ChunkCache};
use super::chunks::sha256_hex;
use super::manifest::{Manifest, Placement};
use super::options::PullOptions;
use super::ordered_hash::OrderedHash;
use super::parallel::{self, TRANSFERS_IN_FLIGHT};
use super::pull_outcome::{NO_SNAPSHOT, PullOutcome, PulledSnapshot};
use super::transfer::{Counters, PullTransfer, TransferMode};
use super::{hash_file, header_u64, landing, quote_etag};
use crate::atomic_write::AtomicFile;
use crate::error::{Error, Result};
use crate::http::{self, Client};
use crate::ids::AgentRef;
use crate::progress;
use crate::retry::Attempt;

/// Manifests read before giving up on chunks that keep vanishing under the pull.
const MANIFEST_ROUNDS: usize = 3;
/// Bytes of chunks that wait for an earlier one before the whole file's hash takes them, at
/// most; past it the file is read back and hashed after the fetches.
const MAX_HELD_FOR_HASH: u64 = 64 * 1024 * 1024;
/// The code of a chunk the agent does not hold.
const CHUNK_NOT_FOUND: &str = "chunk_not_found";
/// Chunks to fetch from which one whole-file `GET` is cheaper than a request per chunk (when
/// they are also most of the bytes): at 32 KiB a chunk's request costs the server and the
/// client more than its bytes do (a cold 25 MB pull: 767 `GET`s 120 ms, one `GET` 75 ms).
const WHOLE_FILE_FROM_CHUNKS: usize = 64;

/// What the chunked pull came to.
pub(crate) enum Chunked {
    /// Finished (the snapshot written, unchanged, or absent).
    Done(PullOutcome),
    /// The server does not serve the manifest route: pull the whole file instead.
    Unsupported,
    /// Most of this manifest's bytes must be fetched, in many chunks: one whole-file `GET` is
    /// cheaper (the chunks the file holds may then fill the cache).
    WholeFile(Box<Manifest>),
}

/// The answer to `GET .../db-snapshot/manifest`.
enum ManifestAnswer {
    Current(Box<Manifest>),
    NotModified(Box<Response<ureq::Body>>),
    NoSnapshot,
    Unsupported,
}

/// One chunked pull into `out` (whose directory exists).
pub(crate) struct ChunkedPull<'a> {
    pub client: &'a Client,
    pub agent: &'a AgentRef,
    pub out: &'a Path,
    pub options: &'a PullOptions,
    /// The hash and size of what `out` holds.
    pub local: Option<&'a (String, u64)>,
}

impl ChunkedPull<'_> {
    pub fn run(&self) -> Result<Chunked> {
        let mut round = 0;
        loop {
            round += 1;
            let manifest = match self.manifest()? {
                ManifestAnswer::Current(manifest) => manifest,
                ManifestAnswer::NotModified(response) => return self.unchanged(&response),
                ManifestAnswer::NoSnapshot => return Ok(Chunked::Done(PullOutcome::NoSnapshot)),
                ManifestAnswer::Unsupported => return Ok(Chunked::Unsupported),
            };
            if fetch_whole(&manifest, self.options.cache.as_ref()) {
                return Ok(Chunked::WholeFile(manifest));
            }
            match self.assemble(&manifest) {
                Err(e) if e.code() == Some(CHUNK_NOT_FOUND) && round < MANIFEST_ROUNDS => {}
                other => return other.map(|p| Chunked::Done(PullOutcome::Pulled(p))),
            }
        }
    }

    fn manifest_what(&self) -> String {
        format!("GET {}", self.agent.path("/db-snapshot/manifest"))
    }

    fn manifest(&self) -> Result<ManifestAnswer> {
        let what = self.manifest_what();
        let manifest = self.client.retrying(&what, self.options.deadline, || {
            let url = self
                .client
                .config()
                .url(&self.agent.path("/db-snapshot/manifest"));
            let mut request = self
                .client
                .prepare(self.client.agent().get(url), self.options.deadline)?;
            if let Some((sha, _)) = self.local {
                request = request.header("If-None-Match", quote_etag(sha));
            }
            let response = request.call().map_err(|e| http::transport(&what, e))?;
            match response.status().as_u16() {
                304 => Ok(ManifestAnswer::NotModified(Box::new(response))),
                404 => match http::api_error(&what, response) {
                    Error::Api { code, .. } if code == NO_SNAPSHOT => {
                        Ok(ManifestAnswer::NoSnapshot)
                    }
                    Error::Api { code, .. } if code == "not_found" => {
                        Ok(ManifestAnswer::Unsupported)
                    }
                    other => Err(Attempt::fail(other)),
                },
                405 => Ok(ManifestAnswer::Unsupported),
                _ => {
                    let response = http::check_status(&what, response)?;
                    http::read_json(&what, response).map(|m| ManifestAnswer::Current(Box::new(m)))
                }
            }
        })?;
        if let ManifestAnswer::Current(manifest) = &manifest
            && let Some(problem) = manifest.problem()
        {
            return Err(Error::Protocol {
                what,
                detail: problem,
            });
        }
        Ok(manifest)
    }

    fn unchanged(&self, response: &Response<ureq::Body>) -> Result<Chunked> {
        let Some((sha256, size)) = self.local else {
            return Err(Error::Protocol {
                what: self.manifest_what(),
                detail: "304 Not Modified to a request without If-None-Match".into(),
            });
        };
        Ok(Chunked::Done(PullOutcome::Pulled(PulledSnapshot {
            version: header_u64(response, "x-stasis-snapshot-version"),
            sha256: sha256.clone(),
            size: *size,
            event_seq: header_u64(response, "x-stasis-event-seq"),
            unchanged: true,
            transfer: None,
        })))
    }

    /// Writes every chunk of `manifest` into a temporary file, checks the whole, lands it.
    fn assemble(&self, manifest: &Manifest) -> Result<PulledSnapshot> {
        let placements = manifest.placements().ok_or_else(|| Error::Protocol {
            what: self.manifest_what(),
            detail: "one chunk hash at positions of different lengths".into(),
        })?;
        let mut file = AtomicFile::create(self.out)?;
        let temp_context = |e| Error::io(format!("writing {}", self.out.display()), e);
        file.file().set_len(manifest.size).map_err(temp_context)?;
        let counters = Counters::default();
        let bar = progress::bar(
            self.options.progress,
            manifest.size,
            &format!("pull {}", self.agent),
        );
        let target: &File = file.file();
        let whole = OrderedHash::start(&placements, MAX_HELD_FOR_HASH);
        let indexed: Vec<(usize, &Placement)> = placements.iter().enumerate().collect();
        let written: Result<()> =
            parallel::for_each(&indexed, TRANSFERS_IN_FLIGHT, |&(index, placement)| {
                let bytes = self.chunk(placement, &counters)?;
                for &offset in &placement.offsets {
                    target.write_all_at(&bytes, offset).map_err(temp_context)?;
                    bar.inc(placement.len);
                }
                whole.add(index, bytes);
                Ok(())
            });
        bar.finish_and_clear();
        written?;
        let (actual, size) = match whole.finish() {
            Some(hashed) => hashed,
            None => hash_file(file.temp_path())?,
        };
        if actual != manifest.sha256.to_ascii_lowercase() || size != manifest.size {
            return Err(Error::Integrity {
                what: format!("the snapshot of {} assembled from its chunks", self.agent),
                expected: manifest.sha256.clone(),
                actual,
            });
        }
        landing::land(file, &format!("the snapshot of {}", self.agent))?;
        if let Some(cache) = &self.options.cache {
            // Over its bound, the cache is trimmed again by the next push or pull.
            let _ = cache.trim();
        }
        Ok(PulledSnapshot {
            version: Some(manifest.version),
            sha256: actual,
            size,
            event_seq: manifest.event_watermark,
            unchanged: false,
            transfer: Some(PullTransfer {
                mode: TransferMode::Chunks,
                chunks_total: manifest.chunks.len() as u64,
                chunks_cached: Counters::get(&counters.cached),
                chunks_fetched: Counters::get(&counters.chunks),
                bytes_fetched: Counters::get(&counters.bytes),
                cache_rejected: Counters::get(&counters.rejected),
            }),
        })
    }

    /// The bytes of one chunk: from the cache when it holds them, else fetched (and cached).
    fn chunk(&self, placement: &Placement, counters: &Counters) -> Result<Vec<u8>> {
        let cache = self.options.cache.as_ref();
        match cache.map(|c| c.get(&placement.sha256)) {
            Some(CacheRead::Hit(bytes)) if bytes.len() as u64 == placement.len => {
                Counters::add(&counters.cached, 1);
                return Ok(bytes);
            }
            Some(CacheRead::Rejected) => Counters::add(&counters.rejected, 1),
            _ => {}
        }
        let bytes = self.fetch(placement)?;
        Counters::add(&counters.chunks, 1);
        Counters::add(&counters.bytes, bytes.len() as u64);
        if let Some(cache) = cache {
            cache.put(&placement.sha256, &bytes);
        }
        Ok(bytes)
    }

    /// `GET .../db-snapshot/chunks/{sha256}`, retried; the bytes must hash to the name and have
    /// the length of the chunk's place.
    fn fetch(&self, placement: &Placement) -> Result<Vec<u8>> {
        let path = self
            .agent
            .path(&format!("/db-snapshot/chunks/{}", placement.sha256));
        let what = format!("GET {path}");
        self.client.retrying(&what, self.options.deadline, || {
            let url = self.client.config().url(&path);
            let request = self
                .client
                .prepare(self.client.agent().get(url), self.options.deadline)?;
            let response = request.call().map_err(|e| http::transport(&what, e))?;
            let response = http::check_status(&what, response)?;
            let mut bytes = Vec::new();
            response
                .into_body()
                .into_with_config()
                .limit(placement.len + 1)
                .reader()
                .read_to_end(&mut bytes)
                .map_err(|e| http::broken_stream(&what, e))?;
            let actual = sha256_hex(&bytes);
            if actual != placement.sha256 || bytes.len() as u64 != placement.len {
                // A body cut short or garbled on the way: worth another try.
                let error = Error::Integrity {
                    what: format!("chunk {} ({} bytes)", placement.sha256, bytes.len()),
                    expected: placement.sha256.clone(),
                    actual,
                };
                return Err(Attempt::retry(error, None));
            }
            Ok(bytes)
        })
    }
}

/// Whether `manifest` is better pulled whole: at least [`WHOLE_FILE_FROM_CHUNKS`] distinct chunks
/// the cache lacks, holding more than half of the file's bytes.
pub(crate) fn fetch_whole(manifest: &Manifest, cache: Option<&ChunkCache>) -> bool {
    let Some(placements) = manifest.placements() else {
        // Malformed: the chunked path reports it.
        return false;
    };
    let (mut chunks, mut bytes) = (0usize, 0u64);
    for placement in placements
        .iter()
        .filter(|p| cache.is_none_or(|c| !c.contains(&p.sha256)))
    {
        chunks += 1;
        bytes += placement.len;
    }
    chunks >= WHOLE_FILE_FROM_CHUNKS && bytes > manifest.size / 2
}

#[cfg(test)]
mod tests {
    #![allow(clippy::expect_used, reason = "tests fail loudly")]

    use super::*;
    use crate::snapshot::chunks::sha256_hex;

    /// A manifest of `count` distinct 32 KiB chunks.
    fn manifest(count: u64) -> Manifest {
        let chunk_size = 32 * 1024;
        Manifest {
            version: 1,
            sha256: sha256_hex(b"whole"),
            size: count * chunk_size,
            chunk_size,
            chunks: (0..count).map(|i| sha256_hex(&i.to_le_bytes())).collect(),
            event_watermark: None,
        }
    }

    #[test]
    fn many_chunks_holding_most_bytes_go_whole_and_few_or_cached_ones_do_not() {
        let many = manifest(100);
        assert!(fetch_whole(&many, None), "100 cold chunks");
        assert!(!fetch_whole(&manifest(63), None), "63 chunks: per chunk");

        let dir = tempfile::tempdir().expect("dir");
        let cache = ChunkCache::new(dir.path(), 1 << 30);
        assert!(fetch_whole(&many, Some(&cache)), "an empty cache");
        for sha in many.chunks.iter().take(50) {
            cache.put(sha, b"any bytes: only their presence is counted");
        }
        assert!(
            !fetch_whole(&many, Some(&cache)),
            "half of the bytes cached"
        );
    }
}
