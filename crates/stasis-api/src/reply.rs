//! Building responses.

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode, header};
use serde::Serialize;

/// A JSON response. Serialising our own types cannot fail; if it ever did,
/// the client gets a 500 rather than a panic.
pub fn json(status: StatusCode, value: &impl Serialize) -> Response<Bytes> {
    match serde_json::to_vec(value) {
        Ok(body) => raw_json(status, body),
        Err(err) => raw_json(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!(r#"{{"error":{{"code":"internal_error","message":"{err}"}}}}"#).into_bytes(),
        ),
    }
}

/// A response whose body is already JSON text.
pub fn raw_json(status: StatusCode, body: Vec<u8>) -> Response<Bytes> {
    let mut response = Response::new(Bytes::from(body));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}
