//! The town object's tables.

use crate::{DomainError, sql::SqlStore};

/// Statements that create the tables; each is idempotent.
const STATEMENTS: &[&str] = &[
    // One row: draining, the evicting and the current container, liveness.
    "CREATE TABLE IF NOT EXISTS town_state (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        draining INTEGER NOT NULL,
        evicting_container_id TEXT,
        eviction_reason TEXT,
        current_container_id TEXT,
        last_heartbeat_at INTEGER
    )",
    "INSERT OR IGNORE INTO town_state (id, draining) VALUES (1, 0)",
    // Containers that announced their eviction: their heartbeats never
    // clear draining nor make them current again. Bounded, newest kept.
    "CREATE TABLE IF NOT EXISTS evicted_containers (
        container_id TEXT PRIMARY KEY,
        ord INTEGER NOT NULL,
        evicted_at INTEGER NOT NULL
    )",
    // The process registry: one head row, one row per agent in PUT order.
    "CREATE TABLE IF NOT EXISTS registry_head (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        container_id TEXT NOT NULL,
        updated_at INTEGER NOT NULL
    )",
    "CREATE TABLE IF NOT EXISTS registry_agents (
        position INTEGER PRIMARY KEY,
        rig_id TEXT NOT NULL,
        agent_id TEXT NOT NULL,
        role TEXT NOT NULL,
        session_id TEXT,
        port INTEGER
    )",
    // The town's directory of registered agents.
    "CREATE TABLE IF NOT EXISTS town_agents (
        rig_id TEXT NOT NULL,
        agent_id TEXT NOT NULL,
        role TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        PRIMARY KEY (rig_id, agent_id)
    ) WITHOUT ROWID",
    // Belt and braces for the one-mayor rule the code checks first.
    "CREATE UNIQUE INDEX IF NOT EXISTS town_agents_one_mayor ON town_agents (role) WHERE role = 'mayor'",
    // Dispatches deferred while draining: at most one per agent.
    "CREATE TABLE IF NOT EXISTS deferred_dispatches (
        rig_id TEXT NOT NULL,
        agent_id TEXT NOT NULL,
        deferred_at INTEGER NOT NULL,
        PRIMARY KEY (rig_id, agent_id)
    ) WITHOUT ROWID",
    // Heartbeats sent with an Idempotency-Key: what each released, so that
    // a retry gets the same dispatches again. Bounded, newest kept.
    "CREATE TABLE IF NOT EXISTS heartbeat_replays (
        container_id TEXT NOT NULL,
        idempotency_key TEXT NOT NULL,
        released TEXT NOT NULL,
        recorded_at INTEGER NOT NULL,
        PRIMARY KEY (container_id, idempotency_key)
    )",
    // Mayor messages already routed (by their seq in the mayor's log), so
    // that a retried message is not recorded or deferred twice. Bounded.
    "CREATE TABLE IF NOT EXISTS routed_mayor_messages (
        rig_id TEXT NOT NULL,
        agent_id TEXT NOT NULL,
        message_seq INTEGER NOT NULL,
        PRIMARY KEY (rig_id, agent_id, message_seq)
    )",
    // Containers that held the town, one epoch per takeover: a superseded
    // one never becomes current again, and its container-token writes are
    // refused. Bounded, newest kept.
    "CREATE TABLE IF NOT EXISTS container_epochs (
        container_id TEXT PRIMARY KEY,
        epoch INTEGER NOT NULL UNIQUE,
        became_current_at INTEGER NOT NULL
    )",
    // A town whose current container took over before epochs existed: it
    // gets epoch 1.
    "INSERT INTO container_epochs (container_id, epoch, became_current_at)
        SELECT current_container_id, 1, COALESCE(last_heartbeat_at, 0) FROM town_state
        WHERE id = 1 AND current_container_id IS NOT NULL
          AND NOT EXISTS (SELECT 1 FROM container_epochs)",
    // Bootstrap tokens already exchanged, each for one container: kept until
    // they expire (town/bootstrap.rs), so none is spent twice.
    "CREATE TABLE IF NOT EXISTS spent_bootstrap_tokens (
        token_id TEXT PRIMARY KEY,
        container_id TEXT NOT NULL,
        expires_at INTEGER NOT NULL,
        spent_at INTEGER NOT NULL
    )",
    "CREATE INDEX IF NOT EXISTS spent_bootstrap_tokens_expiry ON spent_bootstrap_tokens (expires_at)",
    // The town's own event log.
    "CREATE TABLE IF NOT EXISTS town_events (
        seq INTEGER PRIMARY KEY,
        type TEXT NOT NULL,
        data TEXT NOT NULL,
        created_at INTEGER NOT NULL
    )",
];

/// Creates the town's tables if they are missing.
pub fn migrate(store: &impl SqlStore) -> Result<(), DomainError> {
    for statement in STATEMENTS {
        store.run(statement, Vec::new())?;
    }
    Ok(())
}
