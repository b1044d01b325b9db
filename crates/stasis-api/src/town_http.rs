//! The town: eviction, heartbeats, the registry, its log and its agents.

#![allow(
    clippy::disallowed_macros,
    clippy::disallowed_methods,
    reason = "the JsonSchema derive builds its schemas with json! and to_value over our own types, never stored data"
)]

use crate::{
    Objects, Snapshots, auth::Caller, body, dispatch, dispatch::Dispatch, error::ApiError,
    idempotency, query::Query, reply,
};
use bytes::Bytes;
use futures::{StreamExt, TryStreamExt, future::try_join_all};
use http::{HeaderMap, Method, Response, StatusCode};
use serde::{Deserialize, Serialize};
use stasis_domain::{
    ids::AgentKey,
    limits,
    operation::{agent as agent_op, town as op},
    snapshot::SnapshotMeta,
    town::{Registry, RegistryAgent, TownState},
};

/// The town as `GET` shows it.
#[derive(Serialize, schemars::JsonSchema)]
pub(crate) struct StateView<'a> {
    town_id: &'a str,
    #[serde(flatten)]
    state: TownState,
    /// The current container heartbeat within the liveness timeout (the
    /// runtime's `STASIS_LIVENESS_TIMEOUT_SECS`, 60 s by default).
    container_alive: bool,
}

