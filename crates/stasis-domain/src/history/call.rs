//! The history calls the agent object answers, as data.

use super::{HistoryPage, Kind, Pin, pins, versions};
use crate::{DomainError, sql::SqlStore};
use serde::{Deserialize, Serialize};

/// One history operation on the agent object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", content = "args", rename_all = "snake_case")]
pub enum HistoryCall {
    /// A page of a kind's versions, oldest first.
    List {
        /// The kind.
        kind: Kind,
        /// One memory key's versions only.
        key: Option<String>,
        /// Versions after this one.
        after: u64,
        /// 1 to 1,000; 100 when omitted.
        limit: Option<u32>,
    },
    /// Sets a pin (at the log's last seq when `seq` is `None`).
    PutPin {
        /// An id.
        name: String,
        /// The point it holds.
        seq: Option<u64>,
    },
    /// One pin.
    GetPin {
        /// An id.
        name: String,
    },
    /// Every pin.
    ListPins,
    /// Removes a pin.
    DeletePin {
        /// An id.
        name: String,
    },
}

/// The answer to a [`HistoryCall`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", content = "args", rename_all = "snake_case")]
pub enum HistoryReply {
    /// A page of versions.
    Versions(HistoryPage),
    /// A pin, and whether `PutPin` made it.
    Pin(Pin, bool),
    /// Every pin, by name.
    Pins(Vec<Pin>),
    /// A pin went.
    Deleted,
}

/// Runs one call on the agent's store at `now_ms`, inside the caller's
/// transaction.
pub fn execute(
    store: &impl SqlStore,
    call: &HistoryCall,
    now_ms: i64,
) -> Result<HistoryReply, DomainError> {
    Ok(match call {
        HistoryCall::List {
            kind,
            key,
            after,
            limit,
        } => HistoryReply::Versions(versions::list(
            store,
            *kind,
            key.as_deref(),
            *after,
            *limit,
        )?),
        HistoryCall::PutPin { name, seq } => {
            let (pin, created) = pins::put(store, name, *seq, now_ms)?;
            HistoryReply::Pin(pin, created)
        }
        HistoryCall::GetPin { name } => HistoryReply::Pin(pins::get(store, name)?, false),
        HistoryCall::ListPins => HistoryReply::Pins(pins::list(store)?),
        HistoryCall::DeletePin { name } => {
            pins::delete(store, name)?;
            HistoryReply::Deleted
        }
    })
}

/// True when the call may change the object.
pub fn is_write(call: &HistoryCall) -> bool {
    matches!(
        call,
        HistoryCall::PutPin { .. } | HistoryCall::DeletePin { .. }
    )
}
