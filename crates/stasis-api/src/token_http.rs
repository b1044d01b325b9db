//! The token routes: a container token for one container of a town, and a
//! refresh of the token presented. Both mint with the server's signing key
//! and keep the presented token's lifetime (`exp - iat`), so a token never
//! outlives the lifetime it was given; a container token lives at most
//! [`DEFAULT_TTL`]. Neither can widen what the presented token grants: a
//! read-only token gets read-only tokens, a container token only tokens
//! for its own container.

#![allow(
    clippy::disallowed_macros,
    clippy::disallowed_methods,
    reason = "the JsonSchema derive builds its schemas with json! and to_value over our own types, never stored data"
)]

use crate::{
    Objects,
    auth::{Caller, DEFAULT_TTL, Grant, KeyRing, Scope, Token},
    body,
    error::ApiError,
    fencing::standing,
    reply,
};
use bytes::Bytes;
use http::{Response, StatusCode};
use serde::{Deserialize, Serialize};
use stasis_domain::{ids, town::Standing};
use std::time::Duration;

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ContainerTokenBody {
    container_id: String,
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RefreshBody {}

/// A minted token and what it grants, times in ms since the epoch.
#[derive(Serialize, schemars::JsonSchema)]
pub(crate) struct Issued<'a> {
    token: String,
    scope: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    town_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    container_id: Option<&'a str>,
    read_only: bool,
    key_id: &'a str,
    issued_at: i64,
    expires_at: i64,
}

/// `POST /api/towns/{town}/container-token {container_id}`: refused (409
/// `container_fenced`) for a container that another one has superseded.
pub async fn container_token(
    objects: &impl Objects,
    keys: Option<&KeyRing>,
    caller: &Caller,
    town_id: &str,
    body: &Bytes,
) -> Result<Response<Bytes>, ApiError> {
    let (keys, presented) = keyed(keys, caller)?;
    let wanted: ContainerTokenBody = body::parse_json(body)?;
    ids::check_id("container_id", &wanted.container_id)?;
    caller.check_container(&wanted.container_id)?;
    refuse_superseded(objects, town_id, &wanted.container_id).await?;
    let grant = Grant {
        scope: Scope::Container {
            town: town_id.to_owned(),
            container_id: wanted.container_id,
        },
        read_only: caller.grant.read_only,
    };
    issue(objects, keys, &grant, presented.lifetime().min(DEFAULT_TTL))
}

/// `POST /api/token/refresh` (no body, or `{}`): a token like the one
/// presented, valid from now for its lifetime. A container token of a
/// superseded container is refused (409 `container_fenced`).
pub async fn refresh(
    objects: &impl Objects,
    keys: Option<&KeyRing>,
    caller: &Caller,
    body: &Bytes,
) -> Result<Response<Bytes>, ApiError> {
    let (keys, presented) = keyed(keys, caller)?;
    let _: RefreshBody = body::parse_optional_json(body)?;
    if let Scope::Container { town, container_id } = &presented.grant.scope {
        refuse_superseded(objects, town, container_id).await?;
    }
    issue(objects, keys, &presented.grant, presented.lifetime())
}

/// The keys and the presented token; a server without keys issues none.
fn keyed<'a>(
    keys: Option<&'a KeyRing>,
    caller: &'a Caller,
) -> Result<(&'a KeyRing, &'a Token), ApiError> {
    match (keys, &caller.token) {
        (Some(keys), Some(token)) => Ok((keys, token)),
        _ => Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "tokens_disabled",
            "this server has no keys (it serves loopback without auth), so it issues no tokens",
        )),
    }
}

async fn refuse_superseded(
    objects: &impl Objects,
    town_id: &str,
    container_id: &str,
) -> Result<(), ApiError> {
    match standing(objects, town_id, container_id).await? {
        superseded @ Standing::Superseded { .. } => {
            Err(superseded.fence(container_id).err().map_or_else(
                || ApiError::internal("a superseded standing gave a fence"),
                Into::into,
            ))
        }
        _ => Ok(()),
    }
}

fn issue(
    objects: &impl Objects,
    keys: &KeyRing,
    grant: &Grant,
    lifetime: Duration,
) -> Result<Response<Bytes>, ApiError> {
    let now_ms = objects.now_ms();
    let now_s = u64::try_from(now_ms / 1000).unwrap_or(0);
    let lifetime = lifetime.max(Duration::from_secs(1));
    let token = keys
        .mint(grant, now_s, lifetime)
        .map_err(|err| ApiError::internal(format!("minting a token: {err}")))?;
    let to_ms = |s: u64| i64::try_from(s.saturating_mul(1000)).unwrap_or(i64::MAX);
    let issued = Issued {
        token,
        scope: grant.scope.kind(),
        town_id: grant.scope.town(),
        container_id: grant.scope.container_id(),
        read_only: grant.read_only,
        key_id: keys.signing_key_id(),
        issued_at: to_ms(now_s),
        expires_at: to_ms(now_s.saturating_add(lifetime.as_secs())),
    };
    let mut response = reply::json(StatusCode::OK, &issued);
    response.headers_mut().insert(
        http::header::CACHE_CONTROL,
        http::HeaderValue::from_static("no-store"),
    );
    Ok(response)
}
