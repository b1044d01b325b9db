//! The snapshot component: WIT records in, the domain's snapshot saga over
//! the `sql` and `kv-store` imports, WIT records out. Every rule lives in
//! `stasis_domain::snapshot`.

#[allow(missing_docs, unsafe_code, reason = "generated bindings")]
mod bindings {
    wit_bindgen::generate!({
        world: "snapshot-component",
        path: "../../wit",
        with: {
            "stasis:objects/types@0.1.0": stasis_guest::bindings::stasis::objects::types,
            "stasis:objects/sql@0.1.0": stasis_guest::bindings::stasis::objects::sql,
            "stasis:objects/kv-store@0.1.0": stasis_guest::bindings::stasis::objects::kv_store,
        },
    });
}

use bindings::exports::stasis::objects::snapshot::{
    Guest, Precondition, PutRequest, SnapshotMeta, StagedSnapshot, StorageKind,
};
use stasis_domain::{
    DomainError,
    agent::ObjectEnv,
    snapshot::{
        self as domain, KV_BUCKET,
        saga::{self, LocalObject},
    },
};
use stasis_guest::{ImportedKv, ImportedSql, bindings::stasis::objects::types::Error, run};

struct Snapshot;

/// Runs a saga step over this object's imports, at `now`.
fn with_ports<T>(
    now: i64,
    f: impl AsyncFnOnce(&LocalObject<'_, ImportedSql>, &ImportedKv) -> Result<T, DomainError>,
) -> Result<T, Error> {
    run(|| {
        let kv = ImportedKv::open(KV_BUCKET)?;
        let object = LocalObject {
            store: &ImportedSql,
            env: ObjectEnv {
                now_ms: now,
                // Snapshot calls never append, so retention does not apply.
                max_events: u64::MAX,
            },
        };
        saga::run_ready(f(&object, &kv))?
    })
}

impl Guest for Snapshot {
    fn put(request: PutRequest, body: Vec<u8>, now: i64) -> Result<SnapshotMeta, Error> {
        let request = from_wit_request(request);
        let meta = with_ports(now, async |object, kv| {
            saga::put(object, kv, &request, &body).await
        })?;
        Ok(to_wit(meta))
    }

    fn stage(request: PutRequest, body: Vec<u8>, now: i64) -> Result<StagedSnapshot, Error> {
        let request = from_wit_request(request);
        let staged = with_ports(now, async |object, kv| {
            saga::stage(object, kv, &request, &body).await
        })?;
        Ok(StagedSnapshot {
            version: staged.version,
            sha256: staged.sha256,
            size: staged.size,
            event_watermark: staged.event_watermark,
            kv_key: staged.kv_key,
            inline_bytes: staged.inline,
        })
    }

    fn head(now: i64) -> Result<Option<SnapshotMeta>, Error> {
        let found = with_ports(now, async |object, kv| saga::get(object, kv, false).await)?;
        Ok(found.map(|(meta, _)| to_wit(meta)))
    }

    fn get(now: i64) -> Result<Option<(SnapshotMeta, Vec<u8>)>, Error> {
        let found = with_ports(now, async |object, kv| saga::get(object, kv, true).await)?;
        Ok(found.map(|(meta, bytes)| (to_wit(meta), bytes.unwrap_or_default())))
    }

    fn delete(now: i64) -> Result<(), Error> {
        with_ports(now, async |object, kv| saga::delete(object, kv).await)
    }

    fn sweep(key_prefix: String, now: i64) -> Result<u32, Error> {
        with_ports(now, async |object, kv| {
            saga::sweep(object, kv, &key_prefix).await
        })
    }

    fn wipe(now: i64) -> Result<(), Error> {
        with_ports(now, async |object, kv| saga::wipe(object, kv).await)
    }
}

fn from_wit_request(request: PutRequest) -> domain::PutRequest {
    domain::PutRequest {
        expected_sha256: request.expected_sha256,
        precondition: request.precondition.map(|p| match p {
            Precondition::Exists => domain::Precondition::Exists,
            Precondition::OneOf(etags) => domain::Precondition::OneOf(etags),
        }),
        event_watermark: request.event_watermark,
        inline_limit: request.inline_limit,
        key_prefix: request.key_prefix,
    }
}

fn to_wit(meta: domain::SnapshotMeta) -> SnapshotMeta {
    SnapshotMeta {
        version: meta.version,
        sha256: meta.sha256,
        size: meta.size,
        storage: match meta.storage {
            domain::StorageKind::Inline => StorageKind::Inline,
            domain::StorageKind::Kv => StorageKind::Kv,
        },
        event_watermark: meta.event_watermark,
        created_at: meta.created_at,
    }
}

#[allow(unsafe_code, reason = "the export glue wit-bindgen generates")]
mod export {
    use super::Snapshot;
    crate::bindings::export!(Snapshot with_types_in crate::bindings);
}
