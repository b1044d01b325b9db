//! Tokens as JWTs (RFC 7519) signed with HS256: the header names the key
//! (`kid`), the claims the grant and its times.
//!
//! ```text
//! {"alg":"HS256","typ":"JWT","kid":"default"}
//! {"scope":"container","town":"t1","container_id":"c-1f…","read_only":false,"iat":1760000000,"exp":1760086400}
//! {"scope":"bootstrap","town":"t1","jti":"9c0e…","iat":1760000000,"exp":1760003600}
//! ```
//!
//! `scope` is `admin`, `town`, `container` or `bootstrap`; `town` is set
//! for all but `admin`, `container_id` for `container`, `jti` (the token's
//! id, which the town records once it is spent) for `bootstrap` only;
//! `iat` and `exp` are seconds since the epoch. A token minted by a refresh
//! or an exchange also carries `orig_iat`: the `iat` of the token its line
//! started from, which bounds how long the line lasts
//! ([`super::ABSOLUTE_LIFETIME`]). Verification checks the signature (in constant time; see
//! [`super::hs256`]) before anything it reads from the claims counts, and
//! the expiry against the runtime's clock.

use super::{
    grant::{Grant, MAX_TTL, Scope},
    keys::KeyRing,
};
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation, errors::ErrorKind};
use serde::{Deserialize, Serialize};
use stasis_domain::ids;
use std::time::Duration;

/// A token that verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    /// What it grants.
    pub grant: Grant,
    /// `iat`, seconds since the epoch.
    pub issued_at: u64,
    /// `exp`, seconds since the epoch: invalid from this second on.
    pub expires_at: u64,
    /// `orig_iat` (or `iat` when absent): when the first token of its line
    /// (the one `stasis token` minted) was issued.
    pub origin: u64,
    /// `kid`: the key that signed it.
    pub key_id: String,
}

impl Token {
    /// How long it was minted to live: what an exchange or a refresh keeps.
    pub fn lifetime(&self) -> Duration {
        Duration::from_secs(self.expires_at.saturating_sub(self.issued_at))
    }
}

/// Why a presented token was refused (the `reason` of a 401).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rejection {
    /// No `Authorization` header.
    Missing,
    /// Not `Bearer <JWT>`, not HS256, claims that do not fit, or a token of
    /// the retired `stasis_v1` format.
    Malformed(&'static str),
    /// Past its `exp`.
    Expired,
    /// Signed by a key this server does not hold (any more).
    UnknownKey,
    /// Its signature does not match its key.
    BadSignature,
}

impl Rejection {
    /// The reason as the 401 names it.
    pub fn reason(self) -> &'static str {
        match self {
            Self::Missing => "missing",
            Self::Malformed(_) => "malformed",
            Self::Expired => "expired",
            Self::UnknownKey => "unknown_key",
            Self::BadSignature => "bad_signature",
        }
    }

    /// What the 401 says. It names no key and echoes nothing of the token.
    pub fn message(self) -> &'static str {
        match self {
            Self::Missing => "an Authorization: Bearer <token> header is required",
            Self::Malformed(why) => why,
            Self::Expired => {
                "the token has expired: refresh tokens before they expire (POST \
                 /api/token/refresh) or mint a new one"
            }
            Self::UnknownKey => {
                "the token was signed by a key this server does not hold; it may have been \
                 rotated out: mint a new token"
            }
            Self::BadSignature => "the token's signature does not match: it was altered",
        }
    }
}

/// The claims as they travel.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Claims {
    scope: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    town: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    container_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    jti: Option<String>,
    #[serde(default)]
    read_only: bool,
    iat: u64,
    exp: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    orig_iat: Option<u64>,
}

/// Why a token could not be minted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MintError {
    /// A lifetime of zero or past [`MAX_TTL`].
    #[error("a token lives at least 1 second and at most {} days", MAX_TTL.as_secs() / 86_400)]
    Lifetime,
    /// No such key in the ring.
    #[error("no key {0:?} is configured")]
    UnknownKey(String),
    /// The JWT library refused (it does not, for HMAC keys).
    #[error("signing failed: {0}")]
    Signing(String),
}

const RETIRED: &str = "this token has the retired stasis_v1 format, which this server no longer \
                       accepts: mint a new one (`stasis token`)";
