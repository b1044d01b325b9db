//! One request through the shared API: its id, its body (read whole, or
//! streamed for an import), a panic turned into a 500, every 5xx logged
//! with its cause, and a streamed export cut (and logged) when it fails.

use super::{
    Body, Cut, Site,
    body::{self, BodyError, Chunks},
    capacity::PlaceId,
    disk,
    exchange::{Exchange, TailOpen},
};
use crate::config::ServerLimits;
use bytes::Bytes;
use futures::{FutureExt, Stream, StreamExt};
use http::{HeaderMap, HeaderName, HeaderValue, Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use stasis_api::{Admitted, ApiError, ErrorLog, Reply};
use std::panic::AssertUnwindSafe;

/// Kept from the request when it is a short printable token, else made up;
/// sent back on every response and named in every log line about it.
const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// Runs `request` and answers, whatever happens inside.
/// `place` is the connection's, which a live tail gives back for a tail's.
pub async fn respond(site: &Site, request: Request<Incoming>, place: PlaceId) -> Response<Body> {
    let id = request_id(request.headers());
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    let exchange = Exchange::start(
        site.api.objects().metrics(),
        id.to_str().unwrap_or("?"),
        &method,
        &path,
    );
    let mut bytes_in = 0;
    let mut response = match AssertUnwindSafe(handle(site, request, &id, place, &mut bytes_in))
        .catch_unwind()
        .await
    {
        Ok(response) => response,
        Err(panic) => full(
            ApiError::internal(format!(
                "the handler panicked: {}",
                crate::panics::message(&*panic)
            ))
            .into_response(),
        ),
    };
    if disk_was_full(&response) {
        site.disk.filled();
        response = full(disk::storage_full().into_response());
    }
    log_server_error(&response, &id, &method, &path);
    response.headers_mut().insert(REQUEST_ID, id);
    exchange.respond(response, bytes_in)
}

/// The 503 for a connection over the cap.
pub fn over_capacity<B>(request: &Request<B>, max_connections: usize) -> Response<Body> {
    let mut response = full(
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "over_capacity",
            format!("the server is serving its maximum of {max_connections} connections"),
        )
        .with("retry_after", 1)
        .with_header(header::RETRY_AFTER, "1")
        .with_header(header::CONNECTION, "close")
        .into_response(),
    );
    response
        .headers_mut()
        .insert(REQUEST_ID, request_id(request.headers()));
    response
}

/// The 503 for a live tail past `--max-tails`.
fn tails_over_capacity(max_tails: usize) -> Response<Body> {
    full(
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "over_capacity",
            format!("the server is serving its maximum of {max_tails} live tails"),
        )
        .with("retry_after", 1)
        .with_header(header::RETRY_AFTER, "1")
        .into_response(),
    )
}

/// Answers `request`, counting the body bytes it reads into `bytes_in`.
async fn handle(
    site: &Site,
    request: Request<Incoming>,
    id: &HeaderValue,
    place: PlaceId,
    bytes_in: &mut u64,
) -> Response<Body> {
    let api = &site.api;
    let (head, incoming) = request.into_parts();
    let admitted = match api.admit(&head) {
        Ok(admitted) => admitted,
        Err(err) => {
            body::discard_refused(&head.headers, &err, incoming).await;
            return full(err.into_response());
        }
    };
    if site.disk.refuses(&head.method).await {
        let refusal = disk::storage_full();
        body::discard_refused(&head.headers, &refusal, incoming).await;
        return full(refusal.into_response());
    }
    let limit = admitted.body_limit();
    if admitted.streams_body() {
        let mut body = Chunks::new(incoming, limit, &site.limits, site.grace_over.subscribe());
        let stream = chunks(&mut body, &admitted, &site.limits);
        let reply = api.handle_streamed(admitted, stream).await;
        *bytes_in = body.received();
        body.discard_rest().await;
        return respond_with(site, reply, id, head.uri.path(), place);
    }
    let grace_over = site.grace_over.subscribe();
    let bytes = match body::read(incoming, &head.headers, limit, &site.limits, grace_over).await {
        Ok(bytes) => bytes,
        Err(BodyError::TooLarge) => return full(admitted.body_too_large().into_response()),
        Err(BodyError::TooSlow) => return full(body::too_slow(&site.limits).into_response()),
        Err(BodyError::ShuttingDown) => return full(body::shutting_down().into_response()),
        Err(BodyError::Read(err)) => {
            let err = ApiError::invalid_request(format!("reading the body failed: {err}"));
            return full(err.into_response());
        }
    };
    *bytes_in = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
    let reply = api.handle(admitted, bytes).await;
    respond_with(site, reply, id, head.uri.path(), place)
}

