//! The object's side of a workspace: the current version, its references,
//! the commit's switch, delete and wipe, each inside the caller's
//! transaction.

use super::{CommitArgs, Committed, REFS_PER_PART, WORKSPACE, WorkspaceVersion};
use crate::{
    DomainError,
    chunk_store::{
        ChunkHash,
        manifests::verify_held,
        table::{self, distinct},
    },
    event_log, params,
    sql::{RowExt, SqlStore},
    workspace::{ContentHash, INVALID_MANIFEST},
};

/// The current version, if any.
pub fn current(store: &impl SqlStore) -> Result<Option<WorkspaceVersion>, DomainError> {
    let Some(row) = store.first_row(
        "SELECT version, head, files, chunk_count, event_watermark, created_at
         FROM workspace_current WHERE id = 1",
        Vec::new(),
    )?
    else {
        return Ok(None);
    };
    let head = serde_json::from_str(row.text(1)?).map_err(|err| {
        DomainError::Storage(format!("the workspace's stored head does not read: {err}"))
    })?;
    Ok(Some(WorkspaceVersion {
        version: row.uint(0)?,
        head,
        files: row.uint(2)?,
        chunk_count: row.uint(3)?,
        event_watermark: row.uint(4)?,
        created_at: row.int(5)?,
    }))
}

/// Checks the preconditions again, that the store holds every page (with
/// its size) and chunk, then adds the version and makes it current; the
/// superseded one, answered beside, is the caller's to keep
/// (`super::kept`).
pub fn commit(
    store: &impl SqlStore,
    args: &CommitArgs,
    now_ms: i64,
) -> Result<(Committed, Option<WorkspaceVersion>), DomainError> {
    let previous = current(store)?;
    args.precondition.check(previous.as_ref())?;
    if let Some(same) = previous
        .as_ref()
        .filter(|p| p.head.root_hash == args.head.root_hash)
    {
        let unchanged = Committed {
            version: same.clone(),
            created: false,
        };
        return Ok((unchanged, None));
    }
    let (version, chunk_count) = add_version(store, args)?;
    let event_watermark = match args.event_watermark {
        Some(seq) => seq,
        None => event_log::state(store)?.last_seq,
    };
    let stored = WorkspaceVersion {
        version,
        head: args.head.clone(),
        files: args.files,
        chunk_count,
        event_watermark,
        created_at: now_ms,
    };
    make_current(store, &stored)?;
    let committed = Committed {
        version: stored,
        created: true,
    };
    Ok((committed, previous))
}

/// Adds a version naming the head's pages and the given chunks, once the
/// store holds every one (else 409 `chunks_missing`, or 400 for a page of
/// another size); returns it and how many distinct chunks it names. It is
/// not current yet.
pub(super) fn add_version(
    store: &impl SqlStore,
    args: &CommitArgs,
) -> Result<(u64, u64), DomainError> {
    let pages: Vec<ChunkHash> = args.head.pages.iter().map(|p| *p.sha256.as_raw()).collect();
    let raw: Vec<ChunkHash> = args.chunks.iter().map(|c| *c.as_raw()).collect();
    let chunks = distinct(&raw);
    // Pages and chunks are counted apart (a page's bytes may also be a
    // file's chunk): each distinct page once for the manifest, each
    // distinct chunk once for the version's chunk rows, as
    // `drop_version` releases them.
    let mut sizes = table::reference_stored(store, &distinct(&pages))?;
    sizes.extend(table::reference_stored(store, &chunks)?);
    let mut named = pages.clone();
    named.extend_from_slice(&chunks);
    let page_sizes: Vec<u64> = args.head.pages.iter().map(|p| u64::from(p.size)).collect();
    verify_held(
        &named,
        &sizes,
        |index| page_sizes.get(index).copied(),
        INVALID_MANIFEST,
    )?;
    let version = WORKSPACE.next_version(store)?;
    WORKSPACE.insert_manifest(store, version, 0, &pages)?;
    for (part, hashes) in chunks.chunks(REFS_PER_PART).enumerate() {
        store.run(
            "INSERT OR REPLACE INTO workspace_chunk_refs (version, part, hashes)
             VALUES (?1, ?2, ?3)",
            params![
                version,
                u64::try_from(part).unwrap_or(u64::MAX),
                hashes.concat()
            ],
        )?;
    }
    Ok((version, u64::try_from(chunks.len()).unwrap_or(u64::MAX)))
}

