//! Which kept versions may go: the retention policy and its rule.
//!
//! A kept version of a `(kind, key)` stays while any of these holds:
//! - it is younger than [`RetentionPolicy::keep_all_ms`] (by its
//!   `created_at`);
//! - its age falls in a tier (from the previous tier's end, or
//!   `keep_all_ms`, to this tier's `until_ms`) and no newer version of the
//!   same `(kind, key)`, kept or current, was written in the same bucket
//!   (`created_at / bucket_ms`): it is the last version of its hour, say;
//! - a pin holds it: its seq is at most the pin's, and no newer version of
//!   the same `(kind, key)` has a seq at most the pin's.
//!
//! The current version is never a candidate.

use super::Kind;
use crate::{
    DomainError, params,
    sql::{RowExt, SqlStore},
};
use serde::{Deserialize, Serialize};
use std::fmt;

/// The most versions one write drops: the rest go with later writes.
pub const DROP_BATCH: u32 = 64;

const HOUR_MS: u64 = 60 * 60 * 1000;
const DAY_MS: u64 = 24 * HOUR_MS;

/// One tier: the last version of each `bucket_ms` is kept until it is
/// `until_ms` old. A tier whose `bucket_ms` is 0 is unused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Tier {
    /// The bucket's length (ms).
    pub bucket_ms: u64,
    /// The age its versions are kept to (ms).
    pub until_ms: u64,
}

/// How long superseded versions are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RetentionPolicy {
    /// Every version younger than this is kept (ms).
    pub keep_all_ms: u64,
    /// Then, in order, the last version of each bucket.
    pub tiers: [Tier; 2],
}

impl Default for RetentionPolicy {
    /// Everything for 24 hours, then the last version of each hour for 7
    /// days, then of each day for 30 days.
    fn default() -> Self {
        Self {
            keep_all_ms: DAY_MS,
            tiers: [
                Tier {
                    bucket_ms: HOUR_MS,
                    until_ms: 7 * DAY_MS,
                },
                Tier {
                    bucket_ms: DAY_MS,
                    until_ms: 30 * DAY_MS,
                },
            ],
        }
    }
}

impl RetentionPolicy {
    /// Keeps no superseded version past the write that superseded it (as
    /// before history: tests of collection use it).
    pub const KEEP_NONE: Self = Self {
        keep_all_ms: 0,
        tiers: [Tier {
            bucket_ms: 0,
            until_ms: 0,
        }; 2],
    };

    /// Reads `KEEP_ALL[,BUCKET:UNTIL[,BUCKET:UNTIL]]`, every figure in ms
    /// (the default is `86400000,3600000:604800000,86400000:2592000000`);
    /// each tier must end after the one before it.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut parts = text.trim().split(',');
        let number = |s: &str| {
            s.trim()
                .parse::<u64>()
                .map_err(|_| format!("{s:?} is not a whole number of ms"))
        };
        let keep_all_ms = number(parts.next().unwrap_or_default())?;
        let mut tiers = [Tier::default(); 2];
        let mut floor = keep_all_ms;
        for (index, part) in parts.enumerate() {
            let Some(tier) = tiers.get_mut(index) else {
                return Err("at most two tiers (BUCKET:UNTIL) follow KEEP_ALL".into());
            };
            let (bucket, until) = part
                .split_once(':')
                .ok_or_else(|| format!("a tier is BUCKET:UNTIL; got {part:?}"))?;
            *tier = Tier {
                bucket_ms: number(bucket)?,
                until_ms: number(until)?,
            };
            if tier.bucket_ms == 0 || tier.until_ms <= floor {
                return Err(format!(
                    "tier {part:?} needs a bucket above 0 and an end past {floor} ms"
                ));
            }
            floor = tier.until_ms;
        }
        Ok(Self { keep_all_ms, tiers })
    }
}

impl fmt::Display for RetentionPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.keep_all_ms)?;
        for tier in self.tiers.iter().filter(|t| t.bucket_ms > 0) {
            write!(f, ",{}:{}", tier.bucket_ms, tier.until_ms)?;
        }
        Ok(())
    }
}

