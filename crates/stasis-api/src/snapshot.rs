//! `/db-snapshot`: headers in, the runtime's snapshot saga, headers out.

use crate::{Snapshots, error::ApiError, reply};
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Response, StatusCode, header};
use stasis_domain::{
    DomainError, Refusal,
    ids::AgentKey,
    snapshot::{self, Precondition, PutRequest, SnapshotMeta, saga},
};

/// The body limit of a snapshot upload.
pub const BODY_LIMIT: u64 = snapshot::MAX_SNAPSHOT_BYTES;

/// Accepts `application/octet-stream` or no content type at all.
pub fn check_content_type(headers: &HeaderMap) -> Result<(), ApiError> {
    crate::body::check_content_type(headers, "application/octet-stream")
}

/// `PUT`/`POST`: stores the body.
pub async fn put(
    objects: &impl Snapshots,
    key: &AgentKey,
    headers: &HeaderMap,
    body: Bytes,
) -> Result<Response<Bytes>, ApiError> {
    let request = PutRequest {
        expected_sha256: expected_sha256(headers)?,
        precondition: etag_list(headers, header::IF_MATCH)?,
        event_watermark: event_seq(headers)?,
        inline_limit: objects.snapshot_inline_limit(),
        key_prefix: snapshot::key_prefix(key),
    };
    let meta = objects.snapshot_put(key, request, body).await?;
    let mut response = reply::json(StatusCode::CREATED, &meta);
    describe(response.headers_mut(), &meta);
    Ok(response)
}

/// `GET`/`HEAD`: the bytes (verified) or only their headers.
pub async fn get(
    objects: &impl Snapshots,
    key: &AgentKey,
    headers: &HeaderMap,
    with_bytes: bool,
) -> Result<Response<Bytes>, ApiError> {
    if let Some(wanted) = etag_list(headers, header::IF_NONE_MATCH)? {
        let current = objects.snapshot_read(key, false).await?;
        if let Some((meta, _)) = current
            && wanted.holds(Some(&meta))
        {
            let mut response = Response::new(Bytes::new());
            *response.status_mut() = StatusCode::NOT_MODIFIED;
            describe(response.headers_mut(), &meta);
            return Ok(response);
        }
    }
    let found = objects
        .snapshot_read(key, with_bytes)
        .await
        .map_err(corrupt_or_other)?;
    let Some((meta, bytes)) = found else {
        return Err(not_found());
    };
    let mut response = Response::new(bytes.unwrap_or_default());
    let headers = response.headers_mut();
    describe(headers, &meta);
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/octet-stream"),
    );
    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(meta.size));
    Ok(response)
}

/// `DELETE`.
pub async fn delete(objects: &impl Snapshots, key: &AgentKey) -> Result<Response<Bytes>, ApiError> {
    objects.snapshot_delete(key).await?;
    let mut response = Response::new(Bytes::new());
    *response.status_mut() = StatusCode::NO_CONTENT;
    Ok(response)
}

/// Bytes that fail their sha256 are a 500 with a code of their own, so that
/// a client knows retrying will not help.
fn corrupt_or_other(err: DomainError) -> ApiError {
    match err {
        DomainError::Storage(message) if message.starts_with(saga::CORRUPT) => ApiError::new(
            http::StatusCode::INTERNAL_SERVER_ERROR,
            saga::CORRUPT,
            message,
        ),
        other => ApiError::from(other),
    }
}

fn not_found() -> ApiError {
    ApiError::from(DomainError::NotFound(Refusal::new(
        "snapshot_not_found",
        "the agent has no snapshot",
    )))
}

/// The headers every snapshot answer carries.
fn describe(headers: &mut HeaderMap, meta: &SnapshotMeta) {
    let pairs = [
        (header::ETAG.as_str(), meta.etag()),
        ("x-stasis-sha256", meta.sha256.clone()),
        ("x-stasis-snapshot-version", meta.version.to_string()),
        ("x-stasis-event-seq", meta.event_watermark.to_string()),
    ];
    for (name, value) in pairs {
        if let (Ok(name), Ok(value)) = (
            header::HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(&value),
        ) {
            headers.insert(name, value);
        }
    }
}

fn text<'a>(headers: &'a HeaderMap, name: &str) -> Result<Option<&'a str>, ApiError> {
    match headers.get(name) {
        None => Ok(None),
        Some(value) => value
            .to_str()
            .map(|v| Some(v.trim()))
            .map_err(|_| ApiError::invalid_request(format!("{name} must be ASCII text"))),
    }
}

fn expected_sha256(headers: &HeaderMap) -> Result<Option<String>, ApiError> {
    let Some(value) = text(headers, "x-stasis-sha256")? else {
        return Ok(None);
    };
    if !snapshot::is_sha256_hex(value) {
        return Err(ApiError::invalid_request(
            "X-Stasis-Sha256 must be 64 hex digits (the sha256 of the body)",
        ));
    }
    Ok(Some(value.to_ascii_lowercase()))
}

fn event_seq(headers: &HeaderMap) -> Result<Option<u64>, ApiError> {
    let Some(value) = text(headers, "x-stasis-event-seq")? else {
        return Ok(None);
    };
    value
        .parse::<u64>()
        .ok()
        .filter(|seq| i64::try_from(*seq).is_ok())
        .map(Some)
        .ok_or_else(|| {
            ApiError::invalid_request("X-Stasis-Event-Seq must be a non-negative integer seq")
        })
}

/// `If-Match` / `If-None-Match`: `*` or a list of (possibly weak) ETags,
/// each compared by its sha256.
fn etag_list(
    headers: &HeaderMap,
    name: header::HeaderName,
) -> Result<Option<Precondition>, ApiError> {
    let Some(value) = text(headers, name.as_str())? else {
        return Ok(None);
    };
    if value == "*" {
        return Ok(Some(Precondition::Exists));
    }
    let mut etags = Vec::new();
    for item in value.split(',') {
        let item = item.trim();
        let bare = item.strip_prefix("W/").unwrap_or(item);
        let bare = bare
            .strip_prefix('"')
            .and_then(|b| b.strip_suffix('"'))
            .unwrap_or(bare);
        if bare.is_empty() || bare.contains('"') {
            return Err(ApiError::invalid_request(format!(
                "{name} must be * or a list of quoted ETags"
            )));
        }
        etags.push(bare.to_ascii_lowercase());
    }
    Ok(Some(Precondition::OneOf(etags)))
}
