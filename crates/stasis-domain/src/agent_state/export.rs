//! Export in pages: the manifest's small parts in one call, then sessions
//! and memory page by page, each page bounded in rows and bytes. Events
//! come from the event log's own paged read. The caller writes each page
//! out as it arrives, so nothing holds the whole manifest.

use super::{
    checkpoint,
    manifest::{ManifestAgent, ManifestEvent, ManifestMemory, ManifestSession},
    record,
};
use crate::{
    DomainError, event_log, params,
    sql::{Row, RowExt, SqlStore, SqlValue},
};
use serde::{Deserialize, Serialize};

/// A page holds at most this many rows...
pub const EXPORT_PAGE_ROWS: u32 = 1_000;
/// ...and this many bytes of documents (always at least one row).
pub const EXPORT_PAGE_BYTES: u64 = 4 * 1024 * 1024;

/// What an export writes before its first page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExportHead {
    /// The agent's record, if registered.
    pub agent: Option<ManifestAgent>,
    /// The checkpoint document, JSON text.
    #[serde(with = "super::raw_json::option")]
    pub checkpoint: Option<String>,
    /// The newest seq when the export began: it exports events up to it.
    pub last_seq: u64,
}

/// One page of sessions or memory, in key order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExportPage<T> {
    /// The rows.
    pub items: Vec<T>,
    /// The key to pass as `after` for the next page; `None` on the last.
    pub next: Option<String>,
}

/// The record, the checkpoint and the log's newest seq.
pub fn head(store: &impl SqlStore) -> Result<ExportHead, DomainError> {
    let agent =
        record::role_and_metadata(store)?.map(|(role, metadata)| ManifestAgent { role, metadata });
    Ok(ExportHead {
        agent,
        checkpoint: checkpoint::load(store)?.map(|c| c.document),
        last_seq: event_log::state(store)?.last_seq,
    })
}

/// Sessions with ids above `after`, by id.
pub fn sessions_page(
    store: &impl SqlStore,
    after: Option<&str>,
) -> Result<ExportPage<ManifestSession>, DomainError> {
    let page = Keyed {
        table: "sessions",
        key: "session_id",
        document: "metadata",
        columns: "session_id, status, metadata, first_seq, last_seq, event_count, created_at, \
                  updated_at",
    };
    page.read(store, after, |row| {
        Ok(ManifestSession {
            session_id: row.text(0)?.to_owned(),
            status: row.text(1)?.to_owned(),
            metadata: take_text(row, 2)?,
            first_seq: row.uint(3)?,
            last_seq: row.uint(4)?,
            event_count: row.uint(5)?,
            created_at: Some(row.int(6)?),
            updated_at: Some(row.int(7)?),
        })
    })
}

/// Memory entries with keys above `after`, by key.
pub fn memory_page(
    store: &impl SqlStore,
    after: Option<&str>,
) -> Result<ExportPage<ManifestMemory>, DomainError> {
    let page = Keyed {
        table: "memory",
        key: "key",
        document: "value",
        columns: "key, value, updated_at",
    };
    page.read(store, after, |row| {
        Ok(ManifestMemory {
            key: row.text(0)?.to_owned(),
            value: take_text(row, 1)?,
            updated_at: Some(row.int(2)?),
        })
    })
}

/// A table read in pages by its text primary key.
struct Keyed {
    table: &'static str,
    key: &'static str,
    /// The column that may be large.
    document: &'static str,
    /// Selected, the key first.
    columns: &'static str,
}

impl Keyed {
    /// Sizes first (from row headers), then the rows that fit a page.
    fn read<T>(
        &self,
        store: &impl SqlStore,
        after: Option<&str>,
        mut convert: impl FnMut(&mut Row) -> Result<T, DomainError>,
    ) -> Result<ExportPage<T>, DomainError> {
        let Self {
            table,
            key,
            document,
            columns,
        } = self;
        let after = after.unwrap_or("");
        let sizes = store.execute(
            &format!(
                "SELECT {key}, octet_length({document}) FROM {table} WHERE {key} > ?1
                 ORDER BY {key} LIMIT ?2"
            ),
            params![after, EXPORT_PAGE_ROWS + 1],
        )?;
        let (through, more) = last_fitting(&sizes)?;
        let Some(through) = through else {
            return Ok(ExportPage {
                items: Vec::new(),
                next: None,
            });
        };
        let mut rows = store.execute(
            &format!(
                "SELECT {columns} FROM {table} WHERE {key} > ?1 AND {key} <= ?2 ORDER BY {key}"
            ),
            params![after, through.as_str()],
        )?;
        let items = rows
            .iter_mut()
            .map(&mut convert)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(ExportPage {
            items,
            next: more.then_some(through),
        })
    }
}

/// The last key of a page of `(key, size)` rows, and whether rows remain.
fn last_fitting(sizes: &[Row]) -> Result<(Option<String>, bool), DomainError> {
    let mut through = None;
    let mut bytes = 0u64;
    for (taken, row) in sizes.iter().enumerate() {
        bytes = bytes.saturating_add(row.uint(1)?);
        let full = taken == EXPORT_PAGE_ROWS as usize || (bytes > EXPORT_PAGE_BYTES && taken > 0);
        if full {
            return Ok((through, true));
        }
        through = Some(row.text(0)?.to_owned());
    }
    Ok((through, false))
}

/// Reads everything the agent has into one manifest (snapshot left
/// `None`), from the same pages an HTTP export writes. It holds the whole
/// manifest, so it serves tests and small agents only.
pub fn whole(store: &impl SqlStore) -> Result<super::Manifest, DomainError> {
    let head = head(store)?;
    let mut manifest = super::Manifest {
        format: Some(super::MANIFEST_FORMAT.to_owned()),
        agent: head.agent,
        checkpoint: head.checkpoint,
        ..super::Manifest::default()
    };
    let mut after = None;
    loop {
        let page = sessions_page(store, after.as_deref())?;
        manifest.sessions.extend(page.items);
        match page.next {
            Some(next) => after = Some(next),
            None => break,
        }
    }
    manifest.events = all_events(store)?;
    let mut after = None;
    loop {
        let page = memory_page(store, after.as_deref())?;
        manifest.memory.extend(page.items);
        match page.next {
            Some(next) => after = Some(next),
            None => break,
        }
    }
    Ok(manifest)
}

fn all_events(store: &impl SqlStore) -> Result<Vec<ManifestEvent>, DomainError> {
    let rows = store.execute(
        "SELECT seq, type, session_id, data, created_at FROM events ORDER BY seq",
        Vec::new(),
    )?;
    rows.into_iter()
        .map(|mut row| {
            Ok(ManifestEvent {
                seq: row.uint(0)?,
                event_type: row.text(1)?.to_owned(),
                session_id: row.opt_text(2)?.map(str::to_owned),
                data: take_text(&mut row, 3)?,
                created_at: Some(row.int(4)?),
            })
        })
        .collect()
}

/// A text column moved out of its row rather than copied (documents reach
/// 1 MiB).
fn take_text(row: &mut Row, index: usize) -> Result<String, DomainError> {
    match row
        .get_mut(index)
        .map(|v| std::mem::replace(v, SqlValue::Null))
    {
        Some(SqlValue::Text(text)) => Ok(text),
        other => Err(DomainError::Storage(format!(
            "column {index}: wanted text, got {other:?}"
        ))),
    }
}
