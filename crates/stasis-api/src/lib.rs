//! The stasis HTTP contract, in one place for both runtimes.
//!
//! The local host (hyper) and the edge worker (workers-rs) each translate
//! their requests into [`http`] types and call [`Api`]; neither has a router
//! of its own. A request goes through two steps:
//!
//! 1. [`Api::admit`] decides everything the head allows: auth (401), route
//!    (404), method (405), ids (400), town scope (403), content type (415),
//!    and the body limit, so that an oversized body is refused from its
//!    `Content-Length` before it is read.
//! 2. [`Api::handle`] parses the body and runs the operation on the objects,
//!    through the runtime's [`Objects`] port.
//!
//! Live tails come back as [`Reply::Stream`] and exports as
//! [`Reply::Export`]; the runtime turns [`sse::stream`] and
//! [`export::stream`] into its streaming body. An import takes its body as
//! a stream ([`Admitted::streams_body`], [`Api::handle_streamed`]).

mod agent_http;
mod append_body;
pub mod auth;
mod body;
mod body_rules;
mod dispatch;
pub mod error;
mod events;
pub mod export;
pub mod idempotency;
mod import;
mod mayor_http;
mod objects;
mod query;
pub mod reply;
pub mod route;
pub mod snapshot;
mod snapshot_delta;
pub mod sse;
mod town_http;

pub use body_rules::DEFAULT_IMPORT_LIMIT;
pub use error::{ApiError, ErrorLog};
pub use objects::{Objects, Snapshots};

use auth::Scope;
use bytes::Bytes;
use http::{HeaderMap, Method, Response, StatusCode, header, request::Parts};
use route::{AgentEndpoint, Endpoint, TownEndpoint};
use stasis_domain::agent::AgentCall;

/// The API over one runtime's objects.
pub struct Api<O> {
    objects: O,
    secret: Option<Vec<u8>>,
    import_limit: u64,
}

/// A request whose head passed every check.
#[derive(Debug)]
pub struct Admitted {
    endpoint: Endpoint,
    method: Method,
    query: Option<String>,
    headers: HeaderMap,
    body_limit: u64,
}

impl Admitted {
    /// The most body bytes the runtime may read for this request; past
    /// that it answers [`Admitted::body_too_large`].
    pub fn body_limit(&self) -> u64 {
        self.body_limit
    }

    /// The 413 for a body past [`Admitted::body_limit`].
    pub fn body_too_large(&self) -> ApiError {
        body_rules::too_large(&self.endpoint, &self.method, self.body_limit)
    }

    /// Whether the runtime should hand the body over as a stream
    /// ([`Api::handle_streamed`]) rather than read it whole: an import's
    /// body may be far larger than memory.
    pub fn streams_body(&self) -> bool {
        match self.endpoint {
            Endpoint::Agent(_, AgentEndpoint::Import) => self.method == Method::PUT,
            Endpoint::Agent(_, AgentEndpoint::Snapshot) => {
                matches!(self.method, Method::PUT | Method::POST)
            }
            _ => false,
        }
    }
}

/// What the runtime sends back.
pub enum Reply {
    /// A complete response.
    Full(Response<Bytes>),
    /// A Server-Sent Events stream; see [`sse::stream`].
    Stream(sse::Tail),
    /// An agent's manifest, 200 `application/json`, written as it is read;
    /// see [`export::stream`] and [`export_head`].
    Export(export::Export),
    /// A snapshot's bytes, assembled from its chunks as they are read; see
    /// [`snapshot::stream`] and [`snapshot::Download::head`].
    Snapshot(Box<snapshot::Download>),
}

impl<O: Objects + Snapshots> Api<O> {
    /// An API over `objects`. With no `secret`, every request is treated as
    /// admin (the host then binds to loopback only).
    pub fn new(objects: O, secret: Option<Vec<u8>>) -> Self {
        Self {
            objects,
            secret,
            import_limit: DEFAULT_IMPORT_LIMIT,
        }
    }

    /// Sets the most bytes an import's body may carry.
    pub fn with_import_limit(mut self, limit: u64) -> Self {
        self.import_limit = limit;
        self
    }

    /// The runtime's objects.
    pub fn objects(&self) -> &O {
        &self.objects
    }

