//! Bearer tokens minted from a server secret.
//!
//! A token names its scope and carries an HMAC-SHA256 of that scope under
//! the secret, so the server checks it without storing anything:
//!
//! - `stasis_v1.admin.<hex mac>` reaches everything;
//! - `stasis_v1.town.<town id>.<hex mac>` reaches `/api/towns/<town id>/...` only.
//!
//! Town ids may contain dots; the mac is always the last dot-separated part.

use hmac::{Hmac, Mac};
use sha2::Sha256;

const PREFIX: &str = "stasis_v1.";

/// What a token may reach.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// Every town.
    Admin,
    /// One town.
    Town(String),
}

impl Scope {
    fn label(&self) -> String {
        match self {
            Scope::Admin => "admin".to_owned(),
            Scope::Town(town) => format!("town.{town}"),
        }
    }

    /// True when this scope may act on `town`.
    pub fn allows_town(&self, town: &str) -> bool {
        match self {
            Scope::Admin => true,
            Scope::Town(own) => own == town,
        }
    }
}

/// Mints a token for `scope` under `secret`.
pub fn mint(secret: &[u8], scope: &Scope) -> String {
    let label = scope.label();
    format!("{PREFIX}{label}.{}", hex::encode(mac(secret, &label)))
}

/// The scope a token grants, or `None` for a token that is malformed or was
/// not minted with `secret`. The comparison is constant-time.
pub fn verify(secret: &[u8], token: &str) -> Option<Scope> {
    let rest = token.strip_prefix(PREFIX)?;
    let (label, tag_hex) = rest.rsplit_once('.')?;
    let tag = hex::decode(tag_hex).ok()?;
    let mut check = keyed(secret);
    check.update(label.as_bytes());
    check.verify_slice(&tag).ok()?;
    if label == "admin" {
        return Some(Scope::Admin);
    }
    let town = label.strip_prefix("town.")?;
    stasis_domain::ids::is_valid_id(town).then(|| Scope::Town(town.to_owned()))
}

fn keyed(secret: &[u8]) -> Hmac<Sha256> {
    // HMAC takes keys of any length; new_from_slice cannot fail for it.
    match Hmac::<Sha256>::new_from_slice(secret) {
        Ok(mac) => mac,
        Err(_) => unreachable!("HMAC accepts keys of every length"),
    }
}

fn mac(secret: &[u8], label: &str) -> Vec<u8> {
    let mut m = keyed(secret);
    m.update(label.as_bytes());
    m.finalize().into_bytes().to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minted_tokens_verify_to_their_scope() {
        let town = Scope::Town("town.with.dots".into());
        assert_eq!(verify(b"s", &mint(b"s", &Scope::Admin)), Some(Scope::Admin));
        assert_eq!(verify(b"s", &mint(b"s", &town)), Some(town));
    }

    #[test]
    fn tokens_from_another_secret_or_tampered_are_refused() {
        let token = mint(b"s", &Scope::Town("a".into()));
        assert_eq!(verify(b"other", &token), None);
        let forged = token.replacen("town.a.", "town.b.", 1);
        assert_eq!(verify(b"s", &forged), None);
        for junk in [
            "",
            "stasis_v1.",
            "stasis_v1.admin.zz",
            "Bearer x",
            "stasis_v1.admin",
        ] {
            assert_eq!(verify(b"s", junk), None, "{junk:?}");
        }
    }

    #[test]
    fn a_town_scope_reaches_only_its_town() {
        let scope = Scope::Town("a".into());
        assert!(scope.allows_town("a"));
        assert!(!scope.allows_town("b"));
        assert!(Scope::Admin.allows_town("b"));
    }
}
