//! Import: a manifest replaces everything the agent has, never merges.
//!
//! The whole manifest is checked first; any problem refuses it with
//! `invalid_manifest` naming the field's path, before a single write. Then
//! the agent is wiped exactly as `DestroyAgent` does and the manifest's
//! contents are written: record, events (keeping their seqs), the log's
//! bounds, sessions, checkpoint and memory.

use super::checks::{self, manifest_error};
use super::manifest::{Manifest, ManifestEvent, ManifestSession, ManifestSnapshot};
use super::{
    MANIFEST_FORMAT, MAX_DOCUMENT_BYTES, MAX_MANIFEST_SNAPSHOT_BYTES, MAX_ROLE_BYTES, MemoryEntry,
    SESSION_STATUSES, SessionRecord, checkpoint, memory, record, sessions,
};
use crate::{DomainError, agent::ObjectEnv, limits, params, sql::SqlStore};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// What an import wrote.
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
    /// The manifest carried a snapshot (see [`ImportOutcome::snapshot`]).
    pub snapshot: bool,
}

/// The answer to `Import`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImportOutcome {
    /// The counts the API answers with.
    pub summary: ImportSummary,
    /// The manifest's snapshot, validated in shape but neither decoded nor
    /// stored: the snapshot rules store it (or delete the old one when
    /// `None`) in the same call.
    pub snapshot: Option<ManifestSnapshot>,
}

/// Replaces the agent's state with `manifest`.
pub fn import(
    store: &impl SqlStore,
    manifest: &Manifest,
    env: &ObjectEnv,
) -> Result<ImportOutcome, DomainError> {
    validate(manifest, env.max_events)?;
    record::wipe(store)?;
    let now = env.now_ms;
    if let Some(agent) = &manifest.agent {
        record::write(store, &agent.role, &agent.metadata, now, now)?;
    }
    let mut stats = insert_events(store, &manifest.events, now)?;
    let mut session_count = 0u64;
    for session in &manifest.sessions {
        let found = stats.remove(session.session_id.as_str());
        sessions::insert(store, &manifest_session(session, found.as_ref(), now))?;
        session_count += 1;
    }
    for (session_id, found) in stats {
        sessions::insert(store, &implied_session(session_id, &found))?;
        session_count += 1;
    }
    if let Some(document) = &manifest.checkpoint {
        checkpoint::write(store, document, now)?;
    }
    for entry in &manifest.memory {
        memory::write(
            store,
            &MemoryEntry {
                key: entry.key.clone(),
                value: entry.value.clone(),
                updated_at: entry.updated_at.unwrap_or(now),
            },
        )?;
    }
    Ok(ImportOutcome {
        summary: ImportSummary {
            events: count(manifest.events.len()),
            sessions: session_count,
            memory: count(manifest.memory.len()),
            checkpoint: manifest.checkpoint.is_some(),
            snapshot: manifest.snapshot.is_some(),
        },
        snapshot: manifest.snapshot.clone(),
    })
}

/// One session's events in the manifest.
struct SessionStats {
    first_seq: u64,
    last_seq: u64,
    count: u64,
    first_at: i64,
    last_at: i64,
}

/// Stores the events with their seqs, sets the log's bounds from them, and
/// returns what each session's events add up to.
fn insert_events<'m>(
    store: &impl SqlStore,
    events: &'m [ManifestEvent],
    now: i64,
) -> Result<BTreeMap<&'m str, SessionStats>, DomainError> {
    let mut stats: BTreeMap<&str, SessionStats> = BTreeMap::new();
    for event in events {
        let created_at = event.created_at.unwrap_or(now);
        store.run(
            "INSERT INTO events (seq, type, session_id, data, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![
                event.seq,
                event.event_type.as_str(),
                event.session_id.as_deref(),
                event.data.as_str(),
                created_at
            ],
        )?;
        if let Some(session) = &event.session_id {
            stats
                .entry(session)
                .and_modify(|s| {
                    s.last_seq = event.seq;
                    s.count += 1;
                    s.last_at = created_at;
                })
                .or_insert(SessionStats {
                    first_seq: event.seq,
                    last_seq: event.seq,
                    count: 1,
                    first_at: created_at,
                    last_at: created_at,
                });
        }
    }
    let first_seq = events.first().map_or(0, |e| e.seq);
    let last_seq = events.last().map_or(0, |e| e.seq);
    store.run(
        "UPDATE log_state SET first_seq = ?1, last_seq = ?2, event_count = ?3 WHERE id = 1",
        params![first_seq, last_seq, count(events.len())],
    )?;
    Ok(stats)
}

