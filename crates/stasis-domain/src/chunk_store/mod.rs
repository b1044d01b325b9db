//! The agent's chunk store: immutable chunks in KV, each named by its
//! sha256, and the versions that name them, whoever owns those versions
//! (the agent's kilo.db snapshot today; its workspace, and the history and
//! forks that name a source's chunks, next).
//!
//! # How it works
//!
//! - **Chunks** are KV keys `<town>/<rig>/<agent>/chunks/<sha256>`
//!   ([`keys`]), written once and never overwritten. The agent object has a
//!   row per chunk ([`table`], the `snapshot_chunks` table): its size, its
//!   state, how many versions name it (`refs`), and until when it is kept
//!   though none does (`pending_until`). Which chunks exist is answered from
//!   these rows, never from KV.
//! - **Uploads** are verified (the bytes must hash to the name), then go
//!   *claim → write the key → record* ([`saga::put_chunk`]): the claim makes
//!   the row `uploading` before the key is visible, the record makes it
//!   `stored` after. An uploaded or asked-for chunk that no version names
//!   is kept for the pending time ([`PENDING_CHUNK_TTL_MS`]): its push is
//!   about to commit a manifest naming it.
//! - **Manifests**: each version of an [`manifests::Owner`] names its
//!   chunks in the owner's manifest table, one reference each. A commit
//!   first checks that the store holds every chunk named, with the size its
//!   position needs, counting them as it goes ([`manifests::reference_held`]:
//!   else 409 `chunks_missing` and nothing changes), then, in the same
//!   transaction, adds the manifest
//!   under a new version, switches the owner's current version to it (the
//!   owner's `If-Match` is checked there again, since other calls ran while
//!   KV was written), and drops the superseded manifest.
//! - **Grace**: a superseded or deleted version's chunks that no other
//!   version names stay readable for a grace time
//!   ([`DEFAULT_CHUNK_GRACE_MS`]), so that a reader of that version is not
//!   cut; then they may be collected.
//! - **Collection** ([`saga::collect`]) takes up to [`COLLECT_BATCH`]
//!   `stored` chunks with no reference past their pending time (and
//!   uploads abandoned past theirs), marks them `deleting` with its claim
//!   time, deletes their keys, then drops the rows still so marked.
//! - **Claims** ([`claims`]) keep an upload and a collection off each
//!   other's chunk: an upload meeting a `deleting` row waits; a claim older
//!   than the runtime's lease ([`DEFAULT_CLAIM_LEASE_MS`]; on the host, its
//!   start) belongs to a collection that died and is taken over.
//! - **Sweep** ([`saga::sweep_listing`]): a listing of the agent's folder
//!   deletes chunk keys no row claims (a crash between a write and its
//!   record in an older version, a deletion that failed) and owners' other
//!   keys nothing names.
//!
//! A crash therefore leaves at worst garbage a later collection or sweep
//! removes, never a version naming a missing chunk. Every step on the
//! object is a [`calls::ChunkCall`], atomic on its own; the [`saga`] runs
//! them over two ports ([`ports::ChunkObject`], [`ports::BlobStore`]) in
//! the runtime's own process.
//!
//! # Owners
//!
//! An owner brings its version tables ([`manifests::Owner`]) and its own
//! notion of "current" (kilo.db: the `snapshot_meta` row, with its
//! `If-Match` on the whole file's sha256), and uses the rest as is: the
//! chunk calls, claims, collection and sweep are one per agent, whoever
//! names the chunks. A workspace owner, for one, would:
//!
//! 1. declare `Owner { manifests: "workspace_manifests", counter:
//!    "workspace_counter", marks: &[] }` and migrate it beside the chunk
//!    table;
//! 2. upload its chunks (content-defined, of any size) with
//!    [`saga::missing`] and [`saga::put_chunk`] under the same names and
//!    keys, so a chunk kilo.db and the workspace share is stored once;
//! 3. commit in one object call: [`manifests::reference_held`] (with `None`
//!    as every expected length), `next_version`, `insert_manifest` of every
//!    chunk its tree names (its tree manifest's own chunks included), its
//!    current-version switch with its own `If-Match`, and `drop_manifest`
//!    of the superseded version with [`manifests::readable_until`]; a tree
//!    naming more chunks than one row holds keeps its reference lists in a
//!    table of its own and counts them with [`table::reference`] and
//!    [`table::release`];
//! 4. leave collection to the agent's one [`saga::collect`], and add its
//!    keys beside its chunks, if any, to the sweep's `in_use`.
//!
//! Its object port extends [`ports::ChunkObject`], as kilo.db's does. A
//! wipe of the whole agent drops every owner's manifests before
//! [`table::release_all`].

pub mod batch;
pub mod calls;
pub mod claims;
pub mod digest;
pub mod frames;
pub mod holds;
pub mod keys;
pub mod lineage;
pub mod manifests;
pub mod operations;
pub mod origins;
pub mod ports;
pub mod saga;
pub mod table;

pub use calls::{ChunkCall, ChunkReply, execute};
pub use digest::{ChunkHash, RunningHash, from_hex, is_sha256_hex, sha256_hex, to_hex};
pub use keys::{CHUNKS_FOLDER, KV_BUCKET, chunk_key, key_prefix};
pub use manifests::Owner;

use crate::sql::{SqlStore, StorageError};

/// An uploaded chunk no manifest names is kept this long (an upload in
/// progress), then collected.
pub const PENDING_CHUNK_TTL_MS: i64 = 60 * 60 * 1000;
/// The most chunks one collection step deletes (Workers KV allows 1,000
/// operations per invocation).
pub const COLLECT_BATCH: u64 = 200;
/// How long a collection's claim on its chunks lasts unless the runtime
/// knows better: a claim older than this belongs to a collection that died
/// (on the edge, an invocation cut short), and the next collection or
/// upload takes it over. A collection step deletes at most
/// [`COLLECT_BATCH`] keys, which takes well under a second.
pub const DEFAULT_CLAIM_LEASE_MS: i64 = 30_000;
/// How long a superseded (or deleted) version's chunks stay readable
/// unless configured otherwise, so that a reader of that version is never
/// cut: then they are collected.
pub const DEFAULT_CHUNK_GRACE_MS: i64 = 5 * 60 * 1000;

/// Creates the chunk table if it is missing (each owner migrates its own).
pub fn migrate(store: &impl SqlStore) -> Result<(), StorageError> {
    let statements = table::STATEMENTS
        .iter()
        .chain(origins::STATEMENTS)
        .chain(holds::STATEMENTS);
    for statement in statements {
        store.run(statement, Vec::new())?;
    }
    Ok(())
}
