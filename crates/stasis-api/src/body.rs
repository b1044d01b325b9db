//! Request bodies: content type and JSON.

use crate::error::ApiError;
use http::{HeaderMap, StatusCode, header};
use serde::Deserialize;

/// Accepts `application/json` (with parameters) or no content type at all.
pub fn check_json_content_type(headers: &HeaderMap) -> Result<(), ApiError> {
    let Some(value) = headers.get(header::CONTENT_TYPE) else {
        return Ok(());
    };
    let essence = value
        .to_str()
        .unwrap_or("")
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    if essence == "application/json" {
        Ok(())
    } else {
        Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            format!("this endpoint takes application/json, not {essence:?}"),
        ))
    }
}

/// Parses JSON, telling malformed JSON (`invalid_json`) apart from JSON of
/// the wrong shape (`invalid_request`).
pub fn parse_json<'a, T: Deserialize<'a>>(body: &'a [u8]) -> Result<T, ApiError> {
    serde_json::from_slice(body).map_err(|err| {
        use serde_json::error::Category;
        match err.classify() {
            Category::Data => ApiError::invalid_request(format!("the body does not fit: {err}")),
            Category::Syntax | Category::Eof | Category::Io => ApiError::new(
                StatusCode::BAD_REQUEST,
                "invalid_json",
                format!("the body is not valid JSON: {err}"),
            ),
        }
    })
}
