//! What a token grants: a scope, and whether it may write.

use std::time::Duration;

/// How long a town or container token lives unless asked otherwise.
pub const DEFAULT_TTL: Duration = Duration::from_secs(24 * 3600);
/// How long a bootstrap token lives unless asked otherwise: it only has to
/// last until its container boots.
pub const DEFAULT_BOOTSTRAP_TTL: Duration = Duration::from_secs(3600);
/// The absolute lifetime of a line of tokens: a refresh or an exchange
/// never mints a token that outlives the token the line started from (the
/// one `stasis token` minted) by more than this, counted from that token's
/// issue time, which every token of the line carries (`orig_iat`).
pub const ABSOLUTE_LIFETIME: Duration = Duration::from_secs(30 * 24 * 3600);
/// How long an admin token lives unless asked otherwise: admin tokens are
/// for people and their tools, which mint them by hand.
pub const DEFAULT_ADMIN_TTL: Duration = Duration::from_secs(30 * 24 * 3600);
/// The longest lifetime any token may have.
pub const MAX_TTL: Duration = Duration::from_secs(366 * 24 * 3600);

/// What a token may reach.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// Every town.
    Admin,
    /// One town.
    Town(String),
    /// One town, as one container: its writes are fenced (see
    /// `stasis_domain::fence`).
    Container {
        /// The town.
        town: String,
        /// The container the token is bound to.
        container_id: String,
    },
    /// One town, for one thing only: to be exchanged, once, for a container
    /// token of one container (see `stasis_domain::town::bootstrap`). What
    /// a container is started with, so that every token it holds is fenced.
    Bootstrap {
        /// The town.
        town: String,
        /// The token's own id (`jti`): the town records it as spent.
        token_id: String,
    },
}

impl Scope {
    /// True when this scope may act on `town`.
    pub fn allows_town(&self, town: &str) -> bool {
        match self {
            Scope::Admin => true,
            Scope::Town(own)
            | Scope::Container { town: own, .. }
            | Scope::Bootstrap { town: own, .. } => own == town,
        }
    }

    /// The town it is limited to, if any.
    pub fn town(&self) -> Option<&str> {
        match self {
            Scope::Admin => None,
            Scope::Town(town) | Scope::Container { town, .. } | Scope::Bootstrap { town, .. } => {
                Some(town)
            }
        }
    }

    /// The container it is bound to, if any.
    pub fn container_id(&self) -> Option<&str> {
        match self {
            Scope::Container { container_id, .. } => Some(container_id),
            _ => None,
        }
    }

    /// The id of a bootstrap token, if this is one.
    pub fn token_id(&self) -> Option<&str> {
        match self {
            Scope::Bootstrap { token_id, .. } => Some(token_id),
            _ => None,
        }
    }

    /// `admin`, `town`, `container` or `bootstrap`: the `scope` claim.
    pub fn kind(&self) -> &'static str {
        match self {
            Scope::Admin => "admin",
            Scope::Town(_) => "town",
            Scope::Container { .. } => "container",
            Scope::Bootstrap { .. } => "bootstrap",
        }
    }

    /// The lifetime of a token of this scope minted without `--ttl`.
    pub fn default_ttl(&self) -> Duration {
        match self {
            Scope::Admin => DEFAULT_ADMIN_TTL,
            Scope::Bootstrap { .. } => DEFAULT_BOOTSTRAP_TTL,
            _ => DEFAULT_TTL,
        }
    }
}

/// A scope, and whether writes are refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    /// What the token reaches.
    pub scope: Scope,
    /// Every write is refused (403): for dashboards and people.
    pub read_only: bool,
}

impl Grant {
    /// A grant that may write.
    pub fn new(scope: Scope) -> Self {
        Self {
            scope,
            read_only: false,
        }
    }

    /// Everything, as a host without keys treats every request.
    pub fn unrestricted() -> Self {
        Self::new(Scope::Admin)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_town_container_or_bootstrap_scope_reaches_only_its_town() {
        let town = Scope::Town("a".into());
        let container = Scope::Container {
            town: "a".into(),
            container_id: "c".into(),
        };
        let bootstrap = Scope::Bootstrap {
            town: "a".into(),
            token_id: "j".into(),
        };
        assert_eq!(bootstrap.token_id(), Some("j"));
        assert_eq!(bootstrap.container_id(), None);
        for scope in [&town, &container, &bootstrap] {
            assert!(scope.allows_town("a"));
            assert!(!scope.allows_town("b"));
            assert!(!scope.allows_town("a.b"));
        }
        assert!(Scope::Admin.allows_town("b"));
        assert_eq!(container.container_id(), Some("c"));
        assert_eq!(town.container_id(), None);
    }

    #[test]
    fn admin_tokens_live_longer_by_default_and_none_past_the_maximum() {
        assert!(Scope::Admin.default_ttl() > Scope::Town("a".into()).default_ttl());
        assert!(DEFAULT_ADMIN_TTL <= MAX_TTL);
        let bootstrap = Scope::Bootstrap {
            town: "a".into(),
            token_id: "j".into(),
        };
        assert!(bootstrap.default_ttl() < DEFAULT_TTL);
        assert!(DEFAULT_TTL < ABSOLUTE_LIFETIME);
    }
}
