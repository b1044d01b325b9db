//! Request bodies: content type and JSON.

use crate::error::ApiError;
use http::{HeaderMap, StatusCode, header};

/// Accepts `application/json` (with parameters) or no content type at all.
pub fn check_json_content_type(headers: &HeaderMap) -> Result<(), ApiError> {
    check_content_type(headers, "application/json")
}

/// Accepts `wanted` (with parameters) or no content type at all.
pub fn check_content_type(headers: &HeaderMap, wanted: &str) -> Result<(), ApiError> {
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
    if essence == wanted {
        Ok(())
    } else {
        Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            format!("this endpoint takes {wanted}, not {essence:?}"),
        ))
    }
}
