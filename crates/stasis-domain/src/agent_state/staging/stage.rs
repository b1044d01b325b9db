//! Staging one batch: each item is checked against the rules and against
//! what is staged before it, then written to the staging tables.
//!
//! Paths in refusals count items across the whole import (`events[9123]`
//! is the 9,124th event, whichever part or batch brought it).

use super::{
    call::{ImportBatch, ImportProgress},
    ticket::{self, Staging},
};
use crate::{
    DomainError,
    agent_state::{
        checks::manifest_error,
        import,
        manifest::{ManifestAgent, ManifestEvent, ManifestMemory, ManifestSession},
    },
    object_env::ObjectEnv,
    params, snapshot,
    sql::SqlStore,
    sql_rows::JsonRows,
};

/// Checks and stages `batch` for the import holding `ticket`.
pub(in crate::agent_state) fn stage(
    store: &impl SqlStore,
    ticket: u64,
    batch: &ImportBatch,
    env: &ObjectEnv,
) -> Result<ImportProgress, DomainError> {
    let mut staging = ticket::current(store, ticket)?;
    match batch {
        ImportBatch::Agent(agent) => stage_agent(store, agent.as_ref())?,
        ImportBatch::Checkpoint(document) => stage_checkpoint(store, document.as_deref())?,
        ImportBatch::Events(events) => stage_events(store, &mut staging, events, env)?,
        ImportBatch::Sessions(sessions) => stage_sessions(store, &mut staging, sessions, env)?,
        ImportBatch::Memory(entries) => stage_memory(store, &mut staging, entries, env)?,
        ImportBatch::Snapshot(staged) => {
            if snapshot::staged::is_given(store)? {
                return Err(manifest_error("snapshot", "appears twice"));
            }
            snapshot::staged::record(store, staged.as_ref())?;
        }
    }
    ticket::save_counts(store, &staging)?;
    Ok(progress(&staging))
}

/// Counts a part of a multi-part import as received.
pub(super) fn end_part(store: &impl SqlStore, ticket: u64) -> Result<ImportProgress, DomainError> {
    let mut staging = ticket::current(store, ticket)?;
    staging.parts += 1;
    ticket::save_counts(store, &staging)?;
    Ok(progress(&staging))
}

fn progress(staging: &Staging) -> ImportProgress {
    ImportProgress {
        parts: staging.parts,
        events: staging.events,
        sessions: staging.sessions,
        memory: staging.memory,
    }
}

fn stage_agent(store: &impl SqlStore, agent: Option<&ManifestAgent>) -> Result<(), DomainError> {
    if exists(store, "import_agent")? {
        return Err(manifest_error("agent", "appears twice"));
    }
    if let Some(agent) = agent {
        import::check_agent(agent)?;
    }
    store.run(
        "INSERT INTO import_agent (id, role, metadata) VALUES (1, ?1, ?2)",
        params![
            agent.map(|a| a.role.as_str()),
            agent.map(|a| a.metadata.as_str())
        ],
    )?;
    Ok(())
}

fn stage_checkpoint(store: &impl SqlStore, document: Option<&str>) -> Result<(), DomainError> {
    if exists(store, "import_checkpoint")? {
        return Err(manifest_error("checkpoint", "appears twice"));
    }
    if let Some(document) = document {
        import::check_checkpoint(document)?;
    }
    store.run(
        "INSERT INTO import_checkpoint (id, document) VALUES (1, ?1)",
        params![document],
    )?;
    Ok(())
}

