//! Worker requests and responses to and from `http` types.

use bytes::Bytes;
use futures::{Stream, StreamExt as _};
use stasis_api::{Admitted, ApiError, export::Export};
use worker::{Headers, Request, Response, Result};

/// The request's head as `http` parts, for `Api::admit`.
pub fn head_of(req: &Request) -> Result<http::request::Parts> {
    let url = req.url()?;
    let mut target = url.path().to_owned();
    if let Some(query) = url.query() {
        target.push('?');
        target.push_str(query);
    }
    // The method as sent: `req.method()` reads every method workers-rs has
    // no name for (PROPFIND, say) as GET, which would answer it as a read.
    let mut builder = http::Request::builder()
        .method(req.inner().method().as_str())
        .uri(target);
    for (name, value) in req.headers() {
        builder = builder.header(name, value);
    }
    let (parts, ()) = builder
        .body(())
        .map_err(|err| worker::Error::RustError(format!("request head: {err}")))?
        .into_parts();
    Ok(parts)
}

/// An `http` response as a worker response; a 5xx's cause is logged.
///
/// A 204, 205 or 304 gets a null body (the Fetch spec forbids a body on
/// them; workerd warns about an empty one and may refuse it later). Any other
/// body moves into the response without a copy in the worker's memory: a
/// 25 MiB snapshot is then held once in wasm, not twice. A HEAD answer keeps
/// the `Content-Length` stasis-api set for it.
pub fn to_worker(response: http::Response<Bytes>) -> Result<Response> {
    let (parts, body) = response.into_parts();
    // A 5xx body is generic; its cause (which may name a trap or a
    // storage failure) goes to the worker's log only.
    if parts.status.is_server_error()
        && let Some(log) = parts.extensions.get::<stasis_api::ErrorLog>()
    {
        let status = parts.status.as_u16();
        if status == 500 {
            worker::console_error!("{status} {}: {}", log.code, log.detail);
        } else {
            worker::console_warn!("{status} {}: {}", log.code, log.detail);
        }
    }
    let headers = Headers::new();
    for (name, value) in &parts.headers {
        if let Ok(value) = value.to_str() {
            headers.append(name.as_str(), value)?;
        }
    }
    let status = parts.status;
    let response = if is_null_body_status(status) {
        Response::empty()?
    } else {
        // Takes the buffer back from `Bytes` when it is the only owner.
        Response::from_bytes(Vec::from(body))?
    };
    Ok(response.with_status(status.as_u16()).with_headers(headers))
}

/// The statuses whose responses must have a null body (Fetch: "null body
/// status"; the 1xx ones cannot be built by a worker at all).
fn is_null_body_status(status: http::StatusCode) -> bool {
    matches!(
        status,
        http::StatusCode::NO_CONTENT
            | http::StatusCode::RESET_CONTENT
            | http::StatusCode::NOT_MODIFIED
    )
}

/// The request's body, or `None` when it passes `limit` bytes.
///
/// With a `Content-Length` (which `Api::admit` has already held to the
/// limit, and which the runtime enforces) the body is read in one piece.
/// Without one (chunked) it is read chunk by chunk and refused as soon as it
/// passes the limit, so an oversized upload is never held whole: a worker
/// has 128 MB for everything. The rest of a refused body is read and
/// dropped (see [`discard_rest`]).
pub async fn read_body(req: &mut Request, limit: u64) -> Result<Option<Vec<u8>>> {
    if req.inner().body().is_none() {
        return Ok(Some(Vec::new()));
    }
    let within = |len: usize| u64::try_from(len).is_ok_and(|len| len <= limit);
    if req.headers().has("content-length")? {
        let body = req.bytes().await?;
        return Ok(within(body.len()).then_some(body));
    }
    let mut body = Vec::new();
    let mut chunks = req.stream()?;
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk?;
        if !within(body.len().saturating_add(chunk.len())) {
            discard_rest(&mut chunks).await;
            return Ok(None);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Some(body))
}

/// The request body's chunks as they arrive (none for a bodiless request).
pub type BodyChunks = Box<dyn Stream<Item = Result<Vec<u8>>> + Unpin>;

