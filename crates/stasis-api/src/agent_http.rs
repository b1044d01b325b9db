//! The agent's record, sessions, checkpoint, memory and conversation.

#![allow(
    clippy::disallowed_macros,
    clippy::disallowed_methods,
    reason = "the JsonSchema derive builds its schemas with json! and to_value over our own types, never stored data"
)]

use crate::{
    Objects, Snapshots,
    body::{self, raw},
    error::ApiError,
    query::Query,
    reply, summariser,
};
use bytes::Bytes;
use http::{Method, Response, StatusCode};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use stasis_domain::{
    DomainError, Refusal,
    agent_state::{AgentSummary, MemoryEntry, SessionRecord},
    conversation::Budget,
    fork::ForkedFrom,
    ids::AgentKey,
    operation::{agent as op, town as town_op},
    snapshot::SnapshotMeta,
};

fn no_content() -> Response<Bytes> {
    let mut response = Response::new(Bytes::new());
    *response.status_mut() = StatusCode::NO_CONTENT;
    response
}

/// The agent as `GET` shows it.
#[derive(Serialize, schemars::JsonSchema)]
pub(crate) struct AgentView<'a> {
    town_id: &'a str,
    rig_id: &'a str,
    agent_id: &'a str,
    role: String,
    metadata: Box<RawValue>,
    created_at: i64,
    updated_at: i64,
    last_seq: u64,
    event_count: u64,
    snapshot: Option<SnapshotMeta>,
    has_checkpoint: bool,
    workspace: Option<crate::workspace_http::SummaryView>,
    /// Where the agent was forked from, when it is a fork.
    #[serde(skip_serializing_if = "Option::is_none")]
    forked_from: Option<ForkedFrom>,
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct AgentBody {
    role: String,
    #[serde(default)]
    metadata: Option<Box<RawValue>>,
}

/// `PUT|GET|DELETE /agents/{agent}`.
pub async fn record<O: Objects + Snapshots>(
    objects: &O,
    key: &AgentKey,
    method: &Method,
    body: &Bytes,
) -> Result<Response<Bytes>, ApiError> {
    match *method {
        Method::PUT => {
            let wanted: AgentBody = body::parse_json(body)?;
            let metadata = wanted.metadata.map(|m| m.get().to_owned());
            // A refused registration must not reach the town's agent list.
            stasis_domain::agent_state::check_registration(&wanted.role, metadata.as_deref())?;
            // The town holds the one-mayor rule, so it is asked first.
            let register =
                town_op::register_agent(key.rig.clone(), key.agent.clone(), wanted.role.clone());
            objects.town(&key.town, register).await?;
            let record = objects
                .agent(key, op::put_agent(wanted.role, metadata))
                .await?;
            let status = if record.created {
                StatusCode::CREATED
            } else {
                StatusCode::OK
            };
            view(objects, key, status).await
        }
        Method::DELETE => destroy(objects, key).await,
        _ => view(objects, key, StatusCode::OK).await,
    }
}

/// The agent's summary, or 404 `agent_not_found`.
pub async fn summary(objects: &impl Objects, key: &AgentKey) -> Result<AgentSummary, ApiError> {
    Ok(objects.agent(key, op::get_agent()).await?)
}

pub(crate) async fn view<O: Objects + Snapshots>(
    objects: &O,
    key: &AgentKey,
    status: StatusCode,
) -> Result<Response<Bytes>, ApiError> {
    let summary = summary(objects, key).await?;
    let snapshot = objects
        .snapshot_read(key, false)
        .await?
        .map(|(meta, _)| meta);
    let workspace = crate::workspace_http::summary(objects, key).await?;
    let forked_from = objects
        .agent(key, op::fork_lineage())
        .await?
        .map(|lineage| lineage.forked_from);
    Ok(reply::json(
        status,
        &AgentView {
            town_id: &key.town,
            rig_id: &key.rig,
            agent_id: &key.agent,
            role: summary.role,
            metadata: raw(summary.metadata),
            created_at: summary.created_at,
            updated_at: summary.updated_at,
            last_seq: summary.last_seq,
            event_count: summary.event_count,
            snapshot,
            has_checkpoint: summary.has_checkpoint,
            workspace,
            forked_from,
        },
    ))
}

