//! Which handler runs an admitted request.

use crate::{
    Admitted, Objects, Reply, Snapshots, agent_http,
    auth::{Caller, KeyRing},
    chunk_batch,
    error::ApiError,
    events, export, fork_http, history_http, import, mayor_http, query, reply, restore_http,
    route::{AgentEndpoint, Endpoint, TownEndpoint},
    snapshot, snapshot_delta, sse, token_http, town_http, workspace_http,
};
use bytes::Bytes;
use http::{HeaderMap, Method, Response, StatusCode, header};
use stasis_domain::operation::agent as op;

/// Runs an admitted request on `objects` (fenced already, for a container
/// token's write).
pub(crate) async fn body_buffered<O: Objects + Snapshots>(
    objects: &O,
    keys: Option<&KeyRing>,
    admitted: Admitted,
    body: Bytes,
) -> Result<Reply, ApiError> {
    let Admitted {
        caller,
        endpoint,
        method,
        query,
        headers,
        ..
    } = admitted;
    let query = query::Query::parse(query.as_deref());
    let response = match endpoint {
        Endpoint::Health => {
            objects.ready().await.map_err(not_ready)?;
            reply::raw_json(StatusCode::OK, br#"{"status":"ok"}"#.to_vec())
        }
        Endpoint::Live => reply::raw_json(StatusCode::OK, br#"{"status":"ok"}"#.to_vec()),
        Endpoint::Ui(asset) => crate::ui::serve(asset),
        Endpoint::Metrics => return Ok(Reply::Metrics),
        Endpoint::OpenApi => reply::raw_json(StatusCode::OK, crate::openapi::document().to_vec()),
        Endpoint::Agent(key, AgentEndpoint::Events) if method == Method::POST => {
            let batch = events::parse_append(&body)?;
            events::render_appended(&objects.agent(&key, op::append_events(batch)).await?)
        }
        Endpoint::Agent(key, AgentEndpoint::Events) => {
            let read = events::parse_read(&query, last_event_id(&headers)?)?;
            let first_page = objects.agent(&key, op::read_events(read.clone())).await?;
            if wants_event_stream(&headers) && method == Method::GET {
                return Ok(Reply::Stream(sse::Tail {
                    key,
                    query: read,
                    first_page,
                }));
            }
            events::render_page(&first_page)
        }
        Endpoint::Agent(key, AgentEndpoint::Export) => {
            return Ok(Reply::Export(export::prepare(objects, &key).await?));
        }
        Endpoint::Agent(key, AgentEndpoint::Import) => {
            let whole = futures::stream::iter([Ok(body)]);
            import::run(objects, &key, &query, whole).await?
        }
        Endpoint::Agent(key, AgentEndpoint::Snapshot) => match method {
            Method::PUT | Method::POST => {
                let whole = futures::stream::iter([Ok(body)]);
                snapshot::put(objects, &key, &headers, whole).await?
            }
            Method::DELETE => snapshot::delete(objects, &key).await?,
            _ => {
                let version = query.u64("version")?;
                let with_bytes = method == Method::GET;
                return snapshot::get(objects, &key, &headers, (with_bytes, version)).await;
            }
        },
        Endpoint::RefreshToken => token_http::refresh(objects, keys, &caller, &body).await?,
        Endpoint::Agent(key, endpoint) => {
            let request = AgentRequest {
                caller: &caller,
                method: &method,
                query: &query,
                headers: &headers,
            };
            agent_endpoint(objects, &key, endpoint, request, body).await?
        }
        Endpoint::Town(town, TownEndpoint::ContainerToken) => {
            token_http::container_token(objects, keys, &caller, &town, &body).await?
        }
        Endpoint::Town(town, endpoint) => {
            let request = TownRequest {
                caller: &caller,
                method: &method,
                query: &query,
                headers: &headers,
                body: &body,
            };
            town_endpoint(objects, &town, endpoint, request).await?
        }
    };
    Ok(Reply::Full(response))
}

/// Runs an import or a whole-file snapshot upload whose body comes as a
/// stream on `objects` (fenced already, for a container token's write).
pub(crate) async fn body_streamed<O, S>(
    objects: &O,
    admitted: Admitted,
    body: S,
) -> Result<Response<Bytes>, ApiError>
where
    O: Objects + Snapshots,
    S: futures::Stream<Item = Result<Bytes, ApiError>>,
{
    match &admitted.endpoint {
        Endpoint::Agent(key, AgentEndpoint::Import) if admitted.streams_body() => {
            let query = query::Query::parse(admitted.query.as_deref());
            import::run(objects, key, &query, body).await
        }
        Endpoint::Agent(key, AgentEndpoint::Snapshot) if admitted.streams_body() => {
            snapshot::put(objects, key, &admitted.headers, body).await
        }
        _ => Err(ApiError::internal(
            "only an import or a snapshot takes its body as a stream",
        )),
    }
}

/// What an agent endpoint may read of its request (its body apart).
struct AgentRequest<'a> {
    caller: &'a Caller,
    method: &'a Method,
    query: &'a query::Query,
    headers: &'a HeaderMap,
}

async fn agent_endpoint<O: Objects + Snapshots>(
    objects: &O,
    key: &stasis_domain::ids::AgentKey,
    endpoint: AgentEndpoint,
    request: AgentRequest<'_>,
    body: Bytes,
) -> Result<Response<Bytes>, ApiError> {
    let AgentRequest {
        caller,
        method,
        query,
        headers,
    } = request;
    match endpoint {
        AgentEndpoint::Record => agent_http::record(objects, key, method, &body).await,
        AgentEndpoint::Sessions => agent_http::sessions(objects, key).await,
        AgentEndpoint::Session(id) => agent_http::session(objects, key, &id, method, &body).await,
        AgentEndpoint::Conversation => agent_http::conversation(objects, key, query).await,
        AgentEndpoint::Checkpoint => {
            agent_http::checkpoint(objects, key, (method, query), &body).await
        }
        AgentEndpoint::Memory => agent_http::memory_list(objects, key, query).await,
        AgentEndpoint::MemoryEntry(memory_key) => {
            agent_http::memory_entry(objects, key, &memory_key, (method, query), &body).await
        }
        AgentEndpoint::SnapshotMissing => snapshot_delta::missing(objects, key, &body).await,
        AgentEndpoint::SnapshotChunk(name) if *method == Method::PUT => {
            snapshot_delta::put_chunk(objects, key, &name, &body).await
        }
        AgentEndpoint::SnapshotChunk(name) => snapshot_delta::get_chunk(objects, key, &name).await,
        AgentEndpoint::SnapshotManifest if *method == Method::PUT => {
            snapshot_delta::put_manifest(objects, key, headers, &body).await
        }
        AgentEndpoint::SnapshotManifest => {
            snapshot_delta::get_manifest(objects, key, headers, query.u64("version")?).await
        }
        AgentEndpoint::WorkspaceMissing => snapshot_delta::missing(objects, key, &body).await,
        AgentEndpoint::WorkspaceChunk(name) if *method == Method::PUT => {
            snapshot_delta::put_chunk(objects, key, &name, &body).await
        }
        AgentEndpoint::WorkspaceChunk(name) => snapshot_delta::get_chunk(objects, key, &name).await,
        AgentEndpoint::WorkspaceManifest if *method == Method::PUT => {
            workspace_http::put_manifest(objects, key, headers, &body).await
        }
        AgentEndpoint::WorkspaceManifest => {
            workspace_http::get_manifest(objects, key, headers, query.u64("version")?).await
        }
        AgentEndpoint::History => history_http::list(objects, key, query).await,
        AgentEndpoint::Restore => restore_http::restore(objects, key, &body).await,
        AgentEndpoint::HistoryPins => history_http::pins(objects, key).await,
        AgentEndpoint::HistoryPin(name) => {
            history_http::pin(objects, key, &name, method, &body).await
        }
        AgentEndpoint::Fork => fork_http::fork(objects, key, &body).await,
        AgentEndpoint::Workspace => workspace_http::delete(objects, key).await,
        AgentEndpoint::WorkspaceBatchUpload => chunk_batch::upload(objects, key, &body).await,
        AgentEndpoint::WorkspaceBatchFetch => chunk_batch::fetch(objects, key, &body).await,
        AgentEndpoint::Dispatch => mayor_http::dispatch_agent(objects, key, &body).await,
        AgentEndpoint::Inbox => mayor_http::agent_inbox(objects, key, headers, &body).await,
        AgentEndpoint::RegistryEntry => {
            town_http::registry_entry(objects, key, caller, method, &body).await
        }
        AgentEndpoint::Events
        | AgentEndpoint::Export
        | AgentEndpoint::Import
        | AgentEndpoint::Snapshot => Err(ApiError::internal("routed above")),
    }
}

/// What a town endpoint may read of its request.
struct TownRequest<'a> {
    caller: &'a Caller,
    method: &'a Method,
    query: &'a query::Query,
    headers: &'a HeaderMap,
    body: &'a Bytes,
}

