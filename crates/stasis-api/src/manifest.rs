//! `GET /export` and `PUT /import`: the agent manifest over HTTP.
//!
//! The domain's [`Manifest`] is the wire format: its documents (event data,
//! metadata, checkpoint, memory values) serialise as the JSON values they
//! are, written from the stored text as is.

use crate::{Objects, Snapshots, agent_http::state, error::ApiError, reply};
use base64::{Engine as _, engine::general_purpose::STANDARD};
use bytes::Bytes;
use http::{Response, StatusCode};
use stasis_domain::{
    DomainError,
    agent_state::{self, MANIFEST_FORMAT, Manifest, ManifestSnapshot, StateCall, StateReply},
    ids::AgentKey,
    snapshot::{self, PutRequest},
    town::TownCall,
};

/// `GET /export`.
pub async fn export<O: Objects + Snapshots>(
    objects: &O,
    key: &AgentKey,
) -> Result<Response<Bytes>, ApiError> {
    let mut manifest = match state(objects, key, StateCall::Export).await? {
        StateReply::Manifest(manifest) => manifest,
        other => return Err(ApiError::internal(format!("export answered {other:?}"))),
    };
    manifest.format = Some(MANIFEST_FORMAT.to_owned());
    if let Some((meta, Some(bytes))) = objects.snapshot_read(key, true).await? {
        manifest.snapshot = Some(ManifestSnapshot {
            sha256: meta.sha256,
            size: meta.size,
            event_watermark: meta.event_watermark,
            data_base64: STANDARD.encode(&bytes),
        });
    }
    let body = serde_json::to_vec(&manifest)
        .map_err(|err| ApiError::internal(format!("rendering the manifest: {err}")))?;
    Ok(reply::raw_json(StatusCode::OK, body))
}

/// `PUT /import`: replaces everything the agent has.
pub async fn import<O: Objects + Snapshots>(
    objects: &O,
    key: &AgentKey,
    body: &Bytes,
) -> Result<Response<Bytes>, ApiError> {
    let manifest: Manifest = crate::body::parse_json(body).map_err(|err| {
        if err.code == "invalid_json" {
            err
        } else {
            invalid(err.message)
        }
    })?;
    // The snapshot is checked before anything changes.
    let snapshot = match &manifest.snapshot {
        Some(s) => {
            let bytes = STANDARD
                .decode(&s.data_base64)
                .map_err(|err| invalid(format!("snapshot.data_base64: {err}")))?;
            if snapshot::sha256_hex(&bytes) != s.sha256.to_ascii_lowercase() {
                return Err(invalid(
                    "snapshot.sha256 does not match snapshot.data_base64".into(),
                ));
            }
            Some((bytes, s.sha256.clone(), s.event_watermark))
        }
        None => None,
    };
    // Checked whole before anything changes (the agent's object checks it
    // again against its retention); then the town's directory follows the
    // manifest, where the one-mayor rule may refuse it.
    agent_state::validate_manifest(&manifest, u64::MAX)?;
    let town_call = match &manifest.agent {
        Some(agent) => TownCall::RegisterAgent {
            rig_id: key.rig.clone(),
            agent_id: key.agent.clone(),
            role: agent.role.clone(),
        },
        None => TownCall::ForgetAgent {
            rig_id: key.rig.clone(),
            agent_id: key.agent.clone(),
        },
    };
    objects.town(&key.town, town_call).await?;
    let summary = match state(objects, key, StateCall::Import(manifest)).await? {
        StateReply::Imported(outcome) => outcome.summary,
        other => return Err(ApiError::internal(format!("import answered {other:?}"))),
    };
    objects.snapshot_wipe(key).await?;
    if let Some((bytes, sha256, event_watermark)) = snapshot {
        let request = PutRequest {
            expected_sha256: Some(sha256),
            precondition: None,
            event_watermark: Some(event_watermark),
            inline_limit: objects.snapshot_inline_limit(),
            key_prefix: snapshot::key_prefix(key),
        };
        objects
            .snapshot_put(key, request, Bytes::from(bytes))
            .await?;
    }
    Ok(reply::json(StatusCode::OK, &summary))
}

fn invalid(message: String) -> ApiError {
    ApiError::from(DomainError::invalid("invalid_manifest", message))
}