/// Everything of the agent goes: its object's rows, its KV keys, its place
/// in the town.
async fn destroy<O: Objects + Snapshots>(
    objects: &O,
    key: &AgentKey,
) -> Result<Response<Bytes>, ApiError> {
    let had_stored = objects.snapshot_read(key, false).await?.is_some()
        || crate::workspace_http::summary(objects, key)
            .await?
            .is_some();
    let existed = objects.agent(key, op::destroy_agent()).await?.existed;
    // The wipe takes the workspace's versions too, then every chunk.
    if had_stored {
        objects.snapshot_wipe(key).await?;
    }
    // Only once the fork names nothing: its holds in its origins go (a
    // destroy cut short keeps the lineage, and a retried one ends this).
    let was_fork = crate::fork_chunks::release_lineage(objects, key).await?;
    let forget = town_op::forget_agent(key.rig.clone(), key.agent.clone());
    let forgotten = objects.town(&key.town, forget).await?;
    if !(existed || had_stored || forgotten || was_fork) {
        return Err(DomainError::NotFound(Refusal::new(
            "agent_not_found",
            format!("agent {:?} has nothing to destroy", key.agent),
        ))
        .into());
    }
    Ok(no_content())
}

/// A session as the API shows it.
#[derive(Serialize, schemars::JsonSchema)]
pub(crate) struct SessionView {
    session_id: String,
    status: String,
    metadata: Box<RawValue>,
    first_seq: u64,
    last_seq: u64,
    event_count: u64,
    created_at: i64,
    updated_at: i64,
}

impl From<SessionRecord> for SessionView {
    fn from(s: SessionRecord) -> Self {
        Self {
            session_id: s.session_id,
            status: s.status,
            metadata: raw(s.metadata),
            first_seq: s.first_seq,
            last_seq: s.last_seq,
            event_count: s.event_count,
            created_at: s.created_at,
            updated_at: s.updated_at,
        }
    }
}

#[derive(Serialize, schemars::JsonSchema)]
pub(crate) struct SessionsView {
    sessions: Vec<SessionView>,
}

/// `GET /sessions`.
pub async fn sessions(objects: &impl Objects, key: &AgentKey) -> Result<Response<Bytes>, ApiError> {
    let list = objects.agent(key, op::list_sessions()).await?;
    let sessions = list.into_iter().map(SessionView::from).collect();
    Ok(reply::json(StatusCode::OK, &SessionsView { sessions }))
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SessionBody {
    /// Raw, so that an explicit `null` is refused rather than ignored.
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "Option<SessionStatus>")]
    status: Option<Box<RawValue>>,
    #[serde(default)]
    metadata: Option<Box<RawValue>>,
}

/// The statuses a session may be given (the schema of
/// [`SessionBody::status`]; the domain checks the value).
#[derive(schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
#[expect(dead_code, reason = "only its schema is used")]
enum SessionStatus {
    Running,
    Completed,
    Failed,
    Closed,
}

/// A field that was given, `null` included.
fn present<'de, D: serde::Deserializer<'de>>(input: D) -> Result<Option<Box<RawValue>>, D::Error> {
    Box::<RawValue>::deserialize(input).map(Some)
}

/// `PUT|GET|DELETE /sessions/{session}`.
pub async fn session(
    objects: &impl Objects,
    key: &AgentKey,
    session_id: &str,
    method: &Method,
    body: &Bytes,
) -> Result<Response<Bytes>, ApiError> {
    let session_id = session_id.to_owned();
    let record = match *method {
        Method::PUT => {
            let wanted: SessionBody = body::parse_json(body)?;
            let status = wanted
                .status
                .map(|raw| {
                    serde_json::from_str::<String>(raw.get()).map_err(|_| {
                        ApiError::invalid_request(format!(
                            "status must be one of running, completed, failed, closed; got {}",
                            raw.get()
                        ))
                    })
                })
                .transpose()?;
            let metadata = wanted.metadata.map(|m| m.get().to_owned());
            let put = op::put_session(session_id, status, metadata);
            objects.agent(key, put).await?
        }
        Method::DELETE => {
            objects.agent(key, op::delete_session(session_id)).await?;
            return Ok(no_content());
        }
        _ => objects.agent(key, op::get_session(session_id)).await?,
    };
    Ok(reply::json(StatusCode::OK, &SessionView::from(record)))
}

