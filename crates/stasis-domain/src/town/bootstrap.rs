//! Bootstrap tokens, spent: a bootstrap token (one town, one token id) is
//! exchanged for a container token once, for one container, and the town
//! remembers it here.
//!
//! A container is started with a bootstrap token, exchanges it for a
//! container token of its own id at boot, and from then on holds only
//! tokens that fencing reaches ([`crate::fence`]). A zombie that kept its
//! bootstrap token cannot spend it again on a fresh container id (that
//! would mint it a token for a container that was never superseded, and
//! with it take the town over): [`redeem`] answers [`Redemption::Spent`].
//! Spending it again on the same container is let through
//! ([`Redemption::Again`]): an exchange whose answer was lost is retried,
//! and it mints nothing the container did not hold already; once that
//! container is superseded, it is refused like any write of it (409
//! `container_fenced`).
//!
//! A spent token is remembered until it has expired, plus
//! [`SPENT_KEPT_PAST_EXPIRY_MS`] for clocks that disagree; past that its
//! signature check refuses it anyway.

use super::containers::{self, Standing};
use crate::{
    DomainError, fence, params,
    sql::{RowExt, SqlStore},
};
use serde::{Deserialize, Serialize};

/// How long past its expiry a spent token's id is kept: the clock that
/// verifies a token's expiry may run behind the town's by less than this.
pub const SPENT_KEPT_PAST_EXPIRY_MS: i64 = 3_600_000;

/// What spending a bootstrap token did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "redemption", rename_all = "snake_case")]
pub enum Redemption {
    /// Spent now, on this container.
    Redeemed,
    /// Spent before on this same container (a retried exchange).
    Again,
    /// Spent before on another container: nothing is minted.
    Spent {
        /// The container it was spent on.
        container_id: String,
    },
}

/// Spends bootstrap token `token_id` (valid until `expires_at_ms`) on
/// `container_id`. A container another one superseded gets nothing (409
/// `container_fenced`), whichever token it presents.
pub fn redeem(
    store: &impl SqlStore,
    token_id: &str,
    container_id: &str,
    expires_at_ms: i64,
    now_ms: i64,
) -> Result<Redemption, DomainError> {
    store.run(
        "DELETE FROM spent_bootstrap_tokens WHERE expires_at < ?1",
        params![now_ms.saturating_sub(SPENT_KEPT_PAST_EXPIRY_MS)],
    )?;
    if let Standing::Superseded {
        current_container_id,
    } = containers::standing(store, container_id)?
    {
        return Err(fence::superseded(
            container_id,
            current_container_id.as_deref(),
        ));
    }
    let spent_on = store
        .first_row(
            "SELECT container_id FROM spent_bootstrap_tokens WHERE token_id = ?1",
            params![token_id],
        )?
        .map(|row| row.text(0).map(str::to_owned))
        .transpose()?;
    Ok(match spent_on {
        Some(earlier) if earlier == container_id => Redemption::Again,
        Some(earlier) => Redemption::Spent {
            container_id: earlier,
        },
        None => {
            store.run(
                "INSERT INTO spent_bootstrap_tokens (token_id, container_id, expires_at, spent_at)
                 VALUES (?1, ?2, ?3, ?4)",
                params![token_id, container_id, expires_at_ms, now_ms],
            )?;
            Redemption::Redeemed
        }
    })
}
