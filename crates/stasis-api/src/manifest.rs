//! `GET /export` and `PUT /import`: the agent manifest over HTTP.
//!
//! The domain keeps documents (event data, metadata, checkpoint, memory
//! values) as JSON text; the manifest on the wire carries them as JSON
//! values. The two differ only in those fields, which are converted here.

use crate::{Objects, Snapshots, agent_http::state, error::ApiError, reply};
use base64::{Engine as _, engine::general_purpose::STANDARD};
use bytes::Bytes;
use http::{Response, StatusCode};
use serde_json::{Map, Value, json};
use stasis_domain::{
    DomainError,
    agent_state::{self, MANIFEST_FORMAT, Manifest, StateCall, StateReply},
    ids::AgentKey,
    snapshot::{self, PutRequest},
    town::TownCall,
};

/// Where documents sit in a manifest: (list field, document field); an
/// empty list field means a top-level document.
const DOCUMENT_FIELDS: &[(&str, &str)] = &[
    ("events", "data"),
    ("sessions", "metadata"),
    ("memory", "value"),
    ("agent", "metadata"),
    ("", "checkpoint"),
];

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
    let mut value =
        serde_json::to_value(&manifest).map_err(|err| ApiError::internal(err.to_string()))?;
    convert_documents(&mut value, |text| {
        serde_json::from_str(text.as_str().unwrap_or("null")).unwrap_or(Value::Null)
    });
    if let Some((meta, Some(bytes))) = objects.snapshot_read(key, true).await? {
        value["snapshot"] = json!({
            "sha256": meta.sha256,
            "size": meta.size,
            "event_watermark": meta.event_watermark,
            "data_base64": STANDARD.encode(&bytes),
        });
    }
    Ok(reply::json(StatusCode::OK, &value))
}

/// `PUT /import`: replaces everything the agent has.
pub async fn import<O: Objects + Snapshots>(
    objects: &O,
    key: &AgentKey,
    body: &Bytes,
) -> Result<Response<Bytes>, ApiError> {
    let mut value: Value = crate::body::parse_json(body).map_err(|err| {
        if err.code == "invalid_json" {
            err
        } else {
            invalid(err.message)
        }
    })?;
    if !value.is_object() {
        return Err(invalid("the manifest must be a JSON object".into()));
    }
    convert_documents(&mut value, |document| Value::String(document.to_string()));
    let manifest: Manifest =
        serde_json::from_value(value).map_err(|err| invalid(err.to_string()))?;
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

/// Applies `convert` to every document field present in the manifest.
fn convert_documents(manifest: &mut Value, convert: impl Fn(&Value) -> Value) {
    let Some(top) = manifest.as_object_mut() else {
        return;
    };
    for (list, field) in DOCUMENT_FIELDS {
        match *list {
            "" => convert_field(top, field, &convert),
            "agent" => {
                if let Some(Value::Object(agent)) = top.get_mut("agent") {
                    convert_field(agent, field, &convert);
                }
            }
            list => {
                if let Some(Value::Array(items)) = top.get_mut(list) {
                    for item in items {
                        if let Value::Object(item) = item {
                            convert_field(item, field, &convert);
                        }
                    }
                }
            }
        }
    }
}

fn convert_field(object: &mut Map<String, Value>, field: &str, convert: &impl Fn(&Value) -> Value) {
    if let Some(value) = object.get_mut(field)
        && !(field == "checkpoint" && value.is_null())
    {
        *value = convert(value);
    }
}
