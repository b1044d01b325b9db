//! A token as the client holds it: what its claims say, and when to refresh it.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::Deserialize;

/// What the client reads of a stasis token's claims. It does not verify them (it holds no
/// key): they only tell it when to refresh and which container the token is bound to.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct TokenClaims {
    /// `admin`, `town`, `container` or `bootstrap`.
    pub scope: String,
    /// The town of a town or container token.
    #[serde(default)]
    pub town: Option<String>,
    /// The container of a container token.
    #[serde(default)]
    pub container_id: Option<String>,
    /// Every write is refused with it.
    #[serde(default)]
    pub read_only: bool,
    /// Issued at, seconds since the epoch.
    pub iat: u64,
    /// Expires at, seconds since the epoch.
    pub exp: u64,
}

impl TokenClaims {
    /// The claims of `token`, when it is a JWT (an opaque token has none).
    pub fn of(token: &str) -> Option<Self> {
        let payload = token.split('.').nth(1)?;
        let bytes = URL_SAFE_NO_PAD.decode(payload.trim_end_matches('=')).ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    /// How long it was minted to live.
    pub fn lifetime(&self) -> Duration {
        Duration::from_secs(self.exp.saturating_sub(self.iat))
    }

    /// True for a container token of `container_id` in `town`.
    pub fn binds(&self, town: &str, container_id: &str) -> bool {
        self.scope == "container"
            && self.town.as_deref() == Some(town)
            && self.container_id.as_deref() == Some(container_id)
    }
}

/// A token, its claims, and (for a JWT) the local instants at which to refresh it and at which
/// it expires.
#[derive(Debug, Clone)]
pub(crate) struct Held {
    pub(crate) token: String,
    pub(crate) claims: Option<TokenClaims>,
    pub(crate) refresh_at: Option<Instant>,
    pub(crate) expires_at: Option<Instant>,
}

impl Held {
    /// A token met as text (configured, or read from a file): its expiry is read against the
    /// wall clock.
    pub(crate) fn from_text(token: String) -> Self {
        let claims = TokenClaims::of(&token);
        let now_s = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let remaining = claims
            .as_ref()
            .map(|c| Duration::from_secs(c.exp.saturating_sub(now_s)));
        let lifetime = claims.as_ref().map(TokenClaims::lifetime);
        Self::timed(token, claims, remaining, lifetime)
    }

    /// A token the server just minted for `lifetime`: timed from now, whatever the clocks say.
    pub(crate) fn issued(token: String, lifetime: Duration) -> Self {
        let claims = TokenClaims::of(&token);
        Self::timed(token, claims, Some(lifetime), Some(lifetime))
    }

    /// Refreshed once half its lifetime has passed (or at once when less than half is left); a
    /// bootstrap token never is (it is only exchanged, once, for a container token).
    fn timed(
        token: String,
        claims: Option<TokenClaims>,
        remaining: Option<Duration>,
        lifetime: Option<Duration>,
    ) -> Self {
        let now = Instant::now();
        let expires_at = remaining.and_then(|r| now.checked_add(r));
        let bootstrap = claims.as_ref().is_some_and(|c| c.scope == "bootstrap");
        let refresh_at = match (expires_at, lifetime) {
            _ if bootstrap => None,
            (Some(expires), Some(lifetime)) => {
                Some(expires.checked_sub(lifetime / 2).unwrap_or(now))
            }
            _ => None,
        };
        Held {
            token,
            claims,
            refresh_at,
            expires_at,
        }
    }

    /// Past its refresh time.
    pub(crate) fn due(&self, now: Instant) -> bool {
        self.refresh_at.is_some_and(|at| now >= at)
    }

    /// Still valid by the local clock (an opaque token always is).
    pub(crate) fn valid(&self, now: Instant) -> bool {
        self.expires_at.is_none_or(|at| now < at)
    }

    /// Expires later than `other`.
    pub(crate) fn outlives(&self, other: &Held) -> bool {
        match (&self.claims, &other.claims) {
            (Some(mine), Some(theirs)) => mine.exp > theirs.exp,
            _ => false,
        }
    }
}

#[cfg(test)]
#[allow(clippy::expect_used, reason = "a test fails loudly")]
mod tests {
    use super::*;

    fn jwt(claims: &str) -> String {
        format!("e30.{}.sig", URL_SAFE_NO_PAD.encode(claims))
    }

    #[test]
    fn a_jwts_claims_are_read_and_an_opaque_token_has_none() {
        let token = jwt(r#"{"scope":"container","town":"t","container_id":"c","iat":10,"exp":40}"#);
        let claims = TokenClaims::of(&token).expect("claims");
        assert!(claims.binds("t", "c"));
        assert!(!claims.binds("t", "d"));
        assert_eq!(claims.lifetime(), Duration::from_secs(30));
        assert_eq!(TokenClaims::of("test-token"), None);
        assert_eq!(TokenClaims::of("a.b.c"), None);
    }

    #[test]
    fn an_issued_token_is_refreshed_at_half_its_lifetime() {
        let token = jwt(r#"{"scope":"admin","iat":10,"exp":40}"#);
        let held = Held::issued(token, Duration::from_secs(30));
        let now = Instant::now();
        assert!(!held.due(now));
        assert!(held.due(now + Duration::from_secs(16)));
        assert!(held.valid(now + Duration::from_secs(29)));
        assert!(!held.valid(now + Duration::from_secs(31)));
    }

    #[test]
    fn a_bootstrap_token_is_never_due_for_a_refresh() {
        let token = jwt(r#"{"scope":"bootstrap","town":"t","jti":"j","iat":10,"exp":40}"#);
        let held = Held::issued(token, Duration::from_secs(30));
        let now = Instant::now();
        assert!(!held.due(now + Duration::from_secs(29)));
        assert!(held.valid(now + Duration::from_secs(29)));
    }

    #[test]
    fn an_expired_configured_token_is_due_and_invalid_and_an_opaque_one_never() {
        let held = Held::from_text(jwt(r#"{"scope":"admin","iat":10,"exp":40}"#));
        let now = Instant::now();
        assert!(held.due(now) && !held.valid(now));
        let opaque = Held::from_text("test-token".into());
        assert!(!opaque.due(now) && opaque.valid(now));
    }
}
