//! `POST .../agents/{agent}/restore`: restore an agent in place to a point
//! (a seq, a time, a version) or to a pin (an undo handle), and what the
//! API decides before the agent object runs it: whether a live container
//! holds the agent (see `docs/restore.md`).

#![allow(
    clippy::disallowed_macros,
    clippy::disallowed_methods,
    reason = "the JsonSchema derive builds its schemas with json! and to_value over our own types, never stored data"
)]

use crate::{Objects, Snapshots, body, error::ApiError, reply};
use bytes::Bytes;
use http::{Response, StatusCode};
use serde::Deserialize;
use stasis_domain::{
    history::{Kind, Point, PointBody},
    ids::AgentKey,
    operation::{agent as op, town},
    restore::{RestoreCall, RestoreTo},
    town::Standing,
};

/// The body of a restore: exactly one of `seq`, `at`, `kind` with
/// `version` (and `key` for memory), or `pin`; `fence` to restore an agent
/// a live container holds.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RestoreBody {
    /// A seq of the log (at most its last).
    #[serde(default)]
    seq: Option<u64>,
    /// A time, ms since the epoch.
    #[serde(default)]
    at: Option<i64>,
    /// The kind of `version`.
    #[serde(default)]
    kind: Option<Kind>,
    /// A version of `kind`: the point is the moment it was written.
    #[serde(default)]
    version: Option<u64>,
    /// The memory key `version` belongs to (checked; memory only).
    #[serde(default)]
    key: Option<String>,
    /// A pin: restore to its seq. An undo handle is one.
    #[serde(default)]
    pin: Option<String>,
    /// Restore even though a live container holds the agent: the holder is
    /// fenced from the agent first (its next write is refused 409
    /// `container_fenced`, and its supervisor stops its runtime).
    #[serde(default)]
    fence: bool,
}

/// `POST /restore`.
pub async fn restore(
    objects: &impl Snapshots,
    key: &AgentKey,
    body: &Bytes,
) -> Result<Response<Bytes>, ApiError> {
    let wanted: RestoreBody = body::parse_json(body)?;
    let point = PointBody {
        seq: wanted.seq,
        at: wanted.at,
        kind: wanted.kind,
        version: wanted.version,
        key: wanted.key,
    };
    let to = match wanted.pin {
        Some(pin) if point == PointBody::default() => RestoreTo::Pin(pin),
        Some(_) => {
            return Err(ApiError::invalid_request(
                "a restore names a pin or a point, not both",
            ));
        }
        None => RestoreTo::Point(Point::try_from(point)?),
    };
    let fence_epoch = match (live_epoch(objects, &key.town).await?, wanted.fence) {
        (None, _) => None,
        (Some(epoch), true) => Some(epoch + 1),
        (Some(_), false) => {
            return Err(ApiError::new(
                StatusCode::CONFLICT,
                "agent_live",
                "a live container holds the agent: stop it first, or send \"fence\": true to \
                 fence it (its runtime stops at its next write) and restore",
            ));
        }
    };
    let call = RestoreCall {
        to,
        grace_ms: objects.snapshot_grace_ms(),
        fence_epoch,
    };
    let restored = objects.agent(key, op::restore(call)).await?;
    Ok(reply::json(StatusCode::OK, &restored))
}

/// The epoch of the town's current container when it is alive (it heartbeat
/// within the liveness timeout): that container holds every agent of the
/// town live.
async fn live_epoch(objects: &impl Objects, town_id: &str) -> Result<Option<u64>, ApiError> {
    let state = objects.town(town_id, town::get_state()).await?;
    let timeout = objects.liveness_timeout_ms();
    let Some(container_id) = state.current_container_id.clone() else {
        return Ok(None);
    };
    if !state.container_alive(objects.now_ms(), timeout) {
        return Ok(None);
    }
    match objects.town(town_id, town::standing(container_id)).await? {
        Standing::Current { epoch } => Ok(Some(epoch)),
        _ => Ok(None),
    }
}
