//! The token routes: a container token for one container of a town, and a
//! refresh of the token presented. Both mint with the server's signing key
//! and keep the presented token's lifetime (`exp - iat`), so a token never
//! outlives the lifetime it was given; a container token lives at most
//! [`DEFAULT_TTL`]. Neither can widen what the presented token grants: a
//! read-only token gets read-only tokens, a container token only tokens
//! for its own container.
//!
//! A bootstrap token is exchanged once (the town records its id as spent,
//! `stasis_domain::town::bootstrap`) for a container token of one container,
//! which lives [`DEFAULT_TTL`]; it is never refreshed. Every minted token
//! carries the issue time of the token its line started from, and none
//! outlives it by more than [`ABSOLUTE_LIFETIME`]: past that, a refresh or
//! an exchange is refused (403 `absolute_lifetime`).

#![allow(
    clippy::disallowed_macros,
    clippy::disallowed_methods,
    reason = "the JsonSchema derive builds its schemas with json! and to_value over our own types, never stored data"
)]

use crate::{
    Objects,
    auth::{ABSOLUTE_LIFETIME, Caller, DEFAULT_TTL, Grant, KeyRing, Scope, Token, forbidden},
    body,
    error::ApiError,
    fencing::standing,
    reply,
};
use bytes::Bytes;
use http::{Response, StatusCode};
use serde::{Deserialize, Serialize};
use stasis_domain::{
    ids,
    operation::town as op,
    town::{Redemption, Standing},
};
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
/// `container_fenced`) for a container that another one has superseded,
/// and (403 `bootstrap_spent`) for a bootstrap token spent on another
/// container.
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
    // The town answers where the container stands, naming its successor;
    // the redemption checks again in its own transaction.
    refuse_superseded(objects, town_id, &wanted.container_id).await?;
    let lifetime = match presented.grant.scope.token_id() {
        Some(token_id) => {
            redeem(objects, presented, token_id, town_id, &wanted.container_id).await?;
            DEFAULT_TTL
        }
        None => presented.lifetime().min(DEFAULT_TTL),
    };
    let grant = Grant {
        scope: Scope::Container {
            town: town_id.to_owned(),
            container_id: wanted.container_id,
        },
        read_only: caller.grant.read_only,
    };
    issue(objects, keys, &grant, lifetime, presented.origin)
}

/// Spends the bootstrap token `presented` on `container_id`, once: a
/// retry for the same container passes, another container is refused.
async fn redeem(
    objects: &impl Objects,
    presented: &Token,
    token_id: &str,
    town_id: &str,
    container_id: &str,
) -> Result<(), ApiError> {
    let expires_at_ms =
        i64::try_from(presented.expires_at.saturating_mul(1000)).unwrap_or(i64::MAX);
    let redeem = op::redeem_bootstrap(token_id.to_owned(), container_id.to_owned(), expires_at_ms);
    match objects.town(town_id, redeem).await? {
        Redemption::Redeemed | Redemption::Again => Ok(()),
        Redemption::Spent { .. } => Err(forbidden(
            "bootstrap_spent",
            format!(
                "this bootstrap token was exchanged for another container's token already; \
                 a bootstrap token is exchanged once, for one container, so it cannot mint a \
                 token for container {container_id:?}"
            ),
        )),
    }
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
    issue(
        objects,
        keys,
        &presented.grant,
        presented.lifetime(),
        presented.origin,
    )
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

/// The lifetime of a token minted now for `wanted`, in a line that started
/// at `origin_s`: cut to end [`ABSOLUTE_LIFETIME`] after it, and refused
/// (403 `absolute_lifetime`) once less than a second of that is left.
fn within_line(now_s: u64, origin_s: u64, wanted: Duration) -> Result<Duration, ApiError> {
    let end_s = origin_s.saturating_add(ABSOLUTE_LIFETIME.as_secs());
    let left = Duration::from_secs(end_s.saturating_sub(now_s));
    if left < Duration::from_secs(1) {
        return Err(forbidden(
            "absolute_lifetime",
            format!(
                "this token descends from one minted more than {} days ago, the longest a line \
                 of refreshed or exchanged tokens lasts: mint a new one (`stasis token`)",
                ABSOLUTE_LIFETIME.as_secs() / 86_400
            ),
        ));
    }
    Ok(wanted.max(Duration::from_secs(1)).min(left))
}

fn issue(
    objects: &impl Objects,
    keys: &KeyRing,
    grant: &Grant,
    lifetime: Duration,
    origin_s: u64,
) -> Result<Response<Bytes>, ApiError> {
    let now_ms = objects.now_ms();
    let now_s = u64::try_from(now_ms / 1000).unwrap_or(0);
    let lifetime = within_line(now_s, origin_s, lifetime)?;
    let token = keys
        .mint_descendant(grant, now_s, lifetime, origin_s)
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

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: u64 = 1_760_000_000;
    const HOUR: Duration = Duration::from_secs(3600);

    fn reason(refused: Result<Duration, ApiError>) -> Option<String> {
        refused.err().and_then(|err| {
            err.extra
                .get("reason")
                .and_then(|r| r.as_str())
                .map(str::to_owned)
        })
    }

    #[test]
    fn a_line_of_tokens_ends_its_absolute_lifetime_after_it_started() {
        assert_eq!(within_line(NOW, NOW, HOUR).ok(), Some(HOUR));
        let end = NOW + ABSOLUTE_LIFETIME.as_secs();
        assert_eq!(
            within_line(end - 60, NOW, HOUR).ok(),
            Some(Duration::from_secs(60)),
            "the last refresh is cut to the line's end"
        );
        for past in [end, end + 1, end + 86_400] {
            assert_eq!(
                reason(within_line(past, NOW, HOUR)).as_deref(),
                Some("absolute_lifetime"),
                "at {past}"
            );
        }
    }
}
