//! Worker requests and responses to and from `http` types.

use bytes::Bytes;
use worker::{Headers, Request, Response, Result};

/// The request's head as `http` parts, for `Api::admit`.
pub fn head_of(req: &Request) -> Result<http::request::Parts> {
    let url = req.url()?;
    let mut target = url.path().to_owned();
    if let Some(query) = url.query() {
        target.push('?');
        target.push_str(query);
    }
    let mut builder = http::Request::builder()
        .method(req.method().as_ref())
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

/// An `http` response as a worker response.
pub fn to_worker(response: http::Response<Bytes>) -> Result<Response> {
    let (parts, body) = response.into_parts();
    let headers = Headers::new();
    for (name, value) in &parts.headers {
        if let Ok(value) = value.to_str() {
            headers.append(name.as_str(), value)?;
        }
    }
    Ok(Response::from_bytes(body.to_vec())?
        .with_status(parts.status.as_u16())
        .with_headers(headers))
}
