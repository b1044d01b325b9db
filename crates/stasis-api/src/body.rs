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

/// Parses a JSON object body into `T`: text that is not JSON → 400
/// `invalid_json`; JSON of the wrong shape → 400 `invalid_request` naming
/// the field (`agents[2].role: invalid type ...`).
pub fn parse_json<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    let value: serde_json::Value = serde_json::from_slice(body).map_err(|err| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_json",
            format!("the body is not valid JSON: {err}"),
        )
    })?;
    if !value.is_object() {
        return Err(ApiError::invalid_request("the body must be a JSON object"));
    }
    serde_path_to_error::deserialize(value).map_err(|err| {
        let path = err.path().to_string();
        let inner = err.into_inner();
        if path == "." {
            ApiError::invalid_request(inner.to_string())
        } else {
            ApiError::invalid_request(format!("{path}: {inner}"))
        }
    })
}

/// Like [`parse_json`], with an empty body read as `{}`.
pub fn parse_optional_json<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        parse_json(b"{}")
    } else {
        parse_json(body)
    }
}

/// The body as JSON text, checked to be one JSON value.
pub fn json_text(body: &[u8]) -> Result<String, ApiError> {
    let text = std::str::from_utf8(body).map_err(|_| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_json",
            "the body is not UTF-8 JSON",
        )
    })?;
    serde_json::from_str::<serde::de::IgnoredAny>(text).map_err(|err| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_json",
            format!("the body is not valid JSON: {err}"),
        )
    })?;
    Ok(text.trim().to_owned())
}

/// Stored JSON text, embedded as is in an answer (`null` if it ever were
/// not JSON).
pub fn raw(text: String) -> Box<serde_json::value::RawValue> {
    serde_json::value::RawValue::from_string(text)
        .unwrap_or_else(|_| serde_json::value::RawValue::NULL.to_owned())
}
