//! A restore of the workspace ([`crate::restore`]): the version a point
//! resolved to becomes current again as a NEW version whose pages and chunk
//! references name the same chunks (no chunk byte is copied), or, when the
//! point had no workspace, the current one is kept as history and a
//! deletion recorded.

use super::{WORKSPACE, WorkspaceVersion, kept, rules};
use crate::{
    DomainError,
    chunk_store::{ChunkHash, manifests::readable_until, table},
    history::{VersionAt, versions::Current},
    object_env::ObjectEnv,
    params,
    sql::{RowExt, SqlStore},
};

/// Makes the workspace what version `target` was (`None`: none), recorded
/// at history seq `seq`. Answers the new current version (`None` for a
/// deletion) and whether anything changed.
pub fn restore_to(
    store: &impl SqlStore,
    target: Option<VersionAt>,
    seq: u64,
    (env, grace_ms): (&ObjectEnv, i64),
) -> Result<(Option<u64>, bool), DomainError> {
    let now = env.now_ms;
    let current = rules::current(store)?;
    match (&current, target) {
        (Some(c), Some(t)) if c.version == t.version => return Ok((Some(c.version), false)),
        (None, None) => return Ok((None, false)),
        _ => {}
    }
    let readable_until = readable_until(now, grace_ms);
    kept::keep(store, current.as_ref(), now)?;
    let version = WORKSPACE.next_version(store)?;
    let Some(target) = target else {
        store.run("DELETE FROM workspace_current", Vec::new())?;
        let deletion = Current {
            version,
            seq,
            created_at: now,
            deleted: true,
        };
        kept::record_current(
            store,
            &deletion,
            (env.now_ms, &env.retention),
            readable_until,
        )?;
        return Ok((None, true));
    };
    let old = kept::find(store, target.version)?;
    copy_references(store, old.version, version)?;
    let restored = WorkspaceVersion {
        version,
        created_at: now,
        ..old
    };
    rules::make_current(store, &restored)?;
    let recorded = Current {
        version,
        seq,
        created_at: now,
        deleted: false,
    };
    kept::record_current(
        store,
        &recorded,
        (env.now_ms, &env.retention),
        readable_until,
    )?;
    Ok((Some(version), true))
}

/// Names `from`'s pages and chunks again under version `to`, counting one
/// more reference to each.
fn copy_references(store: &impl SqlStore, from: u64, to: u64) -> Result<(), DomainError> {
    let (_, pages) = WORKSPACE.manifest(store, from)?.ok_or_else(|| {
        DomainError::Storage(format!("kept workspace version {from} has no pages"))
    })?;
    WORKSPACE.add_manifest(store, to, 0, &pages)?;
    let rows = store.execute(
        "SELECT part, hashes FROM workspace_chunk_refs WHERE version = ?1 ORDER BY part",
        params![from],
    )?;
    for row in rows {
        // An empty blob may come back as NULL from some SQL stores.
        let blob = row.blob(1).unwrap_or_default().to_vec();
        let hashes: Vec<ChunkHash> = blob
            .chunks_exact(32)
            .filter_map(|raw| ChunkHash::try_from(raw).ok())
            .collect();
        store.run(
            "INSERT OR REPLACE INTO workspace_chunk_refs (version, part, hashes)
             VALUES (?1, ?2, ?3)",
            params![to, row.uint(0)?, blob],
        )?;
        table::reference(store, &hashes)?;
    }
    Ok(())
}