async fn town_endpoint<O: Objects + Snapshots>(
    objects: &O,
    town: &str,
    endpoint: TownEndpoint,
    request: TownRequest<'_>,
) -> Result<Response<Bytes>, ApiError> {
    let TownRequest {
        caller,
        method,
        query,
        headers,
        body,
    } = request;
    let bound = caller.container_id();
    match endpoint {
        TownEndpoint::State => town_http::state(objects, town).await,
        TownEndpoint::Eviction => town_http::eviction(objects, town, bound, body).await,
        TownEndpoint::Heartbeat => town_http::heartbeat(objects, town, caller, headers, body).await,
        TownEndpoint::Registry => town_http::registry(objects, town, caller, method, body).await,
        TownEndpoint::Events => town_http::events(objects, town, query).await,
        TownEndpoint::Agents => town_http::agents(objects, town).await,
        TownEndpoint::MayorMessage => mayor_http::mayor_message(objects, town, headers, body).await,
        TownEndpoint::ContainerToken => Err(ApiError::internal("token routes are routed above")),
    }
}

/// How long a load balancer should wait before asking a host that is not
/// ready again.
const NOT_READY_RETRY_SECS: u64 = 5;

/// The 503 of `GET /healthz` when storage fails; the cause (which may name
/// files) goes to the log only.
fn not_ready(err: stasis_domain::DomainError) -> ApiError {
    let mut error = ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "not_ready",
        "storage does not take writes now; the server log holds the cause",
    )
    .with("retry_after", NOT_READY_RETRY_SECS)
    .with_header(header::RETRY_AFTER, NOT_READY_RETRY_SECS.to_string());
    error.cause = Some(err.to_string().into_boxed_str());
    error
}

fn wants_event_stream(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.contains("text/event-stream"))
}

fn last_event_id(headers: &HeaderMap) -> Result<Option<u64>, ApiError> {
    let Some(value) = headers.get("last-event-id") else {
        return Ok(None);
    };
    value
        .to_str()
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(Some)
        .ok_or_else(|| {
            ApiError::invalid_request("Last-Event-ID must be a non-negative integer seq")
        })
}
