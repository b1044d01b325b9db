//! Pull: the snapshot assembled from its chunks (the local cache first, the rest fetched in
//! parallel), or streamed whole from a server without the chunk routes; verified, checked by
//! SQLite, then renamed into place.

use std::path::Path;

use super::cache::ChunkCache;
use super::chunked_pull::{Chunked, ChunkedPull};
use super::landing::local_version;
use super::manifest::Manifest;
use super::options::PullOptions;
use super::pull_outcome::PullOutcome;
use super::whole_file_pull::pull_whole_file;
use crate::error::{Error, Result};
use crate::http::Client;
use crate::ids::AgentRef;

/// Downloads `agent`'s snapshot to `out`, creating missing parent directories.
///
/// Against a server with the chunk routes, the manifest comes first; each distinct chunk is
/// taken from `options.cache` when it holds it (re-hashed on read) and fetched otherwise, in
/// parallel, each checked against its sha256; the chunks are written at their offsets into a
/// temporary file beside `out`, whose whole sha256 must then equal the manifest's. When the
/// chunks to fetch are many and most of the bytes (a pull with a cold cache), one whole-file
/// `GET` costs less than a request per chunk (the server checks each chunk as it sends it): the
/// bytes then stream in as against a server without the chunk routes (or with
/// `options.whole_file`): into the temporary file while hashed, checked against the announced
/// sha256, and afterwards put into the cache. Either way the file must pass `PRAGMA quick_check`, is fsynced and renamed over
/// `out`, and the directory fsynced; a failed or interrupted pull leaves `out` as it was and no
/// partial file. SQLite files left beside the old database (`-wal`, `-shm`, `-journal`) are
/// removed just before the rename: they belong to the old content and would corrupt the new
/// one. Do not pull over a database that a running process has open.
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
    let local = local_version(out)?;
    if !options.whole_file {
        let chunked = ChunkedPull {
            client,
            agent,
            out,
            options,
            local: local.as_ref(),
        };
        match chunked.run()? {
            Chunked::Done(outcome) => return Ok(outcome),
            Chunked::Unsupported => {}
            Chunked::WholeFile(manifest) => {
                let outcome = pull_whole_file(client, agent, out, options, local)?;
                fill_cache(options.cache.as_ref(), out, &manifest, &outcome);
                return Ok(outcome);
            }
        }
    }
    pull_whole_file(client, agent, out, options, local)
}

/// After a whole-file pull of the snapshot `manifest` describes, puts its chunks into the cache,
/// as a chunked pull would have (so a later pull of a near version fetches little).
fn fill_cache(cache: Option<&ChunkCache>, out: &Path, manifest: &Manifest, outcome: &PullOutcome) {
    let Some(cache) = cache else { return };
    // A newer snapshot may have landed between the manifest and the GET: other chunks then.
    if let PullOutcome::Pulled(pulled) = outcome
        && pulled.sha256.eq_ignore_ascii_case(&manifest.sha256)
    {
        cache.fill_from_file(out, manifest.chunk_size, &manifest.chunks);
    }
}