/// `PUT|GET|DELETE /checkpoint`.
pub async fn checkpoint(
    objects: &impl Objects,
    key: &AgentKey,
    (method, query): (&Method, &Query),
    body: &Bytes,
) -> Result<Response<Bytes>, ApiError> {
    match *method {
        Method::PUT => {
            let put = op::put_checkpoint(body::json_text(body)?);
            let stored = objects.agent(key, put).await?;
            Ok(reply::json(StatusCode::OK, &stored))
        }
        Method::DELETE => {
            objects.agent(key, op::delete_checkpoint()).await?;
            Ok(no_content())
        }
        _ => {
            let checkpoint = match query.u64("version")? {
                Some(version) => {
                    objects
                        .agent(key, op::get_checkpoint_version(version))
                        .await?
                }
                None => objects.agent(key, op::get_checkpoint()).await?,
            };
            let document = checkpoint.document.into_bytes();
            Ok(reply::raw_json(StatusCode::OK, document))
        }
    }
}

/// A memory entry as the API shows it.
#[derive(Serialize, schemars::JsonSchema)]
pub(crate) struct MemoryView {
    key: String,
    value: Box<RawValue>,
    updated_at: i64,
}

impl From<MemoryEntry> for MemoryView {
    fn from(entry: MemoryEntry) -> Self {
        Self {
            key: entry.key,
            value: raw(entry.value),
            updated_at: entry.updated_at,
        }
    }
}

#[derive(Serialize, schemars::JsonSchema)]
pub(crate) struct MemoryListView {
    entries: Vec<MemoryView>,
}

/// `PUT|GET|DELETE /memory/{key}`.
pub async fn memory_entry(
    objects: &impl Objects,
    key: &AgentKey,
    memory_key: &str,
    (method, query): (&Method, &Query),
    body: &Bytes,
) -> Result<Response<Bytes>, ApiError> {
    let memory_key = memory_key.to_owned();
    let entry = match *method {
        Method::PUT => {
            let put = op::put_memory(memory_key, body::json_text(body)?);
            objects.agent(key, put).await?
        }
        Method::DELETE => {
            objects.agent(key, op::delete_memory(memory_key)).await?;
            return Ok(no_content());
        }
        _ => match query.u64("version")? {
            Some(version) => {
                let read = op::get_memory_version(memory_key, version);
                objects.agent(key, read).await?
            }
            None => objects.agent(key, op::get_memory(memory_key)).await?,
        },
    };
    Ok(reply::json(StatusCode::OK, &MemoryView::from(entry)))
}

/// `GET /memory?prefix=&q=&limit=`.
pub async fn memory_list(
    objects: &impl Objects,
    key: &AgentKey,
    query: &Query,
) -> Result<Response<Bytes>, ApiError> {
    let limit = query
        .u64("limit")?
        .map(|l| u32::try_from(l).unwrap_or(u32::MAX));
    let list = op::list_memory(
        query.text("prefix").map(str::to_owned),
        query.text("q").map(str::to_owned),
        limit,
    );
    let entries = objects.agent(key, list).await?;
    let entries = entries.into_iter().map(MemoryView::from).collect();
    Ok(reply::json(StatusCode::OK, &MemoryListView { entries }))
}

/// `GET /conversation?max_turns=&max_tokens=&session_id=&summarise=`: with
/// `summarise=true`, the omitted turns summarised as in a dispatch.
pub async fn conversation(
    objects: &impl Objects,
    key: &AgentKey,
    query: &Query,
) -> Result<Response<Bytes>, ApiError> {
    let max_turns = query
        .u64("max_turns")?
        .map(|t| u32::try_from(t).unwrap_or(u32::MAX));
    let budget = Budget::from_options(max_turns, query.u64("max_tokens")?)?;
    let session_id = query.id("session_id")?;
    let conversation = match (query.flag("summarise")?, objects.summariser()) {
        (false, _) => {
            objects
                .agent(key, op::conversation(budget, session_id))
                .await?
        }
        (true, None) => summariser::not_configured(
            objects
                .agent(key, op::conversation(budget, session_id))
                .await?,
        ),
        (true, Some(_)) => {
            let call = op::summarised_conversation(budget, session_id);
            let recalled = objects.agent(key, call).await?;
            summariser::settle(objects, key, recalled.conversation, recalled.work).await
        }
    };
    Ok(reply::json(StatusCode::OK, &conversation))
}