    /// Checks a request's head; see the crate docs for the order.
    pub fn admit(&self, head: &Parts) -> Result<Admitted, ApiError> {
        let path = head.uri.path();
        let scope = if route::is_public(path) {
            Scope::Admin
        } else {
            self.authenticate(&head.headers)?
        };
        let endpoint = route::resolve(path, &head.method)?;
        if let Some(town) = endpoint.town()
            && !scope.allows_town(town)
        {
            return Err(ApiError::new(
                StatusCode::FORBIDDEN,
                "forbidden",
                format!("this token does not reach town {town:?}"),
            ));
        }
        let limits = body_rules::Limits {
            import: self.import_limit,
            snapshot: self.objects.snapshot_limit(),
        };
        let body_limit = body_rules::check(&endpoint, &head.method, &head.headers, limits)?;
        let admitted = Admitted {
            endpoint,
            method: head.method.clone(),
            query: head.uri.query().map(str::to_owned),
            headers: head.headers.clone(),
            body_limit,
        };
        if let Some(length) = content_length(&head.headers)?
            && length > body_limit
        {
            return Err(admitted.body_too_large());
        }
        Ok(admitted)
    }

    fn authenticate(&self, headers: &HeaderMap) -> Result<Scope, ApiError> {
        let Some(secret) = &self.secret else {
            return Ok(Scope::Admin);
        };
        let value = headers
            .get(header::AUTHORIZATION)
            .ok_or_else(|| ApiError::unauthorized("an Authorization: Bearer token is required"))?;
        let token = value.to_str().ok().and_then(bearer_token).ok_or_else(|| {
            ApiError::unauthorized("the Authorization header must be 'Bearer <token>'")
        })?;
        auth::verify(secret, token.trim())
            .ok_or_else(|| ApiError::unauthorized("the token is not valid for this server"))
    }

    /// Runs an admitted request with its body.
    pub async fn handle(&self, admitted: Admitted, body: Bytes) -> Reply {
        let head_only = admitted.method == Method::HEAD;
        match self.dispatch(admitted, body).await {
            Ok(Reply::Full(response)) if head_only => Reply::Full(strip_body(response)),
            Ok(reply) => reply,
            Err(err) => Reply::Full(err.into_response()),
        }
    }

    /// Runs an admitted request whose body comes as a stream (see
    /// [`Admitted::streams_body`]); the runtime maps its own body failures
    /// (too large, too slow, broken off) onto the stream's errors.
    pub async fn handle_streamed<S>(&self, admitted: Admitted, body: S) -> Reply
    where
        S: futures::Stream<Item = Result<Bytes, ApiError>>,
    {
        let outcome = match &admitted.endpoint {
            Endpoint::Agent(key, AgentEndpoint::Import) if admitted.streams_body() => {
                let query = query::Query::parse(admitted.query.as_deref());
                import::run(&self.objects, key, &query, body).await
            }
            Endpoint::Agent(key, AgentEndpoint::Snapshot) if admitted.streams_body() => {
                snapshot::put(&self.objects, key, &admitted.headers, body).await
            }
            _ => Err(ApiError::internal(
                "only an import or a snapshot takes its body as a stream",
            )),
        };
        Reply::Full(outcome.unwrap_or_else(ApiError::into_response))
    }