const NOT_A_JWT: &str = "the token is not a stasis token (a JWT signed with HS256 and a kid)";
const BAD_CLAIMS: &str = "the token's claims do not describe a stasis grant";

impl KeyRing {
    /// A token for `grant`, valid from `now_s` for `ttl`, signed with the
    /// signing key.
    pub fn mint(&self, grant: &Grant, now_s: u64, ttl: Duration) -> Result<String, MintError> {
        self.mint_with(self.signing_key_id(), grant, now_s, ttl)
    }

    /// A token for `grant` that continues a line started at `origin_s`
    /// (a refresh or an exchange): like [`KeyRing::mint`], carrying
    /// `orig_iat`.
    pub fn mint_descendant(
        &self,
        grant: &Grant,
        now_s: u64,
        ttl: Duration,
        origin_s: u64,
    ) -> Result<String, MintError> {
        self.encode(self.signing_key_id(), grant, now_s, ttl, origin_s)
    }

    /// [`KeyRing::mint`] with the key `key_id` (any listed one).
    pub fn mint_with(
        &self,
        key_id: &str,
        grant: &Grant,
        now_s: u64,
        ttl: Duration,
    ) -> Result<String, MintError> {
        self.encode(key_id, grant, now_s, ttl, now_s)
    }

    fn encode(
        &self,
        key_id: &str,
        grant: &Grant,
        now_s: u64,
        ttl: Duration,
        origin_s: u64,
    ) -> Result<String, MintError> {
        let secret = self
            .secret(key_id)
            .ok_or_else(|| MintError::UnknownKey(key_id.to_owned()))?;
        if ttl.is_zero() || ttl > MAX_TTL {
            return Err(MintError::Lifetime);
        }
        super::hs256::install();
        let mut header = Header::new(Algorithm::HS256);
        header.kid = Some(key_id.to_owned());
        let claims = Claims {
            scope: grant.scope.kind().to_owned(),
            town: grant.scope.town().map(str::to_owned),
            container_id: grant.scope.container_id().map(str::to_owned),
            jti: grant.scope.token_id().map(str::to_owned),
            read_only: grant.read_only,
            iat: now_s,
            exp: now_s.saturating_add(ttl.as_secs().max(1)),
            orig_iat: (origin_s != now_s).then_some(origin_s),
        };
        jsonwebtoken::encode(&header, &claims, &EncodingKey::from_secret(secret))
            .map_err(|err| MintError::Signing(err.to_string()))
    }

    /// The token `text` verified at `now_s`, or why it is refused.
    pub fn verify(&self, text: &str, now_s: u64) -> Result<Token, Rejection> {
        if text.starts_with("stasis_v1.") {
            return Err(Rejection::Malformed(RETIRED));
        }
        super::hs256::install();
        let header = jsonwebtoken::decode_header(text).map_err(|_| malformed())?;
        let key_id = header.kid.ok_or_else(malformed)?;
        if header.alg != Algorithm::HS256 {
            return Err(malformed());
        }
        let secret = self.secret(&key_id).ok_or(Rejection::UnknownKey)?;
        let data =
            jsonwebtoken::decode::<Claims>(text, &DecodingKey::from_secret(secret), &validation())
                .map_err(|err| match err.kind() {
                    ErrorKind::InvalidSignature => Rejection::BadSignature,
                    _ => Rejection::Malformed(BAD_CLAIMS),
                })?;
        let claims = data.claims;
        let grant = grant_of(&claims).ok_or(Rejection::Malformed(BAD_CLAIMS))?;
        if now_s >= claims.exp {
            return Err(Rejection::Expired);
        }
        Ok(Token {
            grant,
            issued_at: claims.iat,
            expires_at: claims.exp,
            origin: claims.orig_iat.unwrap_or(claims.iat),
            key_id,
        })
    }
}

/// HS256 only; `exp` is checked against the runtime's clock by the caller,
/// and no registered claim is required beyond what [`Claims`] demands.
fn validation() -> Validation {
    let mut validation = Validation::new(Algorithm::HS256);
    validation.validate_exp = false;
    validation.validate_aud = false;
    validation.required_spec_claims.clear();
    validation
}

fn malformed() -> Rejection {
    Rejection::Malformed(NOT_A_JWT)
}

