//! The commit: the rules that need the whole manifest, then the swap of the
//! staged tables for the live ones, in the caller's one transaction.
//!
//! The staged events, sessions and memory are renamed into place (the live
//! tables dropped first), so the commit costs the same for ten events or
//! ten thousand large ones; the event indexes are built anew.

use super::{
    call::ImportChecked,
    schema::{SWAPPED, create_staging_table},
    stage::{check_retention_setting, over_retention},
    ticket::{self, Staging},
};
use crate::{
    DomainError,
    agent_state::{ImportSummary, SESSION_STATUSES},
    event_log::schema::create_event_indexes,
    object_env::ObjectEnv,
    params, snapshot,
    sql::{RowExt, SqlStore},
};

/// What the commit would do, changing nothing.
pub(super) fn check(
    store: &impl SqlStore,
    staging: &Staging,
    env: &ObjectEnv,
) -> Result<ImportChecked, DomainError> {
    check_retention_setting(env)?;
    if staging.events > env.max_events {
        return Err(over_retention(env.max_events));
    }
    let role = store
        .first_row(
            "SELECT role FROM import_agent WHERE id = 1 AND role IS NOT NULL",
            Vec::new(),
        )?
        .map(|row| row.text(0).map(str::to_owned))
        .transpose()?;
    Ok(ImportChecked { role })
}

/// Replaces the agent's state with what import `ticket` staged.
pub(in crate::agent_state) fn commit(
    store: &impl SqlStore,
    ticket: u64,
    env: &ObjectEnv,
) -> Result<ImportSummary, DomainError> {
    let staging = ticket::current(store, ticket)?;
    check(store, &staging, env)?;
    derive_sessions(store, env.now_ms)?;
    for (live, staged, columns) in SWAPPED {
        store.run(&format!("DROP TABLE {live}"), Vec::new())?;
        store.run(
            &format!("ALTER TABLE {staged} RENAME TO {live}"),
            Vec::new(),
        )?;
        create_staging_table(store, staged, columns)?;
    }
    create_event_indexes(store)?;
    store.run("DELETE FROM producer_batches", Vec::new())?;
    // Summaries of the replaced log would describe turns that are gone.
    crate::summary_cache::clear(store)?;
    store.run(
        "UPDATE log_state SET
            first_seq = COALESCE((SELECT MIN(seq) FROM events), 0),
            last_seq = COALESCE((SELECT MAX(seq) FROM events), 0),
            event_count = (SELECT COUNT(*) FROM events)
         WHERE id = 1",
        Vec::new(),
    )?;
    for statement in [
        "DELETE FROM agent_record",
        "INSERT INTO agent_record (id, role, metadata, created_at, updated_at)
         SELECT 1, role, metadata, ?1, ?1 FROM import_agent WHERE role IS NOT NULL",
        "DELETE FROM checkpoint",
        "INSERT INTO checkpoint (id, document, updated_at)
         SELECT 1, document, ?1 FROM import_checkpoint WHERE document IS NOT NULL",
    ] {
        let params = if statement.contains("?1") {
            params![env.now_ms]
        } else {
            Vec::new()
        };
        store.run(statement, params)?;
    }
    // History does not travel: the import replaces every kind whole.
    snapshot::kept::drop_all(store)?;
    crate::workspace_store::kept::drop_all(store)?;
    crate::history::wipe(store)?;
    let has_checkpoint = exists(store, "checkpoint")?;
    let has_snapshot = snapshot::staged::commit(store, env.now_ms)?;
    crate::workspace_store::staged::commit(store, env.now_ms)?;
    let sessions = count(store, "sessions")?;
    ticket::clear(store)?;
    Ok(ImportSummary {
        events: staging.events,
        sessions,
        memory: staging.memory,
        checkpoint: has_checkpoint,
        snapshot: has_snapshot,
    })
}

/// Gives each staged session the seqs, count and (for sessions only events
/// name) times of its staged events; sessions without events keep the
/// seqs the manifest gave.
fn derive_sessions(store: &impl SqlStore, now_ms: i64) -> Result<(), DomainError> {
    let named = store.execute(
        "SELECT session_id, MIN(seq), MAX(seq), COUNT(*) FROM import_events
         WHERE session_id IS NOT NULL GROUP BY session_id",
        Vec::new(),
    )?;
    for row in named {
        let (first_seq, last_seq) = (row.uint(1)?, row.uint(2)?);
        let first_at = created_at(store, first_seq)?.unwrap_or(now_ms);
        let last_at = created_at(store, last_seq)?.unwrap_or(now_ms);
        store.run(
            "INSERT INTO import_sessions
                (session_id, status, metadata, first_seq, last_seq, event_count, created_at,
                 updated_at)
             VALUES (?1, ?2, 'null', ?3, ?4, ?5, ?6, ?7)
             ON CONFLICT (session_id) DO UPDATE SET first_seq = excluded.first_seq,
                last_seq = excluded.last_seq, event_count = excluded.event_count",
            params![
                row.text(0)?,
                SESSION_STATUSES[0],
                first_seq,
                last_seq,
                row.uint(3)?,
                first_at,
                last_at
            ],
        )?;
    }
    Ok(())
}

fn created_at(store: &impl SqlStore, seq: u64) -> Result<Option<i64>, DomainError> {
    store
        .first_row(
            "SELECT created_at FROM import_events WHERE seq = ?1",
            params![seq],
        )?
        .map(|row| row.int(0).map_err(DomainError::from))
        .transpose()
}

fn exists(store: &impl SqlStore, table: &str) -> Result<bool, DomainError> {
    Ok(count(store, table)? > 0)
}

fn count(store: &impl SqlStore, table: &str) -> Result<u64, DomainError> {
    Ok(store
        .first_row(&format!("SELECT COUNT(*) FROM {table}"), Vec::new())?
        .map(|row| row.uint(0))
        .transpose()?
        .unwrap_or(0))
}