/// Makes `version` (added already) the current one.
pub(super) fn make_current(
    store: &impl SqlStore,
    version: &WorkspaceVersion,
) -> Result<(), DomainError> {
    let head = serde_json::to_string(&version.head)
        .map_err(|err| DomainError::Storage(format!("encoding a workspace head: {err}")))?;
    store.run(
        "INSERT OR REPLACE INTO workspace_current
            (id, version, head, files, chunk_count, event_watermark, created_at)
         VALUES (1, ?1, ?2, ?3, ?4, ?5, ?6)",
        params![
            version.version,
            head,
            version.files,
            version.chunk_count,
            version.event_watermark,
            version.created_at
        ],
    )?;
    Ok(())
}

/// Drops the current version, if any (its chunks readable until
/// `readable_until`).
pub(super) fn clear_current(store: &impl SqlStore, readable_until: i64) -> Result<(), DomainError> {
    if let Some(version) = previous_version(store)? {
        drop_version(store, version, readable_until)?;
    }
    store.run("DELETE FROM workspace_current", Vec::new())?;
    Ok(())
}

/// The current version's number, read alone.
fn previous_version(store: &impl SqlStore) -> Result<Option<u64>, DomainError> {
    store
        .first_row(
            "SELECT version FROM workspace_current WHERE id = 1",
            Vec::new(),
        )?
        .map(|row| row.uint(0))
        .transpose()
        .map_err(DomainError::from)
}

/// Drops a version's references: its pages (the owner's manifest row) and
/// its chunk parts; the chunks no version names any more stay readable
/// until `readable_until`.
pub(super) fn drop_version(
    store: &impl SqlStore,
    version: u64,
    readable_until: i64,
) -> Result<(), DomainError> {
    WORKSPACE.drop_manifest(store, version, readable_until)?;
    let rows = store.execute(
        "SELECT hashes FROM workspace_chunk_refs WHERE version = ?1",
        params![version],
    )?;
    for row in rows {
        // An empty blob may come back as NULL from some SQL stores.
        let blob = row.blob(0).unwrap_or_default();
        let hashes: Vec<ChunkHash> = blob
            .chunks_exact(32)
            .filter_map(|raw| ChunkHash::try_from(raw).ok())
            .collect();
        table::release(store, &hashes, readable_until)?;
    }
    store.run(
        "DELETE FROM workspace_chunk_refs WHERE version = ?1",
        params![version],
    )?;
    Ok(())
}

/// Drops every workspace version and its references at once (the agent is
/// destroyed). The version counter stays.
pub fn wipe(store: &impl SqlStore) -> Result<(), DomainError> {
    let versions: Vec<u64> = store
        .execute(
            "SELECT version FROM workspace_manifests
             UNION SELECT version FROM workspace_chunk_refs",
            Vec::new(),
        )?
        .iter()
        .map(|row| row.uint(0))
        .collect::<Result<_, _>>()?;
    for version in versions {
        drop_version(store, version, 0)?;
    }
    store.run("DELETE FROM workspace_current", Vec::new())?;
    store.run("DELETE FROM workspace_staged", Vec::new())?;
    Ok(())
}

/// Part `part` of what the current version names, for an export: part 0
/// its pages, part `n` its `n`th row of chunks, each with its size; `None`
/// past the last (or without a version).
pub fn export_part(
    store: &impl SqlStore,
    part: u64,
    chosen: Option<WorkspaceVersion>,
) -> Result<Option<Vec<(ContentHash, u64)>>, DomainError> {
    let Some(current) = chosen else {
        return Ok(None);
    };
    if part == 0 {
        let pages = current.head.pages.iter();
        return Ok(Some(pages.map(|p| (p.sha256, u64::from(p.size))).collect()));
    }
    let Some(row) = store.first_row(
        "SELECT hashes FROM workspace_chunk_refs WHERE version = ?1 AND part = ?2",
        params![current.version, part - 1],
    )?
    else {
        return Ok(None);
    };
    let hashes: Vec<ChunkHash> = row
        .blob(0)
        .unwrap_or_default()
        .chunks_exact(32)
        .filter_map(|raw| ChunkHash::try_from(raw).ok())
        .collect();
    let sizes = table::stored_sizes(store, &hashes)?;
    hashes
        .iter()
        .map(|hash| match sizes.get(hash) {
            Some(size) => Ok((ContentHash::from_raw(*hash), *size)),
            None => Err(DomainError::Storage(format!(
                "workspace version {} names chunk {} the store does not hold",
                current.version,
                ContentHash::from_raw(*hash)
            ))),
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}
