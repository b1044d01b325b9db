//! Snapshot operations through the snapshot component's WIT exports.

use super::{
    bindings::from_wit_error,
    bindings::snapshot::{SnapshotComponent, exports::stasis::objects::snapshot as wit},
    calls::{SnapshotAnswer, SnapshotOp},
    guest_state::GuestState,
};
use bytes::Bytes;
use stasis_domain::{
    DomainError,
    agent::ObjectEnv,
    snapshot::{Precondition, PutRequest, SnapshotMeta, StagedSnapshot, StorageKind},
};
use wasmtime::Store;

/// Runs `op` on the component, inside the caller's savepoint.
pub fn call(
    guest: &SnapshotComponent,
    store: &mut Store<GuestState>,
    op: &mut SnapshotOp,
    env: &ObjectEnv,
) -> Result<SnapshotAnswer, DomainError> {
    let snapshot = guest.stasis_objects_snapshot();
    let trap = |err: wasmtime::Error| {
        DomainError::Storage(format!("the snapshot component trapped: {err:#}"))
    };
    let now = env.now_ms;
    match op {
        SnapshotOp::Put { request, body } => {
            // The body is copied into the guest once; our copy goes now, so
            // the host holds the request, the guest's copy and the KV write.
            let body = std::mem::take(body);
            let meta = snapshot
                .call_put(&mut *store, &to_wit_request(request), &body, now)
                .map_err(trap)?
                .map_err(from_wit_error)?;
            Ok(SnapshotAnswer::Stored(from_wit(meta)))
        }
        SnapshotOp::Stage { request, body } => {
            let body = std::mem::take(body);
            let staged = snapshot
                .call_stage(&mut *store, &to_wit_request(request), &body, now)
                .map_err(trap)?
                .map_err(from_wit_error)?;
            Ok(SnapshotAnswer::Staged(StagedSnapshot {
                version: staged.version,
                sha256: staged.sha256,
                size: staged.size,
                event_watermark: staged.event_watermark,
                kv_key: staged.kv_key,
                inline: staged.inline_bytes,
            }))
        }
        SnapshotOp::Sweep { key_prefix } => {
            snapshot
                .call_sweep(&mut *store, key_prefix.as_str(), now)
                .map_err(trap)?
                .map_err(from_wit_error)?;
            Ok(SnapshotAnswer::Done)
        }
        SnapshotOp::Get { with_bytes: false } => {
            let found = snapshot
                .call_head(&mut *store, now)
                .map_err(trap)?
                .map_err(from_wit_error)?;
            Ok(SnapshotAnswer::Found(
                found.map(|meta| (from_wit(meta), None)),
            ))
        }
        SnapshotOp::Get { with_bytes: true } => {
            let found = snapshot
                .call_get(&mut *store, now)
                .map_err(trap)?
                .map_err(from_wit_error)?;
            Ok(SnapshotAnswer::Found(found.map(|(meta, bytes)| {
                (from_wit(meta), Some(Bytes::from(bytes)))
            })))
        }
        SnapshotOp::Delete => {
            snapshot
                .call_delete(&mut *store, now)
                .map_err(trap)?
                .map_err(from_wit_error)?;
            Ok(SnapshotAnswer::Done)
        }
        SnapshotOp::Wipe => {
            snapshot
                .call_wipe(&mut *store, now)
                .map_err(trap)?
                .map_err(from_wit_error)?;
            Ok(SnapshotAnswer::Done)
        }
    }
}

fn to_wit_request(request: &PutRequest) -> wit::PutRequest {
    wit::PutRequest {
        expected_sha256: request.expected_sha256.clone(),
        precondition: request.precondition.clone().map(|p| match p {
            Precondition::Exists => wit::Precondition::Exists,
            Precondition::OneOf(etags) => wit::Precondition::OneOf(etags),
        }),
        event_watermark: request.event_watermark,
        inline_limit: request.inline_limit,
        key_prefix: request.key_prefix.clone(),
    }
}

fn from_wit(meta: wit::SnapshotMeta) -> SnapshotMeta {
    SnapshotMeta {
        version: meta.version,
        sha256: meta.sha256,
        size: meta.size,
        storage: match meta.storage {
            wit::StorageKind::Inline => StorageKind::Inline,
            wit::StorageKind::Kv => StorageKind::Kv,
        },
        event_watermark: meta.event_watermark,
        created_at: meta.created_at,
    }
}
