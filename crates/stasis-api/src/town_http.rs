//! The town: eviction, heartbeats, the registry, its log, its agents, and
//! the Mayor's messages.

use crate::{Objects, Snapshots, body, dispatch, error::ApiError, query::Query, reply};
use bytes::Bytes;
use futures::future::try_join_all;
use http::{Method, Response, StatusCode};
use serde::{Deserialize, Serialize};
use serde_json::json;
use stasis_domain::{
    DomainError, Refusal,
    agent::{AgentCall, AgentReply},
    event_log::{AppendBatch, NewEvent},
    ids::AgentKey,
    limits, recall,
    snapshot::{self, SnapshotMeta},
    town::{MayorAction, RegistryAgent, TownCall, TownReply},
};

/// Runs a town call.
async fn town(objects: &impl Objects, town: &str, call: TownCall) -> Result<TownReply, ApiError> {
    Ok(objects.town(town, call).await?)
}

fn unexpected(reply: &impl std::fmt::Debug) -> ApiError {
    ApiError::internal(format!("the town answered with {reply:?}"))
}

/// `GET /api/towns/{town}`.
pub async fn state(objects: &impl Objects, town_id: &str) -> Result<Response<Bytes>, ApiError> {
    match town(objects, town_id, TownCall::GetState).await? {
        TownReply::State(state) => {
            let mut value =
                serde_json::to_value(&state).map_err(|e| ApiError::internal(e.to_string()))?;
            value["town_id"] = json!(town_id);
            Ok(reply::json(StatusCode::OK, &value))
        }
        other => Err(unexpected(&other)),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EvictionBody {
    container_id: String,
    #[serde(default)]
    reason: Option<String>,
}

/// `POST /container-eviction`.
pub async fn eviction(
    objects: &impl Objects,
    town_id: &str,
    body: &Bytes,
) -> Result<Response<Bytes>, ApiError> {
    let wanted: EvictionBody = body::parse_json(body)?;
    let call = TownCall::Evict {
        container_id: wanted.container_id,
        reason: wanted.reason,
    };
    match town(objects, town_id, call).await? {
        TownReply::Evicted(outcome) => Ok(reply::json(
            StatusCode::ACCEPTED,
            &json!({
                "draining": outcome.draining,
                "evicting_container_id": outcome.evicting_container_id,
                "already_draining": outcome.already_draining,
            }),
        )),
        other => Err(unexpected(&other)),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct HeartbeatBody {
    container_id: String,
}

/// `POST /heartbeat`: the dispatches released by a clearing heartbeat are
/// built now, from the agents' current state.
pub async fn heartbeat(
    objects: &impl Objects,
    town_id: &str,
    body: &Bytes,
) -> Result<Response<Bytes>, ApiError> {
    let wanted: HeartbeatBody = body::parse_json(body)?;
    let call = TownCall::Heartbeat {
        container_id: wanted.container_id,
    };
    let outcome = match town(objects, town_id, call).await? {
        TownReply::Heartbeat(outcome) => outcome,
        other => return Err(unexpected(&other)),
    };
    let pending = try_join_all(
        outcome
            .released
            .iter()
            .map(|agent| dispatch::build(objects, town_id, agent, None)),
    )
    .await?;
    Ok(reply::json(
        StatusCode::OK,
        &json!({
            "draining": outcome.draining,
            "cleared_drain": outcome.cleared_drain,
            "registry": outcome.registry,
            "pending_dispatches": pending,
        }),
    ))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RegistryBody {
    container_id: String,
    agents: Vec<RegistryAgent>,
}

/// `PUT|GET /container-registry`.
pub async fn registry(
    objects: &impl Objects,
    town_id: &str,
    method: &Method,
    body: &Bytes,
) -> Result<Response<Bytes>, ApiError> {
    let call = if *method == Method::PUT {
        let wanted: RegistryBody = body::parse_json(body)?;
        TownCall::PutRegistry {
            container_id: wanted.container_id,
            agents: wanted.agents,
        }
    } else {
        TownCall::GetRegistry
    };
    match town(objects, town_id, call).await? {
        TownReply::Registry(registry) => Ok(reply::json(StatusCode::OK, &registry)),
        other => Err(unexpected(&other)),
    }
}

/// `GET /events?after=&limit=`.
pub async fn events(
    objects: &impl Objects,
    town_id: &str,
    query: &Query,
) -> Result<Response<Bytes>, ApiError> {
    let call = TownCall::ReadEvents {
        after: query.u64("after")?.unwrap_or(0),
        limit: query
            .u64("limit")?
            .unwrap_or(u64::from(limits::DEFAULT_READ_LIMIT)),
    };
    match town(objects, town_id, call).await? {
        TownReply::Events(page) => Ok(reply::json(StatusCode::OK, &page)),
        other => Err(unexpected(&other)),
    }
}

#[derive(Serialize)]
struct AgentListing {
    rig_id: String,
    agent_id: String,
    role: String,
    last_seq: u64,
    snapshot: Option<SnapshotMeta>,
}

/// `GET /agents`: the town's directory, each agent with its log's newest
/// seq and its snapshot metadata. Needs no container.
pub async fn agents<O: Objects + Snapshots>(
    objects: &O,
    town_id: &str,
) -> Result<Response<Bytes>, ApiError> {
    let directory = match town(objects, town_id, TownCall::ListAgents).await? {
        TownReply::Agents(agents) => agents,
        other => return Err(unexpected(&other)),
    };
    let listing = try_join_all(directory.into_iter().map(|agent| async move {
        let key = AgentKey::new(town_id, &agent.rig_id, &agent.agent_id)?;
        let last_seq = match objects
            .agent(&key, AgentCall::ReadEvents(tail_probe()))
            .await?
        {
            AgentReply::Events(page) => page.last_seq,
            other => return Err(unexpected(&other)),
        };
        let snapshot = objects
            .snapshot_read(&key, false)
            .await?
            .map(|(meta, _)| meta);
        Ok::<_, ApiError>(AgentListing {
            rig_id: agent.rig_id,
            agent_id: agent.agent_id,
            role: agent.role,
            last_seq,
            snapshot,
        })
    }))
    .await?;
    Ok(reply::json(StatusCode::OK, &json!({ "agents": listing })))
}

/// A read that returns no events, only the log's bounds.
fn tail_probe() -> stasis_domain::event_log::ReadQuery {
    stasis_domain::event_log::ReadQuery {
        after: u64::MAX >> 1,
        limit: 1,
        session_id: None,
        event_type: None,
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MessageBody {
    text: String,
}

/// `POST /mayor/message`: persisted first, then delivered, re-dispatched
/// or deferred.
pub async fn mayor_message(
    objects: &impl Objects,
    town_id: &str,
    body: &Bytes,
) -> Result<Response<Bytes>, ApiError> {
    let wanted: MessageBody = body::parse_json(body)?;
    check_text(&wanted.text)?;
    let state = match town(objects, town_id, TownCall::GetState).await? {
        TownReply::State(state) => state,
        other => return Err(unexpected(&other)),
    };
    let Some(mayor) = state.mayor else {
        return Err(DomainError::NotFound(Refusal::new(
            "mayor_not_found",
            format!("town {town_id:?} has no agent with role mayor"),
        ))
        .into());
    };
    let registry = match town(objects, town_id, TownCall::GetRegistry).await? {
        TownReply::Registry(registry) => registry,
        other => return Err(unexpected(&other)),
    };
    let session_id = registry
        .agents
        .iter()
        .find(|a| a.rig_id == mayor.rig_id && a.agent_id == mayor.agent_id)
        .and_then(|a| a.session_id.clone());
    let key = AgentKey::new(town_id, &mayor.rig_id, &mayor.agent_id)?;
    let now = objects.now_ms();
    let message_id = format!(
        "stasis-user-{now}-{}",
        &snapshot::sha256_hex(wanted.text.as_bytes())[..12]
    );
    let event = NewEvent {
        event_type: recall::USER_MESSAGE_EVENT.to_owned(),
        session_id,
        data: recall::user_message_data(&message_id, &wanted.text),
    };
    let message_seq = match objects
        .agent(&key, AgentCall::AppendEvents(AppendBatch::new(vec![event])))
        .await?
    {
        AgentReply::Appended(outcome) => outcome.last_seq,
        other => return Err(unexpected(&other)),
    };
    match town(objects, town_id, TownCall::MayorMessage { message_seq }).await? {
        TownReply::MayorMessage(MayorAction::Deferred) => Ok(reply::json(
            StatusCode::ACCEPTED,
            &json!({"action": "deferred"}),
        )),
        TownReply::MayorMessage(MayorAction::Deliver {
            session_id,
            container_id,
        }) => Ok(reply::json(
            StatusCode::OK,
            &json!({
                "action": "deliver",
                "session_id": session_id,
                "container_id": container_id,
            }),
        )),
        TownReply::MayorMessage(MayorAction::Redispatch { agent }) => {
            let dispatch = dispatch::build(objects, town_id, &agent, None).await?;
            Ok(reply::json(
                StatusCode::OK,
                &json!({"action": "redispatch", "dispatch": dispatch}),
            ))
        }
        other => Err(unexpected(&other)),
    }
}

fn check_text(text: &str) -> Result<(), ApiError> {
    if text.trim().is_empty() {
        return Err(ApiError::invalid_request("text must not be empty"));
    }
    if u64::try_from(text.len()).unwrap_or(u64::MAX) > limits::MAX_EVENT_BYTES - 1024 {
        return Err(DomainError::too_large(
            "message_too_large",
            format!(
                "a message may hold at most {} bytes",
                limits::MAX_EVENT_BYTES - 1024
            ),
            limits::MAX_EVENT_BYTES - 1024,
        )
        .into());
    }
    Ok(())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DispatchBody {
    #[serde(default)]
    text: Option<String>,
}

/// `POST /rigs/{rig}/agents/{agent}/dispatch`: refused while draining.
pub async fn dispatch_agent(
    objects: &impl Objects,
    key: &AgentKey,
    body: &Bytes,
) -> Result<Response<Bytes>, ApiError> {
    let wanted: DispatchBody = body::parse_optional_json(body)?;
    if let Some(text) = &wanted.text {
        check_text(text)?;
    }
    let call = TownCall::Dispatch {
        rig_id: key.rig.clone(),
        agent_id: key.agent.clone(),
    };
    let agent = match town(objects, &key.town, call).await? {
        TownReply::Dispatched(agent) => agent,
        other => return Err(unexpected(&other)),
    };
    let dispatch = dispatch::build(objects, &key.town, &agent, wanted.text.as_deref()).await?;
    Ok(reply::json(
        StatusCode::OK,
        &json!({ "dispatch": dispatch }),
    ))
}
