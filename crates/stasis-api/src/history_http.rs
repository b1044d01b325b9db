//! The agent's history: the versions of one kind, and named pins. A kept
//! version itself is read through its kind's own route with `?version=N`
//! (`/db-snapshot`, `/db-snapshot/manifest`, `/workspace/manifest`,
//! `/checkpoint`, `/memory/{key}`).

#![allow(
    clippy::disallowed_macros,
    clippy::disallowed_methods,
    reason = "the JsonSchema derive builds its schemas with json! and to_value over our own types, never stored data"
)]

use crate::{Objects, body, error::ApiError, query::Query, reply};
use bytes::Bytes;
use http::{Method, Response, StatusCode};
use serde::{Deserialize, Serialize};
use stasis_domain::{
    history::{Kind, Pin},
    ids::AgentKey,
    operation::agent as op,
};

/// `GET /history?kind=&key=&after=&limit=`: a page of one kind's versions
/// (current and kept), oldest first.
pub async fn list(
    objects: &impl Objects,
    key: &AgentKey,
    query: &Query,
) -> Result<Response<Bytes>, ApiError> {
    let kind = query.text("kind").ok_or_else(|| {
        ApiError::invalid_request("kind is required: db_snapshot, workspace, checkpoint or memory")
    })?;
    let kind = Kind::parse(kind)?;
    let memory_key = query.id("key")?;
    if memory_key.is_some() && kind != Kind::Memory {
        return Err(ApiError::invalid_request("key goes with kind=memory only"));
    }
    let limit = query
        .u64("limit")?
        .map(|l| u32::try_from(l).unwrap_or(u32::MAX));
    let after = query.u64("after")?.unwrap_or(0);
    let page = objects
        .agent(key, op::history(kind, memory_key, after, limit))
        .await?;
    Ok(reply::json(StatusCode::OK, &page))
}

/// Every pin.
#[derive(Serialize, schemars::JsonSchema)]
pub(crate) struct PinsView {
    pins: Vec<Pin>,
}

/// `GET /history/pins`.
pub async fn pins(objects: &impl Objects, key: &AgentKey) -> Result<Response<Bytes>, ApiError> {
    let pins = objects.agent(key, op::list_pins()).await?;
    Ok(reply::json(StatusCode::OK, &PinsView { pins }))
}

/// The body of `PUT /history/pins/{pin}`.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct PinBody {
    /// The point to hold; the log's last seq when absent.
    #[serde(default)]
    seq: Option<u64>,
}

/// `PUT|GET|DELETE /history/pins/{pin}`.
pub async fn pin(
    objects: &impl Objects,
    key: &AgentKey,
    name: &str,
    method: &Method,
    body: &Bytes,
) -> Result<Response<Bytes>, ApiError> {
    let name = name.to_owned();
    match *method {
        Method::PUT => {
            let wanted: PinBody = body::parse_optional_json(body)?;
            let (pin, created) = objects.agent(key, op::put_pin(name, wanted.seq)).await?;
            let status = if created {
                StatusCode::CREATED
            } else {
                StatusCode::OK
            };
            Ok(reply::json(status, &pin))
        }
        Method::DELETE => {
            objects.agent(key, op::delete_pin(name)).await?;
            let mut response = Response::new(Bytes::new());
            *response.status_mut() = StatusCode::NO_CONTENT;
            Ok(response)
        }
        _ => {
            let pin = objects.agent(key, op::get_pin(name)).await?;
            Ok(reply::json(StatusCode::OK, &pin))
        }
    }
}