    async fn dispatch(&self, admitted: Admitted, body: Bytes) -> Result<Reply, ApiError> {
        let Admitted {
            endpoint,
            method,
            query,
            headers,
            ..
        } = admitted;
        let query = query::Query::parse(query.as_deref());
        let objects = &self.objects;
        let response = match endpoint {
            Endpoint::Health => {
                objects.ready().await.map_err(not_ready)?;
                reply::raw_json(StatusCode::OK, br#"{"status":"ok"}"#.to_vec())
            }
            Endpoint::Live => reply::raw_json(StatusCode::OK, br#"{"status":"ok"}"#.to_vec()),
            Endpoint::Agent(key, AgentEndpoint::Events) if method == Method::POST => {
                let batch = events::parse_append(&body)?;
                events::render(objects.agent(&key, AgentCall::AppendEvents(batch)).await?)
            }
            Endpoint::Agent(key, AgentEndpoint::Events) => {
                let read = events::parse_read(&query, last_event_id(&headers)?)?;
                let reply = objects
                    .agent(&key, AgentCall::ReadEvents(read.clone()))
                    .await?;
                if wants_event_stream(&headers) && method == Method::GET {
                    let stasis_domain::agent::AgentReply::Events(first_page) = reply else {
                        return Err(ApiError::internal(
                            "the agent answered a read with something else",
                        ));
                    };
                    return Ok(Reply::Stream(sse::Tail {
                        key,
                        query: read,
                        first_page,
                    }));
                }
                events::render(reply)
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
                _ => return snapshot::get(objects, &key, &headers, method == Method::GET).await,
            },
            Endpoint::Agent(key, endpoint) => {
                self.agent_endpoint(&key, endpoint, &method, &query, &headers, body)
                    .await?
            }
            Endpoint::Town(town, endpoint) => {
                self.town_endpoint(&town, endpoint, &method, &query, &headers, &body)
                    .await?
            }
        };
        Ok(Reply::Full(response))
    }

    async fn agent_endpoint(
        &self,
        key: &stasis_domain::ids::AgentKey,
        endpoint: AgentEndpoint,
        method: &Method,
        query: &query::Query,
        headers: &HeaderMap,
        body: Bytes,
    ) -> Result<Response<Bytes>, ApiError> {
        let objects = &self.objects;
        match endpoint {
            AgentEndpoint::Record => agent_http::record(objects, key, method, &body).await,
            AgentEndpoint::Sessions => agent_http::sessions(objects, key).await,
            AgentEndpoint::Session(id) => {
                agent_http::session(objects, key, &id, method, &body).await
            }
            AgentEndpoint::Conversation => agent_http::conversation(objects, key, query).await,
            AgentEndpoint::Checkpoint => agent_http::checkpoint(objects, key, method, &body).await,
            AgentEndpoint::Memory => agent_http::memory_list(objects, key, query).await,
            AgentEndpoint::MemoryEntry(memory_key) => {
                agent_http::memory_entry(objects, key, &memory_key, method, &body).await
            }
            AgentEndpoint::SnapshotMissing => snapshot_delta::missing(objects, key, &body).await,
            AgentEndpoint::SnapshotChunk(name) if *method == Method::PUT => {
                snapshot_delta::put_chunk(objects, key, &name, &body).await
            }
            AgentEndpoint::SnapshotChunk(name) => {
                snapshot_delta::get_chunk(objects, key, &name).await
            }
            AgentEndpoint::SnapshotManifest if *method == Method::PUT => {
                snapshot_delta::put_manifest(objects, key, headers, &body).await
            }
            AgentEndpoint::SnapshotManifest => {
                snapshot_delta::get_manifest(objects, key, headers).await
            }
            AgentEndpoint::Dispatch => mayor_http::dispatch_agent(objects, key, &body).await,
            AgentEndpoint::Events
            | AgentEndpoint::Export
            | AgentEndpoint::Import
            | AgentEndpoint::Snapshot => Err(ApiError::internal("routed above")),
        }
    }

    async fn town_endpoint(
        &self,
        town: &str,
        endpoint: TownEndpoint,
        method: &Method,
        query: &query::Query,
        headers: &HeaderMap,
        body: &Bytes,
    ) -> Result<Response<Bytes>, ApiError> {
        let objects = &self.objects;
        match endpoint {
            TownEndpoint::State => town_http::state(objects, town).await,
            TownEndpoint::Eviction => town_http::eviction(objects, town, body).await,
            TownEndpoint::Heartbeat => town_http::heartbeat(objects, town, headers, body).await,
            TownEndpoint::Registry => town_http::registry(objects, town, method, body).await,
            TownEndpoint::Events => town_http::events(objects, town, query).await,
            TownEndpoint::Agents => town_http::agents(objects, town).await,
            TownEndpoint::MayorMessage => {
                mayor_http::mayor_message(objects, town, headers, body).await
            }
        }
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

/// The head of an export's response (its body is [`export::stream`]).
pub fn export_head() -> Response<()> {
    let mut response = Response::new(());
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    response
}

/// The head of an SSE response.
pub fn event_stream_head() -> Response<()> {
    let mut response = Response::new(());
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(
        header::CACHE_CONTROL,
        http::HeaderValue::from_static("no-cache"),
    );
    headers.insert("x-accel-buffering", http::HeaderValue::from_static("no"));
    response
}

/// The token of `Bearer <token>`; the scheme's name is case-insensitive
/// (RFC 9110, section 11.1), so `bearer <token>` is one too.
fn bearer_token(value: &str) -> Option<&str> {
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then_some(token)
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

pub(crate) fn content_length(headers: &HeaderMap) -> Result<Option<u64>, ApiError> {
    let Some(value) = headers.get(header::CONTENT_LENGTH) else {
        return Ok(None);
    };
    value
        .to_str()
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .map(Some)
        .ok_or_else(|| ApiError::invalid_request("Content-Length must be an integer"))
}

/// A HEAD answer: the GET's headers (its Content-Length included), no body.
fn strip_body(response: Response<Bytes>) -> Response<Bytes> {
    let (mut parts, body) = response.into_parts();
    if !parts.headers.contains_key(header::CONTENT_LENGTH) {
        parts
            .headers
            .insert(header::CONTENT_LENGTH, http::HeaderValue::from(body.len()));
    }
    Response::from_parts(parts, Bytes::new())
}

#[cfg(test)]
mod tests {
    use super::bearer_token;

    #[test]
    fn the_bearer_scheme_is_read_in_any_case() {
        for header in ["Bearer t", "bearer t", "BEARER t"] {
            assert_eq!(bearer_token(header), Some("t"), "{header}");
        }
        for header in ["Bearer", "Basic t", "Bearert", "Bear t"] {
            assert_eq!(bearer_token(header), None, "{header}");
        }
    }
}
