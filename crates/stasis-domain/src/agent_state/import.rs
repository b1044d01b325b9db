//! Import: a manifest replaces everything the agent has, never merges.
//!
//! A manifest is imported in stages ([`super::staging`]): its parts are
//! checked and staged as they arrive, and one commit swaps them in. This
//! module holds the rules each part must meet (any breach refuses the
//! manifest with `invalid_manifest` naming the field's path) and
//! [`import_manifest`], the whole manifest in one call through the same
//! stages.

#![cfg_attr(
    feature = "schema",
    allow(
        clippy::disallowed_macros,
        clippy::disallowed_methods,
        reason = "the JsonSchema derive builds its schemas with json! and to_value over our own types, never stored data"
    )
)]

use super::checks::{self, manifest_error};
use super::manifest::{
    Manifest, ManifestAgent, ManifestEvent, ManifestMemory, ManifestSession, ManifestSnapshot,
};
use super::staging::{self, ImportBatch};
use super::{MANIFEST_FORMAT, MAX_DOCUMENT_BYTES, MAX_ROLE_BYTES, SESSION_STATUSES};
use crate::{
    DomainError, limits,
    object_env::ObjectEnv,
    snapshot::{self, SnapshotCall, SnapshotReply, StagedSnapshot},
    sql::SqlStore,
};
use serde::{Deserialize, Serialize};

/// What an import wrote.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImportSummary {
    /// Events stored.
    pub events: u64,
    /// Sessions stored (the manifest's, plus those only its events name).
    pub sessions: u64,
    /// Memory entries stored.
    pub memory: u64,
    /// A checkpoint was stored.
    pub checkpoint: bool,
    /// A snapshot was stored.
    pub snapshot: bool,
}

/// `format`, when given, must be the one this crate writes.
pub fn check_format(format: &str) -> Result<(), DomainError> {
    if format == MANIFEST_FORMAT {
        return Ok(());
    }
    Err(manifest_error(
        "format",
        &format!("must be {MANIFEST_FORMAT:?} when given"),
    ))
}

/// The snapshot's header: a SHA-256 in lowercase hex and a storable
/// watermark. Its bytes are checked as they are decoded (length) and
/// stored (hash, and size against the runtime's snapshot limit).
pub fn check_snapshot_header(sha256: &str, event_watermark: u64) -> Result<(), DomainError> {
    let is_hex = |b: u8| b.is_ascii_digit() || (b'a'..=b'f').contains(&b);
    if sha256.len() != 64 || !sha256.bytes().all(is_hex) {
        return Err(manifest_error(
            "snapshot.sha256",
            "must be 64 lowercase hex digits",
        ));
    }
    checks::storable(event_watermark).map_err(|b| b.for_manifest("snapshot.event_watermark"))
}

/// The agent's record.
pub(super) fn check_agent(agent: &ManifestAgent) -> Result<(), DomainError> {
    checks::role(&agent.role, MAX_ROLE_BYTES).map_err(|b| b.for_manifest("agent.role"))?;
    checks::json_text(&agent.metadata, MAX_DOCUMENT_BYTES)
        .map_err(|b| b.for_manifest("agent.metadata"))
}

/// The checkpoint document.
pub(super) fn check_checkpoint(document: &str) -> Result<(), DomainError> {
    checks::json_text(document, MAX_DOCUMENT_BYTES).map_err(|b| b.for_manifest("checkpoint"))
}

/// Session `index` of the manifest (uniqueness is the stage's to check).
pub(super) fn check_session(session: &ManifestSession, index: u64) -> Result<(), DomainError> {
    let path = |field: &str| format!("sessions[{index}].{field}");
    checks::id(&session.session_id).map_err(|b| b.for_manifest(&path("session_id")))?;
    checks::one_of(&session.status, &SESSION_STATUSES)
        .map_err(|b| b.for_manifest(&path("status")))?;
    checks::json_text(&session.metadata, MAX_DOCUMENT_BYTES)
        .map_err(|b| b.for_manifest(&path("metadata")))?;
    checks::storable(session.last_seq).map_err(|b| b.for_manifest(&path("last_seq")))?;
    if session.first_seq > session.last_seq {
        return Err(manifest_error(
            &path("first_seq"),
            "must not be above last_seq",
        ));
    }
    Ok(())
}

