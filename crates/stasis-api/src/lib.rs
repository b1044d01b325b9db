//! The stasis HTTP contract, in one place for both runtimes.
//!
//! The local host (hyper) and the edge worker (workers-rs) each translate
//! their requests into [`http`] types and call [`Api`]; neither has a router
//! of its own. A request goes through two steps:
//!
//! 1. [`Api::admit`] decides everything the head allows: auth (401), route
//!    (404), method (405), ids (400), what the token may do (403: another
//!    town, a write with a read-only token), content type (415), and the
//!    body limit, so that an oversized body is refused from its
//!    `Content-Length` before it is read.
//! 2. [`Api::handle`] fences a container token's write (409 when its
//!    container no longer holds the town; see [`fencing`]), parses the body
//!    and runs the operation on the objects, through the runtime's
//!    [`Objects`] port.
//!
//! Live tails come back as [`Reply::Stream`] and exports as
//! [`Reply::Export`]; the runtime turns [`sse::stream`] and
//! [`export::stream`] into its streaming body, and whole-file snapshot
//! downloads as [`Reply::Snapshot`] ([`snapshot::stream`]). An import and a
//! whole-file snapshot upload take their body as a stream
//! ([`Admitted::streams_body`], [`Api::handle_streamed`]).

mod agent_http;
mod append_body;
pub mod auth;
mod body;
mod body_rules;
mod chunk_batch;
mod dispatch;
mod endpoint;
pub mod error;
mod events;
pub mod export;
mod fencing;
mod fork_chunks;
mod fork_http;
mod history_http;
pub mod idempotency;
mod import;
mod mayor_http;
mod objects;
mod openapi;
mod query;
pub mod reply;
pub mod request_log;
mod restore_http;
pub mod route;
pub mod route_template;
mod routes;
pub mod settings;
pub mod snapshot;
mod snapshot_delta;
pub mod snapshot_ranges;
pub mod sse;
pub mod summariser;
mod table;
mod token_http;
mod town_http;
pub mod ui;
mod workspace_http;

pub use body_rules::DEFAULT_IMPORT_LIMIT;
pub use error::{ApiError, ErrorLog};
pub use objects::{AfterCommit, AgentSnapshotObject, Objects, Snapshots};
pub use openapi::document as openapi_document;
pub use snapshot_delta::ChunkCheck;
pub use summariser::Summariser;

use auth::{Caller, KeyRing};
use bytes::Bytes;
use http::{HeaderMap, Method, Response, header, request::Parts};
use route::{AgentEndpoint, Endpoint};

/// The API over one runtime's objects.
pub struct Api<O> {
    objects: O,
    keys: Option<KeyRing>,
    import_limit: u64,
}

/// A request whose head passed every check.
#[derive(Debug)]
pub struct Admitted {
    caller: Caller,
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

    /// The endpoint the request names.
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
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
    /// `GET /metrics`, admitted: the runtime renders its own metrics, or
    /// answers [`metrics_not_served`].
    Metrics,
}

