//! A point of the agent's history, and the state it resolves to.
//!
//! A [`Point`] is one of
//! - `{"seq": S}`: the log's seq `S` (at most the log's last seq);
//! - `{"at": T}`: the time `T`, ms since the epoch;
//! - `{"kind": K, "version": V}` (with `"key"` for a memory version when
//!   the caller wants it checked): the moment version `V` of kind `K` was
//!   written.
//!
//! [`resolve`] answers, for kilo.db, the workspace, the checkpoint and
//! every memory key, which version (kept or current) was the agent's at
//! that point, or that there was none ([`StateAt`]):
//! - at a seq `S`, per `(kind, key)`, the highest-numbered version whose
//!   seq is at most `S` (the same rule by which a pin at `S` holds
//!   versions, see [`super::retention`]; so a pin at `S` keeps exactly
//!   what `S` resolves to);
//! - at a time `T`, per `(kind, key)`, the highest-numbered version
//!   written at or before `T`; the point's seq is then the last event
//!   appended at or before `T` (0 when none);
//! - at a version, the point's seq is that version's seq and every
//!   `(kind, key)` resolves as at that seq, except the named one, which is
//!   exactly the named version.
//!
//! A version that is a deletion resolves to absent: memory keys absent at
//! the point are left out of [`StateAt::memory`]. A kilo.db or workspace
//! `DELETE` records no deletion version, so a point after one still
//! resolves to the version before it; documents written before history
//! existed have no version and resolve to absent.
//!
//! Resolution reads only the history tables (and the log's seqs and
//! times); it changes nothing. Bad input answers the contract's errors:
//! a seq past the log's last seq and a malformed point are 400
//! `invalid_request`, an unknown version is 404 `version_not_found`.

use super::Kind;
use crate::{
    DomainError, event_log, params,
    sql::{RowExt, SqlStore},
};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A point of the agent's history, as a request body carries it: exactly
/// one of `seq`, `at`, or `kind` with `version` (and optionally `key`).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PointBody {
    /// A seq of the log.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<u64>,
    /// A time, ms since the epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<i64>,
    /// The kind of the version named by `version`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<Kind>,
    /// A version of `kind`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<u64>,
    /// The memory key the version must belong to (memory only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
}

/// A point of the agent's history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Point {
    /// The log's seq.
    Seq(u64),
    /// A time, ms since the epoch.
    At(i64),
    /// The moment a version was written.
    Version {
        /// Its kind.
        kind: Kind,
        /// Its memory key, checked when given.
        key: Option<String>,
        /// Its number.
        version: u64,
    },
}

impl TryFrom<PointBody> for Point {
    type Error = DomainError;

    /// Exactly one form, or 400 `invalid_request`.
    fn try_from(body: PointBody) -> Result<Self, DomainError> {
        let bad = |why: &str| {
            DomainError::invalid(
                "invalid_request",
                format!("a point is {{\"seq\"}}, {{\"at\"}} or {{\"kind\",\"version\"}}: {why}"),
            )
        };
        match body {
            PointBody {
                seq: Some(seq),
                at: None,
                kind: None,
                version: None,
                key: None,
            } => Ok(Self::Seq(seq)),
            PointBody {
                seq: None,
                at: Some(at),
                kind: None,
                version: None,
                key: None,
            } => {
                if at < 0 {
                    return Err(bad("at must not be negative"));
                }
                Ok(Self::At(at))
            }
            PointBody {
                seq: None,
                at: None,
                kind: Some(kind),
                version: Some(version),
                key,
            } => {
                if key.is_some() && kind != Kind::Memory {
                    return Err(bad("key goes with kind memory only"));
                }
                Ok(Self::Version { kind, key, version })
            }
            _ => Err(bad("give exactly one of them")),
        }
    }
}

/// The version a `(kind, key)` had at a point.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct VersionAt {
    /// Its number.
    pub version: u64,
    /// Its seq.
    pub seq: u64,
    /// When it was written, ms since the epoch.
    pub created_at: i64,
    /// Whether it is the current version now.
    pub current: bool,
}

/// The agent's state at a point: which version each kind had (absent:
/// none, or a deletion).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StateAt {
    /// The point's seq (for a time: the last event appended by then).
    pub seq: u64,
    /// kilo.db's version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub db_snapshot: Option<VersionAt>,
    /// The workspace's version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<VersionAt>,
    /// The checkpoint's version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<VersionAt>,
    /// Each memory key present then, and its version.
    pub memory: BTreeMap<String, VersionAt>,
}

impl StateAt {
    /// The version of a keyless kind (kilo.db, the workspace, the
    /// checkpoint); `None` for memory.
    pub fn keyless(&self, kind: Kind) -> Option<VersionAt> {
        match kind {
            Kind::DbSnapshot => self.db_snapshot,
            Kind::Workspace => self.workspace,
            Kind::Checkpoint => self.checkpoint,
            Kind::Memory => None,
        }
    }
}

