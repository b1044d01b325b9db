//! HTTP in, [`stasis_api::Api`] calls, HTTP out.

use crate::{config::ServeConfig, runtime::HostObjects, runtime::components::Components};
use anyhow::Context;
use bytes::Bytes;
use futures::StreamExt;
use http::{Request, Response};
use http_body_util::{BodyExt, Full, StreamBody, combinators::BoxBody};
use hyper::{body::Frame, body::Incoming, service::service_fn};
use hyper_util::rt::TokioIo;
use stasis_api::{Api, ApiError, Reply};
use std::{convert::Infallible, sync::Arc, time::Duration};
use tokio::net::TcpListener;

type Body = BoxBody<Bytes, Infallible>;

/// How long in-flight requests get to finish after SIGTERM/SIGINT.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Opens the data folder, loads the components and serves until a signal.
pub async fn run(config: ServeConfig) -> anyhow::Result<()> {
    let listener = TcpListener::bind(config.listen)
        .await
        .with_context(|| format!("binding {}", config.listen))?;
    let api = build_api(&config)?;
    tracing::info!(
        listen = %listener.local_addr()?,
        data_dir = %config.data_dir.display(),
        durability = ?config.durability,
        max_events_per_agent = config.max_events_per_agent,
        snapshot_inline_limit = config.snapshot_inline_limit,
        objects = ?config.objects,
        "stasis is serving"
    );
    if config.secret.is_none() {
        tracing::warn!(
            "no secret configured (STASIS_SECRET or STASIS_SECRET_FILE): serving on loopback only, \
             and every request is accepted without a token"
        );
    }
    serve(listener, api).await
}

/// Builds the API over this config's data folder.
pub fn build_api(config: &ServeConfig) -> anyhow::Result<Arc<Api<HostObjects>>> {
    std::fs::create_dir_all(&config.data_dir)
        .with_context(|| format!("creating the data folder {}", config.data_dir.display()))?;
    let components = Components::load(&config.data_dir.join("cache"))?;
    let objects = HostObjects::new(components, config);
    Ok(Arc::new(Api::new(objects, config.secret.clone())))
}

/// Accepts connections until SIGTERM or SIGINT, then drains for a moment.
pub async fn serve(listener: TcpListener, api: Arc<Api<HostObjects>>) -> anyhow::Result<()> {
    api.objects().spawn_idle_closer();
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown_signal());
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let (stream, _) = match accepted {
                    Ok(conn) => conn,
                    Err(err) => {
                        tracing::warn!(%err, "accept failed");
                        continue;
                    }
                };
                let _ = stream.set_nodelay(true);
                let api = Arc::clone(&api);
                let service = service_fn(move |request| respond(Arc::clone(&api), request));
                let connection = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service);
                let connection = graceful.watch(connection);
                tokio::spawn(async move {
                    if let Err(err) = connection.await {
                        tracing::debug!(%err, "connection ended with an error");
                    }
                });
            }
            () = &mut shutdown => break,
        }
    }
    tracing::info!("shutting down");
    if tokio::time::timeout(SHUTDOWN_GRACE, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::info!("open streams did not finish within the grace period");
    }
    Ok(())
}

async fn shutdown_signal() {
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = terminate => {}
    }
}

/// One request through the shared API.
async fn respond(
    api: Arc<Api<HostObjects>>,
    request: Request<Incoming>,
) -> Result<Response<Body>, Infallible> {
    let (head, body) = request.into_parts();
    let admitted = match api.admit(&head) {
        Ok(admitted) => admitted,
        Err(err) => {
            discard_refused_body(&head.headers, &err, body).await;
            return Ok(full(err.into_response()));
        }
    };
    let bytes = match read_body(body, &head.headers, admitted.body_limit()).await {
        Ok(bytes) => bytes,
        Err(BodyError::TooLarge) => return Ok(full(admitted.body_too_large().into_response())),
        Err(BodyError::Read(err)) => {
            return Ok(full(
                ApiError::invalid_request(format!("reading the body failed: {err}"))
                    .into_response(),
            ));
        }
    };
    Ok(match api.handle(admitted, bytes).await {
        Reply::Full(response) => full(response),
        Reply::Stream(tail) => {
            let frames = stasis_api::sse::stream(api.objects().clone(), tail)
                .map(|chunk| Ok::<_, Infallible>(Frame::data(chunk)));
            let (parts, ()) = stasis_api::event_stream_head().into_parts();
            Response::from_parts(parts, BodyExt::boxed(StreamBody::new(frames)))
        }
    })
}

/// Why a body could not be read.
enum BodyError {
    /// It passed the endpoint's limit.
    TooLarge,
    /// The connection failed.
    Read(hyper::Error),
}

/// Reads the body into one buffer sized from `Content-Length` (already held
/// to the limit), so that a 25 MiB snapshot is received as one copy rather
/// than chunks gathered and then joined; past `limit` it stops at once.
async fn read_body(
    mut body: Incoming,
    headers: &http::HeaderMap,
    limit: u64,
) -> Result<Bytes, BodyError> {
    let declared = headers
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(0)
        .min(limit);
    let mut buffer = Vec::with_capacity(usize::try_from(declared).unwrap_or(0));
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(BodyError::Read)?;
        if let Ok(data) = frame.into_data() {
            let total = u64::try_from(buffer.len() + data.len()).unwrap_or(u64::MAX);
            if total > limit {
                return Err(BodyError::TooLarge);
            }
            buffer.extend_from_slice(&data);
        }
    }
    Ok(Bytes::from(buffer))
}

/// How much of a refused request's body is read (and thrown away) before
/// answering, past the limit for a 413: a client that sends its whole body
/// before reading the answer then sees the refusal, not a broken pipe, and
/// the connection stays usable. Larger bodies are refused at once.
const DISCARD_SLACK: u64 = 1024 * 1024;
/// How long reading a refused body may take.
const DISCARD_TIME: Duration = Duration::from_secs(2);

async fn discard_refused_body(headers: &http::HeaderMap, refusal: &ApiError, mut body: Incoming) {
    let limit = refusal
        .extra
        .get("limit")
        .and_then(serde_json::Value::as_u64);
    let allowance = match limit {
        Some(limit) if refusal.status == http::StatusCode::PAYLOAD_TOO_LARGE => {
            limit.saturating_add(DISCARD_SLACK)
        }
        _ => DISCARD_SLACK,
    };
    let declared = headers
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|declared| declared > allowance) {
        return;
    }
    let _ = tokio::time::timeout(DISCARD_TIME, async {
        let mut seen: u64 = 0;
        while let Some(Ok(frame)) = body.frame().await {
            if let Some(data) = frame.data_ref() {
                seen = seen.saturating_add(u64::try_from(data.len()).unwrap_or(u64::MAX));
                if seen > allowance {
                    break;
                }
            }
        }
    })
    .await;
}

fn full(response: Response<Bytes>) -> Response<Body> {
    response.map(|bytes| BodyExt::boxed(Full::new(bytes)))
}