fn stage_events(
    store: &impl SqlStore,
    staging: &mut Staging,
    events: &[ManifestEvent],
    env: &ObjectEnv,
) -> Result<(), DomainError> {
    const ONE: &str = "INSERT INTO import_events (seq, type, session_id, data, created_at)
                       VALUES (?1, ?2, ?3, ?4, ?5)";
    // Every event of the batch in a few statements (sql_rows): a fork of
    // 10,000 events is otherwise 10,000 calls into the store.
    const MANY: &str = "INSERT INTO import_events (seq, type, session_id, data, created_at)
                        SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'),
                            json_extract(value, '$[2]'), json_extract(value, '$[3]'),
                            json_extract(value, '$[4]')
                        FROM json_each(?1)";
    check_retention_setting(env)?;
    let mut rows = JsonRows::new(store, MANY, Vec::new());
    for event in events {
        import::check_event(event, staging.events, staging.last_seq)?;
        if staging.events >= env.max_events {
            return Err(over_retention(env.max_events));
        }
        let created_at = event.created_at.unwrap_or(env.now_ms);
        let row = (
            event.seq,
            event.event_type.as_str(),
            event.session_id.as_deref(),
            event.data.as_str(),
            created_at,
        );
        if !rows.push(&row)? {
            rows.flush()?;
            store.run(
                ONE,
                params![
                    event.seq,
                    event.event_type.as_str(),
                    event.session_id.as_deref(),
                    event.data.as_str(),
                    created_at
                ],
            )?;
        }
        staging.events += 1;
        staging.last_seq = event.seq;
    }
    rows.flush()
}

/// Retention must keep at least one event.
pub(super) fn check_retention_setting(env: &ObjectEnv) -> Result<(), DomainError> {
    if env.max_events == 0 {
        return Err(DomainError::invalid(
            "invalid_settings",
            "max_events must be at least 1",
        ));
    }
    Ok(())
}

/// The refusal of a manifest with more events than retention keeps.
pub(super) fn over_retention(max_events: u64) -> DomainError {
    manifest_error(
        "events",
        &format!("holds more than {max_events} events; retention keeps at most {max_events}"),
    )
}

/// Sessions keep their status, metadata, times and (until the commit counts
/// their events) their seqs.
fn stage_sessions(
    store: &impl SqlStore,
    staging: &mut Staging,
    sessions: &[ManifestSession],
    env: &ObjectEnv,
) -> Result<(), DomainError> {
    for session in sessions {
        let index = staging.sessions;
        import::check_session(session, index)?;
        if is_staged(store, "import_sessions", "session_id", &session.session_id)? {
            return Err(manifest_error(
                &format!("sessions[{index}].session_id"),
                "appears twice",
            ));
        }
        store.run(
            "INSERT INTO import_sessions
                (session_id, status, metadata, first_seq, last_seq, event_count, created_at,
                 updated_at)
             VALUES (?1, ?2, ?3, ?4, ?5, 0, ?6, ?7)",
            params![
                session.session_id.as_str(),
                session.status.as_str(),
                session.metadata.as_str(),
                session.first_seq,
                session.last_seq,
                session.created_at.unwrap_or(env.now_ms),
                session.updated_at.unwrap_or(env.now_ms)
            ],
        )?;
        staging.sessions += 1;
    }
    Ok(())
}

fn stage_memory(
    store: &impl SqlStore,
    staging: &mut Staging,
    entries: &[ManifestMemory],
    env: &ObjectEnv,
) -> Result<(), DomainError> {
    for entry in entries {
        let index = staging.memory;
        import::check_memory(entry, index)?;
        if is_staged(store, "import_memory", "key", &entry.key)? {
            return Err(manifest_error(
                &format!("memory[{index}].key"),
                "appears twice",
            ));
        }
        store.run(
            "INSERT INTO import_memory (key, value, updated_at) VALUES (?1, ?2, ?3)",
            params![
                entry.key.as_str(),
                entry.value.as_str(),
                entry.updated_at.unwrap_or(env.now_ms)
            ],
        )?;
        staging.memory += 1;
    }
    Ok(())
}

fn exists(store: &impl SqlStore, table: &str) -> Result<bool, DomainError> {
    Ok(store
        .first_row(&format!("SELECT 1 FROM {table} WHERE id = 1"), Vec::new())?
        .is_some())
}

fn is_staged(
    store: &impl SqlStore,
    table: &str,
    key: &str,
    value: &str,
) -> Result<bool, DomainError> {
    Ok(store
        .first_row(
            &format!("SELECT 1 FROM {table} WHERE {key} = ?1"),
            params![value],
        )?
        .is_some())
}