/// The request body's chunks, for [`limited`] and then [`discard_rest`].
pub fn body_chunks(req: &mut Request) -> Result<BodyChunks> {
    Ok(if req.inner().body().is_none() {
        Box::new(futures::stream::empty())
    } else {
        Box::new(req.stream()?)
    })
}

/// An import's body as the API takes it: chunks as they arrive, refused
/// (413) once they pass the limit. The platform caps request bodies before
/// the worker sees them (100 MB on most plans), which is why imports can
/// come in parts. It borrows the chunks so that what the API leaves unread
/// can be discarded ([`discard_rest`]).
pub fn limited<'a>(
    chunks: &'a mut BodyChunks,
    admitted: &Admitted,
) -> impl Stream<Item = std::result::Result<Bytes, ApiError>> + use<'a> {
    let limit = admitted.body_limit();
    let too_large = admitted.body_too_large();
    let mut received = 0u64;
    chunks.map(move |chunk| {
        let chunk = chunk
            .map_err(|err| ApiError::invalid_request(format!("reading the body failed: {err}")))?;
        received = received.saturating_add(u64::try_from(chunk.len()).unwrap_or(u64::MAX));
        if received > limit {
            return Err(too_large.clone());
        }
        Ok(Bytes::from(chunk))
    })
}

/// Reads what is left of a body a refusal did not need, and drops it.
///
/// Dropping the reader instead cancels the body while the client is still
/// sending it, and `wrangler dev`'s proxy then answers 503 "Your worker
/// restarted mid-request" in place of the refusal (and sometimes of the
/// next request too). The platform caps request bodies, so this is bounded.
pub async fn discard_rest(chunks: &mut (impl Stream<Item = Result<Vec<u8>>> + Unpin)) {
    while let Some(Ok(_)) = chunks.next().await {}
}

/// A snapshot's bytes, assembled from its chunks as they are read; a chunk
/// that fails verification errors the stream, which cuts the response (the
/// client sees fewer bytes than `Content-Length`).
pub fn snapshot_response(
    objects: crate::objects::EdgeObjects,
    download: Box<stasis_api::snapshot::Download>,
    head: &http::request::Parts,
) -> Result<Response> {
    let path = head.uri.path().to_owned();
    let response_head = download.head();
    let chunks = stasis_api::snapshot::stream(objects, download).map(move |chunk| {
        chunk.map(Vec::from).map_err(|err| {
            let detail = err.cause.as_deref().unwrap_or(&err.message);
            worker::console_error!(
                "snapshot download of {path} cut after its head was sent: {} {detail}",
                err.code
            );
            worker::Error::RustError("the download was cut; the worker log holds the cause".into())
        })
    });
    let headers = Headers::new();
    for (name, value) in response_head.headers() {
        if let Ok(value) = value.to_str() {
            headers.set(name.as_str(), value)?;
        }
    }
    Ok(Response::from_stream(chunks)?.with_headers(headers))
}

/// An export, streamed as it is read. A failure after the head was sent
/// errors the stream, which cuts the response; its cause is logged with
/// the request's `cf-ray` (or `X-Request-Id`).
pub fn export_response(
    objects: crate::objects::EdgeObjects,
    export: Export,
    head: &http::request::Parts,
) -> Result<Response> {
    let request_id = ["cf-ray", "x-request-id"]
        .iter()
        .find_map(|name| head.headers.get(*name)?.to_str().ok())
        .unwrap_or("-")
        .to_owned();
    let path = head.uri.path().to_owned();
    let chunks = stasis_api::export::stream(objects, export).map(move |chunk| {
        chunk.map(Vec::from).map_err(|err| {
            let detail = err.cause.as_deref().unwrap_or(&err.message);
            worker::console_error!(
                "export of {path} cut after its head was sent (request {request_id}): {} {detail}",
                err.code
            );
            worker::Error::RustError("the export was cut; the worker log holds the cause".into())
        })
    });
    let headers = Headers::new();
    for (name, value) in stasis_api::export_head().headers() {
        if let Ok(value) = value.to_str() {
            headers.set(name.as_str(), value)?;
        }
    }
    Ok(Response::from_stream(chunks)?.with_headers(headers))
}
