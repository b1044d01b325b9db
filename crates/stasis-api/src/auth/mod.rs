//! Bearer tokens: who a request comes from, and what it may do.
//!
//! A token is a JWT signed with one of the server's keys ([`keys`]; the
//! format is in [`token`]). It grants a [`Scope`] (admin, one town, one
//! town as one container, or a bootstrap token that can only be exchanged,
//! once, for a container token) and may be read-only. The same code runs
//! on the host and the edge; the clock is the runtime's.
//!
//! - A 401 says why ([`Rejection::reason`]) and never echoes the token,
//!   a signature or the keys held.
//! - A 403 (`forbidden`) says why too: another town, a write with a
//!   read-only token, a container token naming another container, or a
//!   bootstrap token used for anything but its one exchange.

mod grant;
mod hs256;
mod keys;
mod token;

pub use grant::{
    ABSOLUTE_LIFETIME, DEFAULT_ADMIN_TTL, DEFAULT_BOOTSTRAP_TTL, DEFAULT_TTL, Grant, MAX_TTL, Scope,
};
pub use keys::{IMPLIED_KEY_ID, KeyError, KeyRing, KeySettings, MIN_SECRET_CHARS};
pub use token::{MintError, Rejection, Token};

use crate::error::ApiError;
use http::{HeaderMap, StatusCode, header};

/// Who sent a request.
#[derive(Debug, Clone)]
pub struct Caller {
    /// What it may do.
    pub grant: Grant,
    /// The token it presented; `None` on a server without keys, where
    /// every request is unrestricted.
    pub token: Option<Token>,
}

impl Caller {
    /// A request on a server without keys (or to a public path).
    pub fn unrestricted() -> Self {
        Self {
            grant: Grant::unrestricted(),
            token: None,
        }
    }

    /// The container a container token binds the request to.
    pub fn container_id(&self) -> Option<&str> {
        self.grant.scope.container_id()
    }

    /// Refuses (403) a container token that names a container other than
    /// its own in a request.
    pub fn check_container(&self, named: &str) -> Result<(), ApiError> {
        match self.container_id() {
            Some(own) if own != named => Err(forbidden(
                "other_container",
                format!("this token is bound to container {own:?}, not {named:?}"),
            )),
            _ => Ok(()),
        }
    }
}

/// Reads and verifies the bearer token of `headers` at `now_ms`.
pub fn authenticate(keys: &KeyRing, headers: &HeaderMap, now_ms: i64) -> Result<Caller, ApiError> {
    let value = headers
        .get(header::AUTHORIZATION)
        .ok_or_else(|| unauthorized(Rejection::Missing))?;
    let text = value
        .to_str()
        .ok()
        .and_then(bearer_token)
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| {
            unauthorized(Rejection::Malformed(
                "the Authorization header must be 'Bearer <token>'",
            ))
        })?;
    let now_s = u64::try_from(now_ms / 1000).unwrap_or(0);
    let token = keys.verify(text, now_s).map_err(unauthorized)?;
    Ok(Caller {
        grant: token.grant.clone(),
        token: Some(token),
    })
}

/// The token of `Bearer <token>`; the scheme's name is case-insensitive
/// (RFC 9110, section 11.1), so `bearer <token>` is one too.
fn bearer_token(value: &str) -> Option<&str> {
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then_some(token)
}

/// The 401 for `rejection`: code `unauthorized`, its `reason`, and the
/// `WWW-Authenticate` challenge of RFC 6750.
pub fn unauthorized(rejection: Rejection) -> ApiError {
    let challenge = match rejection {
        Rejection::Missing => "Bearer".to_owned(),
        other => format!(
            "Bearer error=\"invalid_token\", error_description=\"{}\"",
            other.reason()
        ),
    };
    ApiError::new(
        StatusCode::UNAUTHORIZED,
        "unauthorized",
        rejection.message(),
    )
    .with("reason", rejection.reason())
    .with_header(header::WWW_AUTHENTICATE, challenge)
}

/// A 403 `forbidden` with its `reason`.
pub fn forbidden(reason: &str, message: impl Into<String>) -> ApiError {
    ApiError::new(StatusCode::FORBIDDEN, "forbidden", message).with("reason", reason)
}

#[cfg(test)]
mod tests {
    use super::bearer_token;

    #[test]
    fn the_bearer_scheme_is_read_in_any_case() {
        for header in ["Bearer t", "bearer t", "BEARER t"] {
            assert_eq!(bearer_token(header), Some("t"), "{header}");
        }
        for header in ["Bearer", "Basic t", "Bearert", "Bear t"] {
            assert_eq!(bearer_token(header), None, "{header}");
        }
    }
}