/// The API's reply as a hyper response: whole, or streamed.
fn respond_with(
    site: &Site,
    reply: Reply,
    id: &HeaderValue,
    path: &str,
    place: PlaceId,
) -> Response<Body> {
    let objects = site.api.objects().clone();
    match reply {
        Reply::Full(response) => full(response),
        Reply::Metrics => metrics(site),
        Reply::Stream(tail) => {
            // The tail holds a tail's place instead of its connection's,
            // and the connection closes with it.
            let Some(tail_place) = site.capacity.tail(&place) else {
                return tails_over_capacity(site.limits.max_tails);
            };
            let open = TailOpen::new(site.api.objects().metrics());
            let frames = stasis_api::sse::stream(objects, tail)
                .take_until(site.shutting_down())
                .map(move |chunk| {
                    let _held = (&open, &tail_place);
                    Ok::<_, Cut>(Frame::data(chunk))
                });
            let (mut parts, ()) = stasis_api::event_stream_head().into_parts();
            parts
                .headers
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
            Response::from_parts(parts, BodyExt::boxed(StreamBody::new(frames)))
        }
        Reply::Export(export) => {
            let (id, path) = (id.to_str().unwrap_or("?").to_owned(), path.to_owned());
            let frames = stasis_api::export::stream(objects, export).map(move |chunk| {
                chunk.map(Frame::data).map_err(|err| {
                    let detail = err.cause.as_deref().unwrap_or(&err.message);
                    tracing::error!(
                        request_id = id,
                        path,
                        code = err.code,
                        detail,
                        "export failed after its head was sent; the response was cut"
                    );
                    Cut
                })
            });
            let (parts, ()) = stasis_api::export_head().into_parts();
            Response::from_parts(parts, BodyExt::boxed(StreamBody::new(frames)))
        }
        Reply::Snapshot(download) => {
            let (id, path) = (id.to_str().unwrap_or("?").to_owned(), path.to_owned());
            let (parts, ()) = download.head().into_parts();
            let frames = stasis_api::snapshot::stream(objects, download).map(move |chunk| {
                chunk.map(Frame::data).map_err(|err| {
                    let detail = err.cause.as_deref().unwrap_or(&err.message);
                    tracing::error!(
                        request_id = id,
                        path,
                        code = err.code,
                        detail,
                        "a snapshot download failed after its head was sent; the response was cut"
                    );
                    Cut
                })
            });
            Response::from_parts(parts, BodyExt::boxed(StreamBody::new(frames)))
        }
    }
}

/// `GET /metrics`, admitted: the host's metrics as OpenMetrics text.
fn metrics(site: &Site) -> Response<Body> {
    match site.api.objects().metrics().render() {
        Ok(text) => {
            let mut response = Response::new(Bytes::from(text));
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static(crate::metrics::CONTENT_TYPE),
            );
            full(response)
        }
        Err(err) => {
            full(ApiError::internal(format!("rendering the metrics failed: {err}")).into_response())
        }
    }
}

/// An import's body as the API takes it: chunks, or the refusal a failed
/// read answers (413 past the limit, 408 too slow, 400 broken off).
fn chunks<'a>(
    chunks: &'a mut Chunks,
    admitted: &Admitted,
    limits: &ServerLimits,
) -> impl Stream<Item = Result<Bytes, ApiError>> + use<'a> {
    let too_large = admitted.body_too_large();
    let too_slow = body::too_slow(limits);
    futures::stream::unfold(Some(chunks), move |chunks| {
        let (too_large, too_slow) = (too_large.clone(), too_slow.clone());
        async move {
            let chunks = chunks?;
            match chunks.next().await {
                Ok(Some(data)) => Some((Ok(data), Some(chunks))),
                Ok(None) => None,
                Err(err) => {
                    let refusal = match err {
                        BodyError::TooLarge => too_large,
                        BodyError::TooSlow => too_slow,
                        BodyError::ShuttingDown => body::shutting_down(),
                        BodyError::Read(err) => {
                            ApiError::invalid_request(format!("reading the body failed: {err}"))
                        }
                    };
                    Some((Err(refusal), None))
                }
            }
        }
    })
}

/// The client's `X-Request-Id` when it is kept
/// ([`stasis_api::request_log::client_request_id`]), else 16 random hex
/// digits.
fn request_id(headers: &HeaderMap) -> HeaderValue {
    stasis_api::request_log::client_request_id(headers)
        .and_then(|given| HeaderValue::from_str(given).ok())
        .or_else(|| HeaderValue::from_str(&format!("{:016x}", fastrand::u64(..))).ok())
        .unwrap_or(HeaderValue::from_static("unknown"))
}

/// Whether `response` is a 500 whose cause is a full disk.
fn disk_was_full(response: &Response<Body>) -> bool {
    response.status() == StatusCode::INTERNAL_SERVER_ERROR
        && response
            .extensions()
            .get::<ErrorLog>()
            .is_some_and(|log| disk::is_full(&log.detail))
}

/// Logs a 5xx with the cause its [`ErrorLog`] carries (never sent to the
/// client): 500s as errors, other 5xx (not ready, over capacity) as warnings.
fn log_server_error(response: &Response<Body>, id: &HeaderValue, method: &Method, path: &str) {
    let status = response.status();
    if !status.is_server_error() {
        return;
    }
    let id = id.to_str().unwrap_or("?");
    let (code, detail) = response
        .extensions()
        .get::<ErrorLog>()
        .map_or(("?", "no detail"), |log| (&*log.code, &*log.detail));
    if status == StatusCode::INTERNAL_SERVER_ERROR {
        tracing::error!(request_id = id, %method, path, status = status.as_u16(), code, detail, "request failed");
    } else {
        tracing::warn!(request_id = id, %method, path, status = status.as_u16(), code, detail, "request failed");
    }
}

fn full(response: Response<Bytes>) -> Response<Body> {
    response.map(|bytes| BodyExt::boxed(Full::new(bytes).map_err(|never| match never {})))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id_for(value: &str) -> String {
        let mut headers = HeaderMap::new();
        if let Ok(value) = HeaderValue::from_str(value) {
            headers.insert(REQUEST_ID, value);
        }
        request_id(&headers).to_str().unwrap_or("").to_owned()
    }

    #[test]
    fn a_short_printable_request_id_is_kept_and_others_replaced() {
        assert_eq!(id_for("abc-123_x.y:z"), "abc-123_x.y:z");
        for rejected in ["", "has space", &"x".repeat(65)] {
            let made = id_for(rejected);
            assert_eq!(made.len(), 16, "{rejected:?} gave {made:?}");
            assert!(made.bytes().all(|b| b.is_ascii_hexdigit()));
        }
    }
}