/// A manifest session's row: seqs and count from its events when it has
/// any, else the given seqs (their events were dropped before export).
fn manifest_session(
    session: &ManifestSession,
    stats: Option<&SessionStats>,
    now: i64,
) -> SessionRecord {
    let (first_seq, last_seq, event_count) = match stats {
        Some(s) => (s.first_seq, s.last_seq, s.count),
        None => (session.first_seq, session.last_seq, 0),
    };
    SessionRecord {
        session_id: session.session_id.clone(),
        status: session.status.clone(),
        metadata: session.metadata.clone(),
        first_seq,
        last_seq,
        event_count,
        created_at: session.created_at.unwrap_or(now),
        updated_at: session.updated_at.unwrap_or(now),
    }
}

/// The row an append would have made for a session only events name.
fn implied_session(session_id: &str, stats: &SessionStats) -> SessionRecord {
    SessionRecord {
        session_id: session_id.to_owned(),
        status: SESSION_STATUSES[0].to_owned(),
        metadata: "null".to_owned(),
        first_seq: stats.first_seq,
        last_seq: stats.last_seq,
        event_count: stats.count,
        created_at: stats.first_at,
        updated_at: stats.last_at,
    }
}

fn count(len: usize) -> u64 {
    u64::try_from(len).unwrap_or(u64::MAX)
}

/// Every rule the manifest must meet, checked before anything is written.
pub fn validate(manifest: &Manifest, max_events: u64) -> Result<(), DomainError> {
    if let Some(format) = &manifest.format
        && format != MANIFEST_FORMAT
    {
        return Err(manifest_error(
            "format",
            &format!("must be {MANIFEST_FORMAT:?} when given"),
        ));
    }
    if let Some(agent) = &manifest.agent {
        checks::role(&agent.role, MAX_ROLE_BYTES).map_err(|b| b.for_manifest("agent.role"))?;
        checks::json_text(&agent.metadata, MAX_DOCUMENT_BYTES)
            .map_err(|b| b.for_manifest("agent.metadata"))?;
    }
    validate_sessions(&manifest.sessions)?;
    validate_events(&manifest.events, max_events)?;
    if let Some(document) = &manifest.checkpoint {
        checks::json_text(document, MAX_DOCUMENT_BYTES)
            .map_err(|b| b.for_manifest("checkpoint"))?;
    }
    validate_memory(manifest)?;
    if let Some(snapshot) = &manifest.snapshot {
        validate_snapshot(snapshot)?;
    }
    Ok(())
}

fn validate_sessions(sessions: &[ManifestSession]) -> Result<(), DomainError> {
    let mut seen = BTreeSet::new();
    for (index, session) in sessions.iter().enumerate() {
        let path = |field: &str| format!("sessions[{index}].{field}");
        checks::id(&session.session_id).map_err(|b| b.for_manifest(&path("session_id")))?;
        if !seen.insert(session.session_id.as_str()) {
            return Err(manifest_error(&path("session_id"), "appears twice"));
        }
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
    }
    Ok(())
}

fn validate_events(events: &[ManifestEvent], max_events: u64) -> Result<(), DomainError> {
    if max_events == 0 {
        return Err(DomainError::invalid(
            "invalid_settings",
            "max_events must be at least 1",
        ));
    }
    if count(events.len()) > max_events {
        return Err(manifest_error(
            "events",
            &format!(
                "holds {} events; retention keeps at most {max_events}",
                events.len()
            ),
        ));
    }
    let mut previous = 0u64;
    for (index, event) in events.iter().enumerate() {
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
        previous = event.seq;
        validate_event_fields(event, &path)?;
    }
    Ok(())
}

