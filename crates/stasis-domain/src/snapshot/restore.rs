//! A restore of kilo.db ([`crate::restore`]): the version a point resolved
//! to becomes current again as a NEW version whose manifest names the same
//! chunks (no chunk byte is copied or written), or, when the point had no
//! kilo.db, the current one is kept as history and a deletion recorded.

use super::{HASHED_MANIFESTS, KILO_DB, StorageKind, kept, rules};
use crate::{
    DomainError,
    chunk_store::manifests::readable_until,
    history::{VersionAt, versions::Current},
    object_env::ObjectEnv,
    sql::SqlStore,
};

/// Makes kilo.db what version `target` was (`None`: no kilo.db), recorded
/// at history seq `seq`. Answers the new current version (`None` for a
/// deletion), or `Ok(None)` with `changed == false` when it already was.
pub fn restore_to(
    store: &impl SqlStore,
    target: Option<VersionAt>,
    seq: u64,
    (env, grace_ms): (&ObjectEnv, i64),
) -> Result<(Option<u64>, bool), DomainError> {
    let now = env.now_ms;
    let current = rules::current(store)?;
    match (&current, target) {
        (Some((meta, _)), Some(t)) if meta.version == t.version => {
            return Ok((Some(meta.version), false));
        }
        (None, None) => return Ok((None, false)),
        _ => {}
    }
    let readable_until = readable_until(now, grace_ms);
    kept::keep_current(store, now)?;
    // The single-key layout's current version is not kept (its key goes
    // with the write): its manifest row, if any, goes as on a push.
    if let Some((old, Some(_))) = &current {
        KILO_DB.drop_manifest(store, old.version, readable_until)?;
    }
    let version = KILO_DB.next_version(store)?;
    let Some(target) = target else {
        rules::clear_rows(store)?;
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
    let (meta, inline) = kept::find(store, target.version)?;
    let chunk_size = match meta.storage {
        StorageKind::Inline => None,
        StorageKind::Kv => {
            let (chunk_size, hashes) =
                KILO_DB.manifest(store, target.version)?.ok_or_else(|| {
                    DomainError::Storage(format!(
                        "kept kilo.db version {} has no manifest",
                        target.version
                    ))
                })?;
            KILO_DB.add_manifest(store, version, chunk_size, &hashes)?;
            if KILO_DB.is_marked(store, HASHED_MANIFESTS, target.version)? {
                KILO_DB.mark(store, HASHED_MANIFESTS, version)?;
            }
            Some(chunk_size)
        }
    };
    let (switched, _) = rules::switch(
        store,
        &rules::Switch {
            version,
            sha256: &meta.sha256,
            size: meta.size,
            event_watermark: Some(meta.event_watermark),
            inline: inline.as_deref(),
            kv_key: None,
            chunk_size,
            now_ms: now,
            readable_until,
        },
    )?;
    let restored = Current {
        version: switched.version,
        seq,
        created_at: switched.created_at,
        deleted: false,
    };
    kept::record_current(
        store,
        &restored,
        (env.now_ms, &env.retention),
        readable_until,
    )?;
    Ok((Some(version), true))
}