fn grant_of(claims: &Claims) -> Option<Grant> {
    let id = |value: &Option<String>| value.clone().filter(|v| ids::is_valid_id(v));
    let scope = match (
        claims.scope.as_str(),
        &claims.town,
        &claims.container_id,
        &claims.jti,
    ) {
        ("admin", None, None, None) => Scope::Admin,
        ("town", Some(_), None, None) => Scope::Town(id(&claims.town)?),
        ("container", Some(_), Some(_), None) => Scope::Container {
            town: id(&claims.town)?,
            container_id: id(&claims.container_id)?,
        },
        ("bootstrap", Some(_), None, Some(_)) => Scope::Bootstrap {
            town: id(&claims.town)?,
            token_id: id(&claims.jti)?,
        },
        _ => return None,
    };
    let origin_fits = claims.orig_iat.is_none_or(|origin| origin <= claims.iat);
    (claims.iat <= claims.exp && origin_fits).then_some(Grant {
        scope,
        read_only: claims.read_only,
    })
}

#[cfg(test)]
#[allow(clippy::panic, reason = "a test fails loudly")]
mod tests {
    use super::*;
    use crate::auth::keys::KeySettings;
    use base64::Engine as _;

    const NOW: u64 = 1_760_000_000;
    const DAY: Duration = Duration::from_secs(86_400);

    fn ring(keys: &str, signing: &str) -> KeyRing {
        let settings = KeySettings {
            keys: Some(keys),
            signing_key_id: Some(signing),
            ..KeySettings::default()
        };
        match KeyRing::from_settings(&settings) {
            Ok(Some(ring)) => ring,
            other => panic!("keys: {other:?}"),
        }
    }

    fn two_keys() -> KeyRing {
        ring("old=aaaaaaaaaaaaaaaa new=bbbbbbbbbbbbbbbb", "new")
    }

    fn container() -> Grant {
        Grant {
            scope: Scope::Container {
                town: "town.with.dots".into(),
                container_id: "c-1".into(),
            },
            read_only: true,
        }
    }

    fn mint(keys: &KeyRing, grant: &Grant) -> String {
        keys.mint(grant, NOW, DAY)
            .unwrap_or_else(|err| panic!("{err}"))
    }

    #[test]
    fn a_minted_token_verifies_to_its_grant_times_and_key() {
        let keys = two_keys();
        let token = keys.verify(&mint(&keys, &container()), NOW + 5);
        assert_eq!(
            token,
            Ok(Token {
                grant: container(),
                issued_at: NOW,
                expires_at: NOW + DAY.as_secs(),
                origin: NOW,
                key_id: "new".into(),
            })
        );
    }

    #[test]
    fn a_bootstrap_token_carries_its_id_and_a_descendant_its_lines_origin() {
        let keys = two_keys();
        let bootstrap = Grant::new(Scope::Bootstrap {
            town: "t".into(),
            token_id: "0123abcd".into(),
        });
        let token = keys.verify(&mint(&keys, &bootstrap), NOW);
        assert_eq!(token.map(|t| t.grant), Ok(bootstrap));
        let later = NOW + 500;
        let descendant = keys
            .mint_descendant(&container(), later, DAY, NOW)
            .unwrap_or_else(|err| panic!("{err}"));
        let verified = keys.verify(&descendant, later);
        assert_eq!(verified.map(|t| (t.issued_at, t.origin)), Ok((later, NOW)));
    }

    #[test]
    fn tokens_of_every_listed_key_verify_and_a_removed_key_revokes_exactly_its_own() {
        let keys = two_keys();
        let admin = Grant::new(Scope::Admin);
        let by_old = keys
            .mint_with("old", &admin, NOW, DAY)
            .unwrap_or_else(|err| panic!("{err}"));
        let by_new = mint(&keys, &admin);
        assert!(keys.verify(&by_old, NOW).is_ok());
        let rotated = ring("new=bbbbbbbbbbbbbbbb", "new");
        assert_eq!(rotated.verify(&by_old, NOW), Err(Rejection::UnknownKey));
        assert!(rotated.verify(&by_new, NOW).is_ok());
    }

