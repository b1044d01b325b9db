//! The history of the kinds whose content is a JSON document in SQL (the
//! checkpoint, each memory key): each write keeps the document it replaces
//! (or the deletion it follows) and records the new current version.

use super::{
    Kind, RetentionPolicy, retention,
    versions::{self, Current, Superseded},
};
use crate::{DomainError, event_log, sql::SqlStore};

/// A write of `(kind, key)` at `now_ms`: `previous` is the document it
/// replaces (`None` when there is none), `deletes` says whether the write
/// is a deletion. Keeps what it replaces (a document, or the deletion
/// recorded before it), records the new current version at the log's last
/// seq, then lets retention drop what expired. Answers the new version.
pub fn write(
    store: &impl SqlStore,
    (kind, key): (Kind, &str),
    previous: Option<(&str, i64)>,
    deletes: bool,
    (now_ms, policy): (i64, &RetentionPolicy),
) -> Result<u64, DomainError> {
    let current = versions::current(store, kind, key)?;
    let kept = match (previous, current) {
        (Some((document, updated_at)), current) => {
            // A document from before history has no recorded version: it
            // takes one now, at seq 0.
            let (version, seq, created_at) = match current {
                Some(c) if !c.deleted => (c.version, c.seq, c.created_at),
                _ => (versions::next_version(store, kind)?, 0, updated_at),
            };
            Some(Superseded {
                kind,
                key,
                version,
                seq,
                created_at,
                deleted: false,
                body: Some(document),
                inline: None,
            })
        }
        (None, Some(c)) if c.deleted => Some(Superseded {
            kind,
            key,
            version: c.version,
            seq: c.seq,
            created_at: c.created_at,
            deleted: true,
            body: None,
            inline: None,
        }),
        (None, _) => None,
    };
    if let Some(old) = &kept {
        versions::keep(store, old, now_ms)?;
    }
    let version = versions::next_version(store, kind)?;
    let seq = event_log::state(store)?.last_seq;
    let new = Current {
        version,
        seq,
        created_at: now_ms,
        deleted: deletes,
    };
    versions::set_current(store, kind, key, &new)?;
    retention::apply(store, kind, policy, now_ms, |_| Ok(()))?;
    Ok(version)
}

/// A kept version's document: `Ok(None)` for a deletion, 404
/// `version_not_found` for a version not kept (or of another key).
pub fn read(
    store: &impl SqlStore,
    (kind, key): (Kind, &str),
    version: u64,
) -> Result<Option<(String, i64)>, DomainError> {
    let kept = versions::find(store, kind, version)?
        .filter(|kept| kind != Kind::Memory || kept.info.key.as_deref() == Some(key))
        .ok_or_else(|| super::version_not_found(kind, version))?;
    Ok(kept.body.map(|body| (body, kept.info.created_at)))
}
