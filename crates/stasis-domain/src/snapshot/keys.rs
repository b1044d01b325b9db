//! The KV keys the agent's snapshot rows name: the ones a sweep must keep,
//! and the ones a wipe leaves for its caller to delete. Each is named by a
//! row of its own table (the current snapshot, a put's reservation, an
//! import's staged snapshot), so this reads across all of them.

use super::{KILO_DB, PENDING_TTL_MS, import_chunks, rules, staged};
use crate::{
    DomainError, chunk_store, params,
    sql::{RowExt, SqlStore},
};

/// The KV keys a sweep must keep: the current one and those of puts still
/// in flight. Reservations older than [`PENDING_TTL_MS`] are given up.
pub fn keys_in_use(store: &impl SqlStore, now_ms: i64) -> Result<Vec<String>, DomainError> {
    store.run(
        "DELETE FROM snapshot_pending WHERE reserved_at < ?1",
        params![now_ms.saturating_sub(PENDING_TTL_MS)],
    )?;
    // An import's chunked snapshot whose process died goes the same way:
    // its manifest is dropped, and its chunks are collected.
    import_chunks::expire(store, now_ms)?;
    named_keys(store)
}

/// Removes every snapshot table's rows (the agent is destroyed or replaced)
/// and returns the KV keys that referenced them. The version counter stays,
/// so that no key is ever written twice.
pub fn wipe(store: &impl SqlStore) -> Result<Vec<String>, DomainError> {
    let keys = named_keys(store)?;
    KILO_DB.drop_all_manifests(store)?;
    // Every owner's versions go, then every chunk of the agent but those
    // its forks hold: they stay, rows and keys, until the last fork naming
    // them releases its hold.
    crate::workspace_store::wipe(store)?;
    chunk_store::table::release_all(store)?;
    chunk_store::holds::reference_held(store)?;
    for table in [
        "snapshot_meta",
        "snapshot_inline",
        "snapshot_pending",
        "snapshot_staged",
        "snapshot_importing",
    ] {
        store.run(&format!("DELETE FROM {table}"), Vec::new())?;
    }
    Ok(keys)
}

/// The current snapshot's key, the reserved ones, then the staged one.
fn named_keys(store: &impl SqlStore) -> Result<Vec<String>, DomainError> {
    let mut keys = Vec::new();
    if let Some((_, Some(key))) = rules::current(store)? {
        keys.push(key);
    }
    for row in store.execute("SELECT kv_key FROM snapshot_pending", Vec::new())? {
        keys.push(row.text(0)?.to_owned());
    }
    keys.extend(staged::key(store)?);
    Ok(keys)
}