    #[test]
    fn a_token_expires_at_its_exp_second() {
        let keys = two_keys();
        let token = keys
            .mint(&container(), NOW, Duration::from_secs(10))
            .unwrap_or_else(|err| panic!("{err}"));
        assert!(keys.verify(&token, NOW + 9).is_ok());
        assert_eq!(keys.verify(&token, NOW + 10), Err(Rejection::Expired));
    }

    #[test]
    fn a_tampered_or_foreign_token_is_refused_with_its_reason() {
        let keys = two_keys();
        let token = mint(&keys, &container());
        let mut parts: Vec<&str> = token.split('.').collect();
        let admin = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!(
            r#"{{"scope":"admin","iat":{NOW},"exp":{}}}"#,
            NOW + 99
        ));
        parts[1] = &admin;
        let forged = parts.join(".");
        assert_eq!(keys.verify(&forged, NOW), Err(Rejection::BadSignature));
        let foreign = ring("new=cccccccccccccccc", "new");
        assert_eq!(foreign.verify(&token, NOW), Err(Rejection::BadSignature));
        let unknown = ring("other=cccccccccccccccc", "other");
        assert_eq!(unknown.verify(&token, NOW), Err(Rejection::UnknownKey));
    }

    #[test]
    fn junk_old_tokens_and_other_algorithms_are_malformed() {
        let keys = two_keys();
        let none_alg = format!(
            "{}.{}.",
            base64::engine::general_purpose::URL_SAFE_NO_PAD
                .encode(r#"{"alg":"none","typ":"JWT","kid":"new"}"#),
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!(
                r#"{{"scope":"admin","iat":{NOW},"exp":{}}}"#,
                NOW + 9
            )),
        );
        for junk in [
            "",
            "garbage",
            "a.b.c",
            "stasis_v1.admin.00",
            none_alg.as_str(),
        ] {
            let refused = keys.verify(junk, NOW);
            assert!(
                matches!(refused, Err(Rejection::Malformed(_))),
                "{junk:?}: {refused:?}"
            );
        }
        let retired = keys.verify("stasis_v1.town.t.00", NOW);
        assert!(matches!(retired, Err(Rejection::Malformed(m)) if m.contains("stasis_v1")));
    }

    #[test]
    fn claims_that_do_not_make_a_grant_are_malformed() {
        let keys = two_keys();
        super::super::hs256::install();
        let secret = keys.secret("new").unwrap_or_default();
        let mut header = Header::new(Algorithm::HS256);
        header.kid = Some("new".into());
        for (scope, town, container, jti, orig_iat) in [
            ("town", None, None, None, None),
            ("admin", Some("t"), None, None, None),
            ("container", Some("t"), None, None, None),
            ("town", Some(".."), None, None, None),
            ("root", None, None, None, None),
            ("bootstrap", Some("t"), None, None, None),
            ("bootstrap", Some("t"), Some("c"), Some("j"), None),
            ("bootstrap", Some("t"), None, Some(".."), None),
            ("container", Some("t"), Some("c"), Some("j"), None),
            ("town", Some("t"), None, None, Some(NOW + 1)),
        ] {
            let claims = Claims {
                scope: scope.into(),
                town: town.map(str::to_owned),
                container_id: container.map(str::to_owned),
                jti: jti.map(str::to_owned),
                read_only: false,
                iat: NOW,
                exp: NOW + 9,
                orig_iat,
            };
            let token = jsonwebtoken::encode(&header, &claims, &EncodingKey::from_secret(secret))
                .unwrap_or_else(|err| panic!("{err}"));
            assert_eq!(
                keys.verify(&token, NOW),
                Err(Rejection::Malformed(BAD_CLAIMS)),
                "{scope} {town:?}"
            );
        }
    }

    #[test]
    fn lifetimes_past_the_bounds_are_not_minted() {
        let keys = two_keys();
        let admin = Grant::new(Scope::Admin);
        assert_eq!(
            keys.mint(&admin, NOW, Duration::ZERO),
            Err(MintError::Lifetime)
        );
        assert_eq!(
            keys.mint(&admin, NOW, MAX_TTL + Duration::from_secs(1)),
            Err(MintError::Lifetime)
        );
        assert!(matches!(
            keys.mint_with("nope", &admin, NOW, DAY),
            Err(MintError::UnknownKey(_))
        ));
    }
}