/// Event `index` of the manifest, which follows an event with seq
/// `previous` (0 for the first): the rules an append applies to one event
/// (type, session, size), the data's JSON, and a seq above `previous`.
pub(super) fn check_event(
    event: &ManifestEvent,
    index: u64,
    previous: u64,
) -> Result<(), DomainError> {
    let path = |field: &str| format!("events[{index}].{field}");
    if event.seq <= previous {
        let why = if index == 0 {
            "must be at least 1".to_owned()
        } else {
            format!("must be above the previous event's seq {previous}")
        };
        return Err(manifest_error(&path("seq"), &why));
    }
    checks::storable(event.seq).map_err(|b| b.for_manifest(&path("seq")))?;
    if event.event_type.is_empty() || event.event_type.len() > limits::MAX_EVENT_TYPE_BYTES {
        return Err(manifest_error(
            &path("type"),
            &format!("must be 1 to {} bytes", limits::MAX_EVENT_TYPE_BYTES),
        ));
    }
    if let Some(session) = &event.session_id {
        checks::id(session).map_err(|b| b.for_manifest(&path("session_id")))?;
    }
    let size = checks::byte_len(&event.data)
        + checks::byte_len(&event.event_type)
        + event.session_id.as_deref().map_or(0, checks::byte_len);
    if size > limits::MAX_EVENT_BYTES {
        return Err(manifest_error(
            &path("data"),
            &format!(
                "the event is {size} bytes; an event holds at most {}",
                limits::MAX_EVENT_BYTES
            ),
        ));
    }
    checks::json_text(&event.data, limits::MAX_EVENT_BYTES)
        .map_err(|b| b.for_manifest(&path("data")))
}

/// Memory entry `index` of the manifest (uniqueness is the stage's).
pub(super) fn check_memory(entry: &ManifestMemory, index: u64) -> Result<(), DomainError> {
    let path = |field: &str| format!("memory[{index}].{field}");
    checks::id(&entry.key).map_err(|b| b.for_manifest(&path("key")))?;
    checks::json_text(&entry.value, MAX_DOCUMENT_BYTES).map_err(|b| b.for_manifest(&path("value")))
}

/// Replaces the agent's state with a whole `manifest` in one call, through
/// the same stages an HTTP import goes through. Its snapshot (if any) is
/// kept inline in the agent's SQL: the runtimes stage snapshots through the
/// snapshot rules instead (KV above the inline limit), so this form serves
/// tests and tools with small snapshots.
pub fn import_manifest(
    store: &impl SqlStore,
    manifest: &Manifest,
    env: &ObjectEnv,
) -> Result<ImportSummary, DomainError> {
    if let Some(format) = &manifest.format {
        check_format(format)?;
    }
    let snapshot = manifest
        .snapshot
        .as_ref()
        .map(|s| stage_inline(store, s, env))
        .transpose()?;
    let ticket = staging::begin(store, None)?;
    let batches = [
        ImportBatch::Agent(manifest.agent.clone()),
        ImportBatch::Sessions(manifest.sessions.clone()),
        ImportBatch::Events(manifest.events.clone()),
        ImportBatch::Checkpoint(manifest.checkpoint.clone()),
        ImportBatch::Memory(manifest.memory.clone()),
        ImportBatch::Snapshot(snapshot),
    ];
    for batch in &batches {
        staging::stage(store, ticket, batch, env)?;
    }
    staging::commit(store, ticket, env)
}

/// The manifest's snapshot, decoded, checked and reserved as an inline one.
fn stage_inline(
    store: &impl SqlStore,
    snapshot: &ManifestSnapshot,
    env: &ObjectEnv,
) -> Result<StagedSnapshot, DomainError> {
    check_snapshot_header(&snapshot.sha256, snapshot.event_watermark)?;
    let bytes = decode_base64(&snapshot.data_base64)?;
    if u64::try_from(bytes.len()).ok() != Some(snapshot.size) {
        return Err(manifest_error(
            "snapshot.data_base64",
            &format!(
                "decodes to {} bytes, not the {} of size",
                bytes.len(),
                snapshot.size
            ),
        ));
    }
    if crate::chunk_store::sha256_hex(&bytes) != snapshot.sha256 {
        return Err(manifest_error(
            "snapshot.sha256",
            "does not match the bytes of snapshot.data_base64",
        ));
    }
    if snapshot.size > snapshot::MAX_INLINE_LIMIT {
        return Err(manifest_error(
            "snapshot.size",
            &format!(
                "a whole-manifest import keeps its snapshot inline, at most {} bytes; import \
                 larger ones over HTTP",
                snapshot::MAX_INLINE_LIMIT
            ),
        ));
    }
    let reserve = SnapshotCall::Reserve {
        size: snapshot.size,
        precondition: None,
        inline_limit: snapshot::MAX_INLINE_LIMIT,
        key_prefix: String::new(),
        limit: snapshot::DEFAULT_SNAPSHOT_LIMIT,
    };
    let SnapshotReply::Reserved(reserved) = snapshot::execute(store, &reserve, env)? else {
        return Err(DomainError::Storage(
            "a reservation answered otherwise".into(),
        ));
    };
    Ok(StagedSnapshot {
        version: reserved.version,
        sha256: snapshot.sha256.clone(),
        size: snapshot.size,
        event_watermark: snapshot.event_watermark,
        kv_key: None,
        inline: Some(bytes),
        chunk_size: None,
    })
}

/// Standard padded base64, or `invalid_manifest`.
fn decode_base64(text: &str) -> Result<Vec<u8>, DomainError> {
    use base64::{Engine as _, engine::general_purpose::STANDARD};
    STANDARD.decode(text).map_err(|_| {
        manifest_error(
            "snapshot.data_base64",
            "must be standard base64 with padding",
        )
    })
}
