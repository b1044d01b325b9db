//! Request bodies: content type and JSON.

use crate::error::ApiError;
use http::{HeaderMap, StatusCode, header};

/// Accepts `application/json` (with parameters) or no content type at all.
pub fn check_json_content_type(headers: &HeaderMap) -> Result<(), ApiError> {
    check_content_type(headers, "application/json")
}

/// Accepts `wanted` (with parameters) or no content type at all. An empty
/// `Content-Type` counts as none: the edge runtime never passes one to the
/// worker, so refusing it on the host alone would split the runtimes.
pub fn check_content_type(headers: &HeaderMap, wanted: &str) -> Result<(), ApiError> {
    let Some(value) = headers.get(header::CONTENT_TYPE) else {
        return Ok(());
    };
    if value.as_bytes().trim_ascii().is_empty() {
        return Ok(());
    }
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
/// `invalid_json`; JSON of the wrong shape, or holding a value that cannot
/// be read back ([`stasis_domain::json_limits`]) → 400 `invalid_request`
/// naming the field (`agents[2].role: invalid type ...`).
pub fn parse_json<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    // Stored values inside are checked on their own, to the full depth.
    let text = checked_json(body, stasis_domain::json_limits::check_body)?;
    if !text.trim_start().starts_with('{') {
        return Err(ApiError::invalid_request("the body must be a JSON object"));
    }
    let mut deserializer = serde_json::Deserializer::from_str(text);
    serde_path_to_error::deserialize(&mut deserializer).map_err(|err| {
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

/// The body as JSON text, checked to be one JSON value that can be read
/// back.
pub fn json_text(body: &[u8]) -> Result<String, ApiError> {
    checked_json(body, stasis_domain::json_limits::check).map(|text| text.trim().to_owned())
}

/// UTF-8 JSON text, one value, within [`stasis_domain::json_limits`].
fn checked_json(
    body: &[u8],
    limits: fn(&str) -> Result<(), stasis_domain::json_limits::JsonBreach>,
) -> Result<&str, ApiError> {
    let invalid_json = |why: String| ApiError::new(StatusCode::BAD_REQUEST, "invalid_json", why);
    let text = std::str::from_utf8(body)
        .map_err(|_| invalid_json("the body is not UTF-8 JSON".to_owned()))?;
    // Skipping values checks the syntax only: no number is converted and
    // no depth limit applies, so the limits below get to name the place.
    serde_json::from_str::<serde::de::IgnoredAny>(text)
        .map_err(|err| invalid_json(format!("the body is not valid JSON: {err}")))?;
    limits(text)
        .map_err(|breach| ApiError::invalid_request(format!("the body {}", breach.describe())))?;
    Ok(text)
}

/// Stored JSON text, embedded as is in an answer (`null` if it ever were
/// not JSON).
pub fn raw(text: String) -> Box<serde_json::value::RawValue> {
    serde_json::value::RawValue::from_string(text)
        .unwrap_or_else(|_| serde_json::value::RawValue::NULL.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize)]
    #[allow(dead_code, reason = "only parsed")]
    struct Body {
        metadata: Box<serde_json::value::RawValue>,
    }

    fn refusal(body: &str) -> (String, String) {
        match parse_json::<Body>(body.as_bytes()) {
            Ok(_) => ("accepted".into(), String::new()),
            Err(err) => (err.code, err.message),
        }
    }

    #[test]
    fn values_that_cannot_be_read_back_are_refused_naming_their_place() {
        let (code, message) = refusal(r#"{"metadata":{"n":[1e999]}}"#);
        assert_eq!(code, "invalid_request");
        assert!(message.contains(".metadata.n[0]"), "{message}");
        let deep = format!(r#"{{"metadata":{}{}}}"#, "[".repeat(200), "]".repeat(200));
        let (code, message) = refusal(&deep);
        assert_eq!(code, "invalid_request");
        assert!(message.contains("deeper than"), "{message}");
        let deepest = format!(r#"{{"metadata":{}{}}}"#, "[".repeat(64), "]".repeat(64));
        assert_eq!(refusal(&deepest).0, "accepted", "64 levels are allowed");
        assert_eq!(refusal(r#"{"metadata":[1e999"#).0, "invalid_json");
        assert_eq!(refusal(r#"{"metadata":{"n":1e300}}"#).0, "accepted");
    }

    #[test]
    fn an_empty_content_type_counts_as_none() {
        let with = |value: &str| {
            let mut headers = HeaderMap::new();
            if let Ok(value) = value.parse() {
                headers.insert(header::CONTENT_TYPE, value);
            }
            check_json_content_type(&headers).map_err(|e| e.code)
        };
        assert_eq!(with(""), Ok(()));
        assert_eq!(with("application/json; charset=utf-8"), Ok(()));
        assert_eq!(with("text/plain"), Err("unsupported_media_type".to_owned()));
        assert_eq!(with(";"), Err("unsupported_media_type".to_owned()));
    }

    #[test]
    fn json_text_applies_the_same_limits() {
        assert_eq!(
            json_text(b" -1e400 ").map_err(|e| e.code),
            Err("invalid_request".to_owned())
        );
        assert_eq!(
            json_text(b" [1] ").map_err(|e| e.code),
            Ok("[1]".to_owned())
        );
    }
}