/// The agent's state at `point` (see the module's doc).
pub fn resolve(store: &impl SqlStore, point: &Point) -> Result<StateAt, DomainError> {
    match point {
        Point::Seq(seq) => {
            let last_seq = event_log::state(store)?.last_seq;
            if *seq > last_seq {
                return Err(DomainError::invalid(
                    "invalid_request",
                    format!("seq {seq} is past the log's last seq ({last_seq})"),
                ));
            }
            at_bound(store, Bound::Seq(*seq), *seq)
        }
        Point::At(at) => {
            let seq = store
                .first_row(
                    "SELECT COALESCE(MAX(seq), 0) FROM events WHERE created_at <= ?1",
                    params![*at],
                )?
                .map(|row| row.uint(0))
                .transpose()?
                .unwrap_or(0);
            at_bound(store, Bound::At(*at), seq)
        }
        Point::Version { kind, key, version } => {
            let named = find_any(store, *kind, *version)?
                .filter(|(found_key, _, _)| key.as_ref().is_none_or(|k| k == found_key))
                .ok_or_else(|| super::version_not_found(*kind, *version))?;
            let (found_key, at, deleted) = named;
            let mut state = at_bound(store, Bound::Seq(at.seq), at.seq)?;
            let value = (!deleted).then_some(at);
            match kind {
                Kind::DbSnapshot => state.db_snapshot = value,
                Kind::Workspace => state.workspace = value,
                Kind::Checkpoint => state.checkpoint = value,
                Kind::Memory => {
                    state.memory.remove(&found_key);
                    if let Some(value) = value {
                        state.memory.insert(found_key, value);
                    }
                }
            }
            Ok(state)
        }
    }
}

#[derive(Clone, Copy)]
enum Bound {
    Seq(u64),
    At(i64),
}

fn at_bound(store: &impl SqlStore, bound: Bound, seq: u64) -> Result<StateAt, DomainError> {
    let mut state = StateAt {
        seq,
        ..StateAt::default()
    };
    for kind in [
        Kind::DbSnapshot,
        Kind::Workspace,
        Kind::Checkpoint,
        Kind::Memory,
    ] {
        for (key, at) in newest_per_key(store, kind, bound)? {
            match kind {
                Kind::DbSnapshot => state.db_snapshot = at,
                Kind::Workspace => state.workspace = at,
                Kind::Checkpoint => state.checkpoint = at,
                Kind::Memory => {
                    if let Some(at) = at {
                        state.memory.insert(key, at);
                    }
                }
            }
        }
    }
    Ok(state)
}

/// Per key of `kind`, the highest-numbered version within `bound`
/// (`None` when it is a deletion).
fn newest_per_key(
    store: &impl SqlStore,
    kind: Kind,
    bound: Bound,
) -> Result<BTreeMap<String, Option<VersionAt>>, DomainError> {
    let (column, limit) = match bound {
        Bound::Seq(seq) => ("seq", i64::try_from(seq).unwrap_or(i64::MAX)),
        Bound::At(at) => ("created_at", at),
    };
    let sql = format!(
        "SELECT key, version, seq, created_at, deleted, 0 FROM history_versions
         WHERE kind = ?1 AND {column} <= ?2
         UNION ALL
         SELECT key, version, seq, created_at, deleted, 1 FROM history_current
         WHERE kind = ?1 AND {column} <= ?2
         ORDER BY 1, 2"
    );
    let mut newest = BTreeMap::new();
    for row in store.execute(&sql, params![kind.as_str(), limit])? {
        let at = VersionAt {
            version: row.uint(1)?,
            seq: row.uint(2)?,
            created_at: row.int(3)?,
            current: row.int(5)? != 0,
        };
        let deleted = row.int(4)? != 0;
        // Ordered by version within a key: the last one wins.
        newest.insert(row.text(0)?.to_owned(), (!deleted).then_some(at));
    }
    Ok(newest)
}

/// Version `version` of `kind`, kept or current: its key, where it sits,
/// and whether it is a deletion.
fn find_any(
    store: &impl SqlStore,
    kind: Kind,
    version: u64,
) -> Result<Option<(String, VersionAt, bool)>, DomainError> {
    let row = store.first_row(
        "SELECT key, version, seq, created_at, deleted, 0 FROM history_versions
         WHERE kind = ?1 AND version = ?2
         UNION ALL
         SELECT key, version, seq, created_at, deleted, 1 FROM history_current
         WHERE kind = ?1 AND version = ?2",
        params![kind.as_str(), version],
    )?;
    row.map(|row| {
        Ok((
            row.text(0)?.to_owned(),
            VersionAt {
                version: row.uint(1)?,
                seq: row.uint(2)?,
                created_at: row.int(3)?,
                current: row.int(5)? != 0,
            },
            row.int(4)? != 0,
        ))
    })
    .transpose()
}