/// A clause true when `(kind, key)` of row `h` has a newer version (kept
/// or current) meeting `condition` (over `o`).
fn newer(condition: &str) -> String {
    let one = |table: &str| {
        format!(
            "EXISTS (SELECT 1 FROM {table} o WHERE o.kind = h.kind AND o.key = h.key \
             AND o.version > h.version AND {condition})"
        )
    };
    format!(
        "({} OR {})",
        one("history_versions"),
        one("history_current")
    )
}

/// Up to `limit` kept versions of `kind` the policy and the pins let go at
/// `now_ms`, oldest first: `(key, version)`.
pub fn expired(
    store: &impl SqlStore,
    kind: Kind,
    policy: &RetentionPolicy,
    now_ms: i64,
    limit: u32,
) -> Result<Vec<(String, u64)>, DomainError> {
    let ms = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
    let horizon = now_ms.saturating_sub(ms(policy.keep_all_ms));
    let mut kept_by_tier = Vec::new();
    let mut lower = policy.keep_all_ms;
    for tier in policy.tiers.iter().filter(|t| t.bucket_ms > 0) {
        let bucket = ms(tier.bucket_ms);
        kept_by_tier.push(format!(
            "(h.created_at > {from} AND h.created_at <= {to} AND NOT {newer})",
            from = now_ms.saturating_sub(ms(tier.until_ms)),
            to = now_ms.saturating_sub(ms(lower)),
            newer = newer(&format!(
                "o.created_at / {bucket} = h.created_at / {bucket}"
            )),
        ));
        lower = tier.until_ms;
    }
    let pinned = format!(
        "EXISTS (SELECT 1 FROM history_pins p WHERE h.seq <= p.seq AND NOT {})",
        newer("o.seq <= p.seq")
    );
    let mut keep = vec![pinned];
    keep.extend(kept_by_tier);
    let sql = format!(
        "SELECT h.key, h.version FROM history_versions h
         WHERE h.kind = ?1 AND h.created_at <= ?2 AND NOT ({})
         ORDER BY h.created_at, h.version LIMIT ?3",
        keep.join(" OR ")
    );
    let rows = store.execute(&sql, params![kind.as_str(), horizon, limit])?;
    rows.iter()
        .map(|row| Ok((row.text(0)?.to_owned(), row.uint(1)?)))
        .collect()
}

/// Records `current` as the current version of `kind` (whose versions have no key: kilo.db,
/// the workspace), then applies the policy, `drop_content` releasing each expired version.
pub fn made_current(
    store: &impl SqlStore,
    kind: Kind,
    current: &super::versions::Current,
    (now_ms, policy): (i64, &RetentionPolicy),
    drop_content: impl FnMut(u64) -> Result<(), DomainError>,
) -> Result<(), DomainError> {
    super::versions::set_current(store, kind, "", current)?;
    apply(store, kind, policy, now_ms, drop_content).map(drop)
}

/// Drops up to [`DROP_BATCH`] expired versions of `kind`: `drop_content`
/// first (an owner's manifest), then the row. Answers how many went.
pub fn apply(
    store: &impl SqlStore,
    kind: Kind,
    policy: &RetentionPolicy,
    now_ms: i64,
    mut drop_content: impl FnMut(u64) -> Result<(), DomainError>,
) -> Result<usize, DomainError> {
    let expired = expired(store, kind, policy, now_ms, DROP_BATCH)?;
    for (key, version) in &expired {
        drop_content(*version)?;
        super::versions::forget(store, kind, key, *version)?;
    }
    Ok(expired.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_reads_back_from_its_text() {
        let policy = RetentionPolicy::default();
        assert_eq!(RetentionPolicy::parse(&policy.to_string()), Ok(policy));
        assert_eq!(
            policy.to_string(),
            "86400000,3600000:604800000,86400000:2592000000"
        );
    }

    #[test]
    fn a_short_policy_and_the_refusals() {
        let short = RetentionPolicy::parse("30000").map(|p| (p.keep_all_ms, p.tiers[0]));
        assert_eq!(short, Ok((30_000, Tier::default())));
        assert!(RetentionPolicy::parse("").is_err());
        assert!(RetentionPolicy::parse("10,0:20").is_err());
        assert!(RetentionPolicy::parse("10,5:10").is_err());
        assert!(RetentionPolicy::parse("10,5:20,5:15").is_err());
        assert!(RetentionPolicy::parse("10,5:20,5:30,5:40").is_err());
        assert!(RetentionPolicy::parse("1 day").is_err());
    }
}
