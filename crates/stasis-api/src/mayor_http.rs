//! Messages for the Mayor or any agent's inbox, and explicit dispatches of
//! one agent.

#![allow(
    clippy::disallowed_macros,
    clippy::disallowed_methods,
    reason = "the JsonSchema derive builds its schemas with json! and to_value over our own types, never stored data"
)]

use crate::{
    Objects, body,
    dispatch::{self, Dispatch},
    error::ApiError,
    idempotency,
};
use bytes::Bytes;
use http::{HeaderMap, Response, StatusCode};
use serde::{Deserialize, Serialize};
use stasis_domain::{
    DomainError, Refusal,
    chunk_store::sha256_hex,
    event_log::{AppendBatch, NewEvent, ProducerStamp},
    ids::AgentKey,
    limits,
    operation::{agent as agent_op, town as op},
    recall,
    town::MayorAction,
};

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct MessageBody {
    text: String,
}

/// What became of a Mayor message, as the API shows it.
#[derive(Serialize, schemars::JsonSchema)]
#[serde(tag = "action", rename_all = "snake_case")]
pub(crate) enum MessageView {
    Deferred,
    Deliver {
        session_id: String,
        container_id: String,
    },
    Redispatch {
        // Boxed: a dispatch is far larger than the other answers.
        dispatch: Box<Dispatch>,
    },
}

/// `POST /mayor/message`: persisted first, then delivered, re-dispatched
/// or deferred. With an `Idempotency-Key`, a retry appends nothing and gets
/// the same route: the append carries a producer stamp made from the key,
/// and the town routes a message (by its seq) once.
pub async fn mayor_message(
    objects: &impl Objects,
    town_id: &str,
    headers: &HeaderMap,
    body: &Bytes,
) -> Result<Response<Bytes>, ApiError> {
    let wanted: MessageBody = body::parse_json(body)?;
    check_text(&wanted.text)?;
    let retry_key = idempotency::key(headers)?;
    let state = objects.town(town_id, op::get_state()).await?;
    let mayor = state.mayor.ok_or_else(|| {
        DomainError::NotFound(Refusal::new(
            "mayor_not_found",
            format!("town {town_id:?} has no agent with role mayor"),
        ))
    })?;
    let key = AgentKey::new(town_id, &mayor.rig_id, &mayor.agent_id)?;
    let liveness = objects.liveness_timeout_ms();
    let message = Message {
        text: &wanted.text,
        retry_key: retry_key.as_deref(),
    };
    let action = persist_and_route(objects, &key, message, |seq| {
        op::mayor_message(seq, liveness)
    })
    .await?;
    render(objects, town_id, action).await
}

/// `POST /rigs/{rig}/agents/{agent}/inbox`: a message for any registered
/// agent, persisted and routed exactly as a Mayor message is (for the
/// Mayor, it is one). The agent must be in the town's directory (404
/// `agent_not_found`, and nothing is written).
pub async fn agent_inbox(
    objects: &impl Objects,
    key: &AgentKey,
    headers: &HeaderMap,
    body: &Bytes,
) -> Result<Response<Bytes>, ApiError> {
    let wanted: MessageBody = body::parse_json(body)?;
    check_text(&wanted.text)?;
    let retry_key = idempotency::key(headers)?;
    let directory = objects.town(&key.town, op::list_agents()).await?;
    if !directory
        .iter()
        .any(|a| a.rig_id == key.rig && a.agent_id == key.agent)
    {
        return Err(DomainError::NotFound(Refusal::new(
            "agent_not_found",
            format!(
                "agent {:?} of rig {:?} is not registered in town {:?}",
                key.agent, key.rig, key.town
            ),
        ))
        .into());
    }
    let liveness = objects.liveness_timeout_ms();
    let message = Message {
        text: &wanted.text,
        retry_key: retry_key.as_deref(),
    };
    let action = persist_and_route(objects, key, message, |seq| {
        op::agent_message(key.rig.clone(), key.agent.clone(), seq, liveness)
    })
    .await?;
    render(objects, &key.town, action).await
}

/// A user's message on its way into an agent's log.
struct Message<'a> {
    text: &'a str,
    retry_key: Option<&'a str>,
}

/// Appends the message to the agent's log as a user message (in the
/// agent's registry session, if it has one), then lets the town route it
/// by its seq (`route` builds the town call).
async fn persist_and_route<O: Objects>(
    objects: &O,
    key: &AgentKey,
    message: Message<'_>,
    route: impl FnOnce(u64) -> op::TownOperation<MayorAction>,
) -> Result<MayorAction, ApiError> {
    let registry = objects.town(&key.town, op::get_registry()).await?;
    let session_id = registry
        .agents
        .iter()
        .find(|a| a.rig_id == key.rig && a.agent_id == key.agent)
        .and_then(|a| a.session_id.clone());
    let message_id = format!(
        "stasis-user-{}-{}",
        objects.now_ms(),
        &sha256_hex(message.text.as_bytes())[..12]
    );
    let batch = AppendBatch {
        events: vec![NewEvent {
            event_type: recall::USER_MESSAGE_EVENT.to_owned(),
            session_id,
            data: recall::user_message_data(&message_id, message.text),
        }],
        producer: message.retry_key.map(message_stamp),
    };
    let appended = objects.agent(key, agent_op::append_events(batch)).await?;
    Ok(objects.town(&key.town, route(appended.last_seq)).await?)
}

/// The answer to a routed message: 202 `deferred`, or 200 `deliver` /
/// `redispatch` (with the dispatch built now).
async fn render(
    objects: &impl Objects,
    town_id: &str,
    action: MayorAction,
) -> Result<Response<Bytes>, ApiError> {
    let view = match action {
        MayorAction::Deferred => {
            return Ok(crate::reply::json(
                StatusCode::ACCEPTED,
                &MessageView::Deferred,
            ));
        }
        MayorAction::Deliver {
            session_id,
            container_id,
        } => MessageView::Deliver {
            session_id,
            container_id,
        },
        MayorAction::Redispatch { agent } => MessageView::Redispatch {
            dispatch: Box::new(dispatch::build(objects, town_id, &agent, None).await?),
        },
    };
    Ok(crate::reply::json(StatusCode::OK, &view))
}

/// The producer stamp of a message sent with `key` (to the Mayor or any
/// inbox): a producer of its own per key in the agent's log (a hash, so any
/// key fits an id), whose one batch is seq 0.
fn message_stamp(key: &str) -> ProducerStamp {
    ProducerStamp {
        producer_id: format!("mayor-message-{}", &sha256_hex(key.as_bytes())[..32]),
        producer_seq: 0,
    }
}

fn check_text(text: &str) -> Result<(), ApiError> {
    if text.trim().is_empty() {
        return Err(ApiError::invalid_request("text must not be empty"));
    }
    let limit = limits::MAX_EVENT_BYTES - 1024;
    if u64::try_from(text.len()).unwrap_or(u64::MAX) > limit {
        return Err(DomainError::too_large(
            "message_too_large",
            format!("a message may hold at most {limit} bytes"),
            limit,
        )
        .into());
    }
    Ok(())
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct DispatchBody {
    #[serde(default)]
    text: Option<String>,
}

#[derive(Serialize, schemars::JsonSchema)]
pub(crate) struct DispatchView {
    dispatch: Dispatch,
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
    let call = op::dispatch(key.rig.clone(), key.agent.clone());
    let agent = objects.town(&key.town, call).await?;
    let dispatch = dispatch::build(objects, &key.town, &agent, wanted.text.as_deref()).await?;
    Ok(crate::reply::json(
        StatusCode::OK,
        &DispatchView { dispatch },
    ))
}