/// `GET /api/towns/{town}`.
pub async fn state(objects: &impl Objects, town_id: &str) -> Result<Response<Bytes>, ApiError> {
    let state = objects.town(town_id, op::get_state()).await?;
    let container_alive = state.container_alive(objects.now_ms(), objects.liveness_timeout_ms());
    let view = StateView {
        town_id,
        state,
        container_alive,
    };
    Ok(reply::json(StatusCode::OK, &view))
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct EvictionBody {
    /// Omitted (or an empty body): the current container.
    #[serde(default)]
    container_id: Option<String>,
    #[serde(default)]
    reason: Option<String>,
}

#[derive(Serialize, schemars::JsonSchema)]
pub(crate) struct EvictionView {
    draining: bool,
    evicting_container_id: Option<String>,
    already_draining: bool,
}

/// `POST /container-eviction`; an empty body evicts the current container,
/// or, with a container token, the token's container (`bound`): a container
/// token may evict only its own container.
pub async fn eviction(
    objects: &impl Objects,
    town_id: &str,
    bound: Option<&str>,
    body: &Bytes,
) -> Result<Response<Bytes>, ApiError> {
    let wanted: EvictionBody = body::parse_optional_json(body)?;
    let container_id = match (bound, wanted.container_id) {
        (Some(own), Some(named)) if named != own => {
            return Err(crate::auth::forbidden(
                "other_container",
                format!("this token is bound to container {own:?}, not {named:?}"),
            ));
        }
        (Some(own), _) => Some(own.to_owned()),
        (None, named) => named,
    };
    let evict = op::evict(container_id, wanted.reason);
    let outcome = objects.town(town_id, evict).await?;
    Ok(reply::json(
        StatusCode::ACCEPTED,
        &EvictionView {
            draining: outcome.draining,
            evicting_container_id: outcome.evicting_container_id,
            already_draining: outcome.already_draining,
        },
    ))
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct HeartbeatBody {
    container_id: String,
}

#[derive(Serialize, schemars::JsonSchema)]
pub(crate) struct HeartbeatView {
    draining: bool,
    cleared_drain: bool,
    registry: Registry,
    pending_dispatches: Vec<Dispatch>,
    /// Set (true) only for a superseded container's late heartbeat, which
    /// takes nothing over; `current_container_id` then names the holder.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    fenced: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    current_container_id: Option<String>,
}

/// `POST /heartbeat`: the dispatches released by a clearing heartbeat are
/// built now, from the agents' current state. With an `Idempotency-Key`, a
/// retry gets the same dispatches again. A superseded container's heartbeat
/// answers 200 with `fenced: true` and the current container.
pub async fn heartbeat(
    objects: &impl Objects,
    town_id: &str,
    caller: &Caller,
    headers: &HeaderMap,
    body: &Bytes,
) -> Result<Response<Bytes>, ApiError> {
    let wanted: HeartbeatBody = body::parse_json(body)?;
    caller.check_container(&wanted.container_id)?;
    let beat = op::heartbeat(wanted.container_id, idempotency::key(headers)?);
    let outcome = objects.town(town_id, beat).await?;
    let pending_dispatches = try_join_all(
        outcome
            .released
            .iter()
            .map(|agent| dispatch::build(objects, town_id, agent, None)),
    )
    .await?;
    Ok(reply::json(
        StatusCode::OK,
        &HeartbeatView {
            draining: outcome.draining,
            cleared_drain: outcome.cleared_drain,
            registry: outcome.registry,
            pending_dispatches,
            fenced: outcome.superseded_by.is_some(),
            current_container_id: outcome.superseded_by,
        },
    ))
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RegistryBody {
    container_id: String,
    agents: Vec<RegistryAgent>,
}

/// `PUT|GET /container-registry`.
pub async fn registry(
    objects: &impl Objects,
    town_id: &str,
    caller: &Caller,
    method: &Method,
    body: &Bytes,
) -> Result<Response<Bytes>, ApiError> {
    let call = if *method == Method::PUT {
        let wanted: RegistryBody = body::parse_json(body)?;
        caller.check_container(&wanted.container_id)?;
        op::put_registry(wanted.container_id, wanted.agents)
    } else {
        op::get_registry()
    };
    let registry = objects.town(town_id, call).await?;
    Ok(reply::json(StatusCode::OK, &registry))
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RegistryEntryBody {
    container_id: String,
    role: String,
    #[serde(default)]
    session_id: Option<String>,
    #[serde(default)]
    port: Option<u16>,
}

/// `PUT|DELETE /container-registry/agents/{rig}/{agent}`: one agent's
/// entry, put by the container that runs it (a container token may name
/// only its own container) or removed. An entry from another container
/// than the registry's moves the registry to it; the other entries stay,
/// without their sessions and ports. Removing an entry not listed changes
/// nothing. Both answer the whole registry.
pub async fn registry_entry(
    objects: &impl Objects,
    key: &AgentKey,
    caller: &Caller,
    method: &Method,
    body: &Bytes,
) -> Result<Response<Bytes>, ApiError> {
    let call = if *method == Method::PUT {
        let wanted: RegistryEntryBody = body::parse_json(body)?;
        caller.check_container(&wanted.container_id)?;
        let agent = RegistryAgent {
            agent_id: key.agent.clone(),
            rig_id: key.rig.clone(),
            role: wanted.role,
            session_id: wanted.session_id,
            port: wanted.port,
        };
        op::put_registry_agent(wanted.container_id, agent)
    } else {
        op::remove_registry_agent(key.rig.clone(), key.agent.clone())
    };
    let registry = objects.town(&key.town, call).await?;
    Ok(reply::json(StatusCode::OK, &registry))
}

/// `GET /events?after=&limit=`.
pub async fn events(
    objects: &impl Objects,
    town_id: &str,
    query: &Query,
) -> Result<Response<Bytes>, ApiError> {
    let read = op::read_events(
        query.u64("after")?.unwrap_or(0),
        query
            .u64("limit")?
            .unwrap_or(u64::from(limits::DEFAULT_READ_LIMIT)),
    );
    let page = objects.town(town_id, read).await?;
    Ok(reply::json(StatusCode::OK, &page))
}

#[derive(Serialize, schemars::JsonSchema)]
pub(crate) struct AgentListing {
    rig_id: String,
    agent_id: String,
    role: String,
    last_seq: u64,
    snapshot: Option<SnapshotMeta>,
}

/// How many agents `GET /agents` reads at once: each read opens the agent's
/// object, so a town of thousands must not open them all together (the
/// host would run out of descriptors).
const LISTING_READS_AT_ONCE: usize = 16;

/// `GET /agents`: the town's directory, each agent with its log's newest
/// seq and its snapshot metadata. Needs no container.
pub async fn agents<O: Objects + Snapshots>(
    objects: &O,
    town_id: &str,
) -> Result<Response<Bytes>, ApiError> {
    let directory = objects.town(town_id, op::list_agents()).await?;
    let reads = directory.into_iter().map(|agent| async move {
        let key = AgentKey::new(town_id, &agent.rig_id, &agent.agent_id)?;
        let probe = agent_op::read_events(tail_probe());
        let last_seq = objects.agent(&key, probe).await?.last_seq;
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
    });
    let listing: Vec<AgentListing> = futures::stream::iter(reads)
        .buffered(LISTING_READS_AT_ONCE)
        .try_collect()
        .await?;
    Ok(reply::json(StatusCode::OK, &AgentsView { agents: listing }))
}

#[derive(Serialize, schemars::JsonSchema)]
pub(crate) struct AgentsView {
    agents: Vec<AgentListing>,
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