impl<O: Objects + Snapshots> Api<O> {
    /// An API over `objects`, verifying tokens with `keys`. With no keys,
    /// every request is unrestricted (the host then binds to loopback only).
    pub fn new(objects: O, keys: Option<KeyRing>) -> Self {
        Self {
            objects,
            keys,
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
        let caller = match &self.keys {
            Some(keys) if !route::is_public(path) => {
                auth::authenticate(keys, &head.headers, self.objects.now_ms())?
            }
            _ => Caller::unrestricted(),
        };
        let endpoint = route::resolve(path, &head.method)?;
        permit(&caller, &endpoint, &head.method)?;
        let limits = body_rules::Limits {
            import: self.import_limit,
            snapshot: self.objects.snapshot_limit(),
        };
        let body_limit = body_rules::check(&endpoint, &head.method, &head.headers, limits)?;
        let admitted = Admitted {
            caller,
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

    /// Runs an admitted request with its body.
    pub async fn handle(&self, admitted: Admitted, body: Bytes) -> Reply {
        let head_only = admitted.method == Method::HEAD;
        let caller = admitted.caller.clone();
        let town = admitted.endpoint.town().map(str::to_owned);
        match self.run_buffered(admitted, body).await {
            Ok(Reply::Full(response)) if head_only => Reply::Full(strip_body(response)),
            Ok(reply) => reply,
            Err(err) => {
                let err = fencing::name_holder(&self.objects, &caller, town.as_deref(), err).await;
                Reply::Full(err.into_response())
            }
        }
    }

    /// Runs an admitted request whose body comes as a stream (see
    /// [`Admitted::streams_body`]); the runtime maps its own body failures
    /// (too large, too slow, broken off) onto the stream's errors. A
    /// container token's import or snapshot upload is fenced like any other
    /// write.
    pub async fn handle_streamed<S>(&self, admitted: Admitted, body: S) -> Reply
    where
        S: futures::Stream<Item = Result<Bytes, ApiError>>,
    {
        let caller = admitted.caller.clone();
        let town = admitted.endpoint.town().map(str::to_owned);
        let outcome = match self.fence(&admitted).await {
            Ok(Some(fence)) => {
                routes::body_streamed(&self.objects.fenced(fence), admitted, body).await
            }
            Ok(None) => routes::body_streamed(&self.objects, admitted, body).await,
            Err(err) => Err(err),
        };
        match outcome {
            Ok(response) => Reply::Full(response),
            Err(err) => {
                let err = fencing::name_holder(&self.objects, &caller, town.as_deref(), err).await;
                Reply::Full(err.into_response())
            }
        }
    }

    async fn run_buffered(&self, admitted: Admitted, body: Bytes) -> Result<Reply, ApiError> {
        let keys = self.keys.as_ref();
        match self.fence(&admitted).await? {
            Some(fence) => {
                routes::body_buffered(&self.objects.fenced(fence), keys, admitted, body).await
            }
            None => routes::body_buffered(&self.objects, keys, admitted, body).await,
        }
    }

    /// The fence of a container token's write (see [`fencing::fence_of`]).
    async fn fence(
        &self,
        admitted: &Admitted,
    ) -> Result<Option<stasis_domain::fence::Fence>, ApiError> {
        fencing::fence_of(
            &self.objects,
            &admitted.caller,
            &admitted.endpoint,
            &admitted.method,
        )
        .await
    }
}

/// Refuses (403) what the token may not do on `endpoint`: anything but its
/// one exchange with a bootstrap token, another town, a write with a
/// read-only token, or the metrics without an admin token.
fn permit(caller: &Caller, endpoint: &Endpoint, method: &Method) -> Result<(), ApiError> {
    if matches!(caller.grant.scope, auth::Scope::Bootstrap { .. })
        && !matches!(
            endpoint,
            Endpoint::Town(_, route::TownEndpoint::ContainerToken)
        )
    {
        return Err(auth::forbidden(
            "bootstrap_only",
            "a bootstrap token does one thing: it is exchanged, once, for a container token \
             (POST /api/towns/{town}/container-token {\"container_id\": ...}); it neither reads, \
             writes nor refreshes",
        ));
    }
    if *endpoint == Endpoint::Metrics && caller.grant.scope != auth::Scope::Admin {
        return Err(auth::forbidden(
            "admin_only",
            "the metrics need an admin token (a read-only one will do)",
        ));
    }
    if let Some(town) = endpoint.town()
        && !caller.grant.scope.allows_town(town)
    {
        return Err(auth::forbidden(
            "other_town",
            format!("this token does not reach town {town:?}"),
        ));
    }
    if caller.grant.read_only && endpoint.is_write(method) {
        return Err(auth::forbidden(
            "read_only",
            "this token is read-only: it may not change anything",
        ));
    }
    Ok(())
}

/// The 404 of a runtime that serves no `/metrics` (the edge: its signals
/// are in Workers observability).
pub fn metrics_not_served(where_instead: &str) -> ApiError {
    ApiError::new(
        http::StatusCode::NOT_FOUND,
        "metrics_not_served",
        format!("this runtime serves no /metrics; {where_instead}"),
    )
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
    use super::*;

    fn bootstrap() -> Caller {
        Caller {
            grant: auth::Grant::new(auth::Scope::Bootstrap {
                town: "t".into(),
                token_id: "j".into(),
            }),
            token: None,
        }
    }

    fn reason(refused: Result<(), ApiError>) -> Option<String> {
        refused.err().and_then(|err| {
            err.extra
                .get("reason")
                .and_then(|r| r.as_str())
                .map(str::to_owned)
        })
    }

    #[test]
    fn a_bootstrap_token_reaches_its_exchange_and_nothing_else() {
        let caller = bootstrap();
        let permitted = |path: &str, method: Method| {
            let endpoint = route::resolve(path, &method).map_err(|err| err.code);
            endpoint.map(|endpoint| reason(permit(&caller, &endpoint, &method)))
        };
        assert_eq!(
            permitted("/api/towns/t/container-token", Method::POST),
            Ok(None)
        );
        for (path, method) in [
            ("/api/towns/t", Method::GET),
            ("/api/towns/t/heartbeat", Method::POST),
            ("/api/towns/t/container-registry", Method::GET),
            ("/api/towns/t/rigs/r/agents/a/events", Method::GET),
            ("/api/towns/t/rigs/r/agents/a/events", Method::POST),
            ("/api/towns/t/rigs/r/agents/a/db-snapshot", Method::PUT),
            ("/api/token/refresh", Method::POST),
            ("/metrics", Method::GET),
        ] {
            assert_eq!(
                permitted(path, method.clone()),
                Ok(Some("bootstrap_only".to_owned())),
                "{method} {path}"
            );
        }
        assert_eq!(
            permitted("/api/towns/other/container-token", Method::POST),
            Ok(Some("other_town".to_owned()))
        );
    }
}