/// The rules an append applies to one event (type, session, size), then
/// the data's JSON.
fn validate_event_fields(
    event: &ManifestEvent,
    path: &dyn Fn(&str) -> String,
) -> Result<(), DomainError> {
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

fn validate_memory(manifest: &Manifest) -> Result<(), DomainError> {
    let mut seen = BTreeSet::new();
    for (index, entry) in manifest.memory.iter().enumerate() {
        let path = |field: &str| format!("memory[{index}].{field}");
        checks::id(&entry.key).map_err(|b| b.for_manifest(&path("key")))?;
        if !seen.insert(entry.key.as_str()) {
            return Err(manifest_error(&path("key"), "appears twice"));
        }
        checks::json_text(&entry.value, MAX_DOCUMENT_BYTES)
            .map_err(|b| b.for_manifest(&path("value")))?;
    }
    Ok(())
}

/// The snapshot's shape: a SHA-256 in hex, a size within the contract, and
/// base64 whose decoded length is that size. The bytes' hash is checked by
/// the snapshot rules when they decode and store them.
fn validate_snapshot(snapshot: &ManifestSnapshot) -> Result<(), DomainError> {
    let is_hex = |b: u8| b.is_ascii_digit() || (b'a'..=b'f').contains(&b);
    if snapshot.sha256.len() != 64 || !snapshot.sha256.bytes().all(is_hex) {
        return Err(manifest_error(
            "snapshot.sha256",
            "must be 64 lowercase hex digits",
        ));
    }
    if snapshot.size > MAX_MANIFEST_SNAPSHOT_BYTES {
        return Err(manifest_error(
            "snapshot.size",
            &format!("must be at most {MAX_MANIFEST_SNAPSHOT_BYTES} bytes"),
        ));
    }
    checks::storable(snapshot.event_watermark)
        .map_err(|b| b.for_manifest("snapshot.event_watermark"))?;
    match decoded_base64_len(&snapshot.data_base64) {
        None => Err(manifest_error(
            "snapshot.data_base64",
            "must be standard base64 with padding",
        )),
        Some(len) if len != snapshot.size => Err(manifest_error(
            "snapshot.data_base64",
            &format!("decodes to {len} bytes, not the {} of size", snapshot.size),
        )),
        Some(_) => Ok(()),
    }
}

/// The decoded length of standard padded base64, or `None` when the text
/// is not such base64.
fn decoded_base64_len(text: &str) -> Option<u64> {
    let bytes = text.as_bytes();
    if !bytes.len().is_multiple_of(4) {
        return None;
    }
    let padding = bytes.iter().rev().take_while(|&&b| b == b'=').count();
    let body = bytes.get(..bytes.len().checked_sub(padding)?)?;
    let is_alphabet = |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/');
    if padding > 2 || !body.iter().all(is_alphabet) {
        return None;
    }
    count((bytes.len() / 4 * 3).checked_sub(padding)?).into()
}

#[cfg(test)]
mod tests {
    use super::decoded_base64_len;

    #[test]
    fn base64_lengths_count_padding() {
        assert_eq!(decoded_base64_len(""), Some(0));
        assert_eq!(decoded_base64_len("AA=="), Some(1));
        assert_eq!(decoded_base64_len("AAA="), Some(2));
        assert_eq!(decoded_base64_len("AAAA"), Some(3));
        assert_eq!(decoded_base64_len("aGVsbG8gd29ybGQ="), Some(11));
    }

    #[test]
    fn malformed_base64_has_no_length() {
        for bad in ["A", "A===", "====", "AA=A", "AA-_", "AAA", "AA==AA=="] {
            assert_eq!(decoded_base64_len(bad), None, "{bad:?}");
        }
    }
}
