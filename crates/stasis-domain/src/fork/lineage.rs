//! A fork's lineage row: where it came from, the folders its reads may
//! find inherited chunks in, and the origins it holds chunks in.

#![cfg_attr(
    feature = "schema",
    allow(
        clippy::disallowed_macros,
        clippy::disallowed_methods,
        reason = "the JsonSchema derive builds its schemas with json! and to_value over our own types, never stored data"
    )
)]

use crate::{
    DomainError, params,
    sql::{RowExt, SqlStore},
};
use serde::{Deserialize, Serialize};

pub(super) const TABLE: &str = "CREATE TABLE IF NOT EXISTS fork_lineage (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    rig TEXT NOT NULL,
    agent TEXT NOT NULL,
    seq INTEGER NOT NULL,
    ancestors TEXT NOT NULL,
    holds_in TEXT NOT NULL,
    created_at INTEGER NOT NULL
)";

/// Where a fork came from: its source and the seq it was forked at.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ForkedFrom {
    /// The source's rig.
    pub rig: String,
    /// The source agent.
    pub agent: String,
    /// The point's seq: the fork holds the source's events `1..=seq`.
    pub seq: u64,
}

/// A fork's lineage.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lineage {
    /// Its source and seq.
    pub forked_from: ForkedFrom,
    /// `rig/agent` of each ancestor, its source first.
    pub ancestors: Vec<String>,
    /// `rig/agent` of each origin holding chunks for it.
    pub holds_in: Vec<String>,
    /// When it was forked, ms since the epoch.
    pub created_at: i64,
}

/// The agent's lineage, if it is a fork.
pub fn get(store: &impl SqlStore) -> Result<Option<Lineage>, DomainError> {
    let Some(row) = store.first_row(
        "SELECT rig, agent, seq, ancestors, holds_in, created_at FROM fork_lineage WHERE id = 1",
        params![],
    )?
    else {
        return Ok(None);
    };
    let list = |text: &str| -> Vec<String> {
        text.lines()
            .filter(|l| !l.is_empty())
            .map(str::to_owned)
            .collect()
    };
    Ok(Some(Lineage {
        forked_from: ForkedFrom {
            rig: row.text(0)?.to_owned(),
            agent: row.text(1)?.to_owned(),
            seq: row.uint(2)?,
        },
        ancestors: list(row.text(3)?),
        holds_in: list(row.text(4)?),
        created_at: row.int(5)?,
    }))
}

/// Records the agent's lineage (replacing any).
pub fn set(store: &impl SqlStore, lineage: &Lineage) -> Result<(), DomainError> {
    store.run(
        "INSERT OR REPLACE INTO fork_lineage
            (id, rig, agent, seq, ancestors, holds_in, created_at)
         VALUES (1, ?1, ?2, ?3, ?4, ?5, ?6)",
        params![
            lineage.forked_from.rig.as_str(),
            lineage.forked_from.agent.as_str(),
            lineage.forked_from.seq,
            lineage.ancestors.join("\n"),
            lineage.holds_in.join("\n"),
            lineage.created_at
        ],
    )?;
    Ok(())
}

/// Forgets the lineage (its holds were released: the fork is destroyed);
/// answers what it was.
pub fn clear(store: &impl SqlStore) -> Result<Option<Lineage>, DomainError> {
    let had = get(store)?;
    store.run("DELETE FROM fork_lineage", params![])?;
    Ok(had)
}
