//! How a push and a pull proceed: the options [`push`](fn@super::push) (and every upload) and
//! [`pull`](fn@super::pull) take, shared by their chunked and whole-file ways.

use std::sync::Arc;
use std::time::Instant;

use super::cache::ChunkCache;
use super::chunks::ChunkedFile;
use crate::backup::BackupOptions;

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
    /// Send the whole file in one request even when the server knows the chunk routes.
    pub whole_file: bool,
    /// A local chunk cache the push fills with the copy's chunks (so that a pull of what was
    /// pushed fetches nothing).
    pub cache: Option<ChunkCache>,
    /// The chunks of this agent's snapshot as last pushed from here by chunks (the sidecar keeps
    /// them): the chunks that differ from them are uploaded without first asking the server
    /// which it lacks. A server that no longer holds some of the others (collected, or another
    /// pusher's snapshot replaced them) answers the commit `409 chunks_missing`; those are
    /// uploaded and the commit tried again.
    pub previous: Option<Arc<ChunkedFile>>,
}

/// How a pull proceeds.
#[derive(Debug, Clone, Default)]
pub struct PullOptions {
    /// Show a progress bar (on a terminal only).
    pub progress: bool,
    /// Give up (retries included) at this instant.
    pub deadline: Option<Instant>,
    /// Download the whole file in one request even when the server knows the chunk routes.
    pub whole_file: bool,
    /// A local chunk cache: chunks found there are not fetched, fetched ones are added.
    pub cache: Option<ChunkCache>,
}
