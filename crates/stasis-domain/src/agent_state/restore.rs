//! A restore of the checkpoint and the memory ([`crate::restore`]): each
//! becomes the document of the version a point resolved to (with the time
//! it was written then), or absent; every change is a new version, so the
//! state before stays kept.

use super::{checkpoint, memory};
use crate::{
    DomainError,
    history::{Kind, VersionAt, documents, versions},
    object_env::ObjectEnv,
    params,
    sql::{RowExt, SqlStore},
};
use std::collections::{BTreeMap, BTreeSet};

/// What one document became: its new current version (`None`: absent) and
/// whether anything changed.
pub type Became = (Option<u64>, bool);

/// Makes the checkpoint what version `target` was (`None`: none).
pub fn checkpoint_to(
    store: &impl SqlStore,
    target: Option<VersionAt>,
    env: &ObjectEnv,
) -> Result<Became, DomainError> {
    let current = versions::current(store, Kind::Checkpoint, "")?;
    let exists = checkpoint::exists(store)?;
    let document = match target {
        Some(t) if exists && current.is_some_and(|c| c.version == t.version) => {
            return Ok((Some(t.version), false));
        }
        None if !exists => return Ok((None, false)),
        Some(t) => Some(read(store, (Kind::Checkpoint, ""), t.version)?),
        None => None,
    };
    checkpoint::keep_previous(store, document.is_none(), env)?;
    match document {
        Some((document, written_at)) => checkpoint::write(store, &document, written_at)?,
        None => store.run("DELETE FROM checkpoint WHERE id = 1", Vec::new())?,
    }
    let now = versions::current(store, Kind::Checkpoint, "")?;
    Ok((now.filter(|c| !c.deleted).map(|c| c.version), true))
}

/// Makes every memory key what `targets` says (a key not in it: absent).
pub fn memory_to(
    store: &impl SqlStore,
    targets: &BTreeMap<String, VersionAt>,
    env: &ObjectEnv,
) -> Result<BTreeMap<String, Became>, DomainError> {
    let mut keys: BTreeSet<String> = targets.keys().cloned().collect();
    for row in store.execute("SELECT key FROM memory", Vec::new())? {
        keys.insert(row.text(0)?.to_owned());
    }
    let mut became = BTreeMap::new();
    for key in keys {
        let target = targets.get(&key).copied();
        let current = versions::current(store, Kind::Memory, &key)?;
        let exists = memory::find(store, &key)?.is_some();
        let value = match target {
            Some(t) if exists && current.is_some_and(|c| c.version == t.version) => {
                became.insert(key, (Some(t.version), false));
                continue;
            }
            None if !exists => continue,
            Some(t) => Some(read(store, (Kind::Memory, &key), t.version)?),
            None => None,
        };
        memory::keep_previous(store, &key, value.is_none(), env)?;
        match value {
            Some((value, written_at)) => {
                let entry = memory::MemoryEntry {
                    key: key.clone(),
                    value,
                    updated_at: written_at,
                };
                memory::write(store, &entry)?;
            }
            None => store.run("DELETE FROM memory WHERE key = ?1", params![key.as_str()])?,
        }
        let now = versions::current(store, Kind::Memory, &key)?;
        became.insert(key, (now.filter(|c| !c.deleted).map(|c| c.version), true));
    }
    Ok(became)
}

/// A kept version's document and when it was written.
fn read(
    store: &impl SqlStore,
    (kind, key): (Kind, &str),
    version: u64,
) -> Result<(String, i64), DomainError> {
    documents::read(store, (kind, key), version)?
        .ok_or_else(|| crate::history::version_not_found(kind, version))
}
