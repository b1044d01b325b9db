//! Bootstrap tokens: each is spent on one container only, a retry for the
//! same container is let through, and a superseded container gets nothing.

use crate::support::Town;
use stasis_domain::DomainError;
use stasis_domain::fence::FENCED;
use stasis_domain::sql::{RowExt, SqlStore};
use stasis_domain::town::{Redemption, TownCall, TownReply, bootstrap::SPENT_KEPT_PAST_EXPIRY_MS};

const HOUR_MS: i64 = 3_600_000;

impl Town {
    fn redeem(&mut self, token_id: &str, container_id: &str) -> Result<Redemption, DomainError> {
        let expires_at_ms = self.now_ms + HOUR_MS;
        self.redeem_until(token_id, container_id, expires_at_ms)
    }

    fn redeem_until(
        &mut self,
        token_id: &str,
        container_id: &str,
        expires_at_ms: i64,
    ) -> Result<Redemption, DomainError> {
        let call = TownCall::RedeemBootstrap {
            token_id: token_id.into(),
            container_id: container_id.into(),
            expires_at_ms,
        };
        self.call(call).map(|reply| match reply {
            TownReply::Redeemed(redemption) => redemption,
            other => panic!("unexpected reply {other:?}"),
        })
    }
}

#[test]
fn a_bootstrap_token_is_spent_on_one_container_only() {
    let mut town = Town::new();
    assert_eq!(
        town.redeem("jti-a", "container-a"),
        Ok(Redemption::Redeemed)
    );
    assert_eq!(
        town.redeem("jti-a", "container-fresh"),
        Ok(Redemption::Spent {
            container_id: "container-a".into()
        })
    );
    // A retried exchange (its answer lost) gets the same container again.
    assert_eq!(town.redeem("jti-a", "container-a"), Ok(Redemption::Again));
    // Another token is its own.
    assert_eq!(
        town.redeem("jti-b", "container-b"),
        Ok(Redemption::Redeemed)
    );
}

#[test]
fn a_superseded_container_gets_nothing_whatever_token_it_spends() {
    let mut town = Town::new();
    assert_eq!(
        town.redeem("jti-a", "container-a"),
        Ok(Redemption::Redeemed)
    );
    town.heartbeat("container-a");
    assert_eq!(
        town.redeem("jti-b", "container-b"),
        Ok(Redemption::Redeemed)
    );
    town.heartbeat("container-b");
    for token in ["jti-a", "jti-fresh"] {
        match town.redeem(token, "container-a") {
            Err(DomainError::Fenced(refusal)) => {
                assert_eq!(refusal.code, FENCED);
                assert_eq!(refusal.current_container_id.as_deref(), Some("container-b"));
            }
            other => panic!("{token}: expected container_fenced, got {other:?}"),
        }
    }
    // The refused fresh token was not spent: it still serves a new container.
    assert_eq!(
        town.redeem("jti-fresh", "container-c"),
        Ok(Redemption::Redeemed)
    );
}

#[test]
fn a_spent_token_is_remembered_until_well_past_its_expiry() {
    let mut town = Town::new();
    let expires = town.now_ms + 10;
    assert_eq!(
        town.redeem_until("jti-a", "container-a", expires),
        Ok(Redemption::Redeemed)
    );
    town.now_ms = expires + SPENT_KEPT_PAST_EXPIRY_MS - 10;
    assert!(matches!(
        town.redeem_until("jti-a", "container-other", expires),
        Ok(Redemption::Spent { .. })
    ));
    // Long past its expiry (its signature check refuses it by then), it is
    // forgotten: the town does not grow with every boot.
    town.now_ms = expires + SPENT_KEPT_PAST_EXPIRY_MS + 10;
    town.redeem("jti-unrelated", "container-b").expect("redeem");
    let kept: i64 = town
        .store
        .first_row("SELECT COUNT(*) FROM spent_bootstrap_tokens", Vec::new())
        .expect("count")
        .map(|row| row.int(0).expect("int"))
        .unwrap_or_default();
    assert_eq!(kept, 1, "only the unrelated token is kept");
}
