//! Restore in place: the agent's kilo.db, workspace, checkpoint and memory
//! become what they were at a point of its history
//! ([`crate::history::point`]), in one transaction.
//!
//! # What a restore does
//!
//! 1. Resolves the point (a seq, a time, a version, or a pin's seq) to the
//!    version each kind had then; bad input (a seq past the log, an
//!    unknown version or pin) refuses before anything is written.
//! 2. Pins the log's last seq as the **undo handle** (pin
//!    `restore-undo-{R}`, R the restore's seq): every version current before
//!    the restore stays kept until the pin goes, so restoring to that pin
//!    puts the agent back exactly as it was.
//! 3. Appends one `stasis.restored` event (seq R, no session) whose data is
//!    [`RestoredEvent`]: the point, the seq it resolved to, the version
//!    each kind was restored from, and the undo pin. The log is never
//!    rewritten; the conversation rebuild reads this event and skips the
//!    events after the point and before it ([`crate::conversation`]).
//! 4. Records a NEW current version per kind that changed, at history seq
//!    R, naming the old version's manifest (kilo.db) or pages and chunks
//!    (workspace): no chunk byte is copied. The restored kilo.db and
//!    workspace keep their bytes' own `event_watermark`; the checkpoint and
//!    memory values keep the time they were written then. A kind absent at
//!    the point is deleted (the deletion a version of its own). A kind that
//!    already is what the point says is left alone.
//! 5. Clears the cached conversation summaries (they may cover skipped
//!    turns).
//!
//! With [`RestoreCall::fence_epoch`] the agent's fence is first raised to
//! that epoch ([`crate::fence::admit`]), so that no write of the container
//! holding it live lands any more; the API decides when (see
//! `docs/restore.md`).

#![cfg_attr(
    feature = "schema",
    allow(
        clippy::disallowed_macros,
        clippy::disallowed_methods,
        reason = "the JsonSchema derive builds its schemas with json! and to_value over our own types, never stored data"
    )
)]

use crate::{
    DomainError, agent_state,
    event_log::{self, AppendBatch, AppendSettings, NewEvent},
    fence::{self, Fence},
    history::{
        pins,
        point::{self, Point, PointBody, StateAt},
    },
    object_env::ObjectEnv,
    snapshot,
    sql::SqlStore,
    summary_cache, workspace_store,
};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The type of the event a restore appends.
pub const RESTORED_EVENT: &str = crate::conversation::RESTORED_EVENT;
/// The container name a restore's fence carries.
pub const RESTORE_FENCE_HOLDER: &str = "stasis.restore";

/// Where to restore to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RestoreTo {
    /// A point.
    Point(Point),
    /// A pin's seq (an undo handle is one).
    Pin(String),
}

/// One restore, as the agent object runs it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RestoreCall {
    /// Where to.
    pub to: RestoreTo,
    /// How long superseded chunks stay readable (the snapshot grace).
    pub grace_ms: i64,
    /// Raise the agent's fence to this epoch first (fence the live holder).
    pub fence_epoch: Option<u64>,
}

/// What one kind became.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct KindRestored {
    /// The version it was restored from; absent: it was absent at the
    /// point (and is deleted now).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<u64>,
    /// Its current version now; absent when there is none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<u64>,
    /// False when it already was what the point says (nothing written).
    pub changed: bool,
}

/// The undo handle: restore to this pin to undo.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UndoHandle {
    /// The pin's name.
    pub pin: String,
    /// The seq it holds: the log's last before the restore.
    pub seq: u64,
}

/// A restore's answer.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Restored {
    /// The seq of the `stasis.restored` event.
    pub seq: u64,
    /// The seq the point resolved to.
    pub point_seq: u64,
    /// kilo.db.
    pub db_snapshot: KindRestored,
    /// The workspace.
    pub workspace: KindRestored,
    /// The checkpoint.
    pub checkpoint: KindRestored,
    /// Each memory key present before or after.
    pub memory: BTreeMap<String, KindRestored>,
    /// Restore to it to undo.
    pub undo: UndoHandle,
}

/// The data of a `stasis.restored` event.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RestoredEvent {
    /// The point as asked for.
    pub point: PointBody,
    /// The pin asked for, when the restore named one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pin: Option<String>,
    /// The seq it resolved to: the conversation continues from here.
    pub seq: u64,
    /// The version each kind was restored from (absent: absent then).
    pub state: StateAt,
    /// The undo handle.
    pub undo: UndoHandle,
}

/// Runs one restore inside the caller's transaction.
pub fn execute(
    store: &impl SqlStore,
    call: &RestoreCall,
    env: &ObjectEnv,
) -> Result<Restored, DomainError> {
    if let Some(epoch) = call.fence_epoch {
        let fence = Fence {
            container_id: RESTORE_FENCE_HOLDER.to_owned(),
            epoch,
        };
        fence::admit(store, &fence)?;
    }
    let (point, pin) = match &call.to {
        RestoreTo::Point(point) => (point.clone(), None),
        RestoreTo::Pin(name) => (Point::Seq(pins::get(store, name)?.seq), Some(name.clone())),
    };
    let state = point::resolve(store, &point)?;
    let before = event_log::state(store)?.last_seq;
    let undo_name = format!("restore-undo-{}", before + 1);
    let (undo_pin, _) = pins::put(store, &undo_name, Some(before), env.now_ms)?;
    let undo = UndoHandle {
        pin: undo_pin.name,
        seq: undo_pin.seq,
    };
    let event = RestoredEvent {
        point: body_of(&point),
        pin,
        seq: state.seq,
        state: state.clone(),
        undo: undo.clone(),
    };
    let data = serde_json::to_string(&event)
        .map_err(|err| DomainError::Storage(format!("encoding a restore event: {err}")))?;
    let batch = AppendBatch::new(vec![NewEvent::new(RESTORED_EVENT, None, &data)]);
    let settings = AppendSettings {
        now_ms: env.now_ms,
        max_events: env.max_events,
    };
    let seq = event_log::append(store, &batch, &settings)?.last_seq;
    let restored = apply(store, &state, seq, (env, call.grace_ms))?;
    summary_cache::clear(store)?;
    Ok(Restored {
        seq,
        point_seq: state.seq,
        undo,
        ..restored
    })
}

/// Makes each kind what `state` says, recorded at history seq `seq`.
fn apply(
    store: &impl SqlStore,
    state: &StateAt,
    seq: u64,
    (env, grace_ms): (&ObjectEnv, i64),
) -> Result<Restored, DomainError> {
    let from = |at: Option<point::VersionAt>| at.map(|v| v.version);
    let kind = |from: Option<u64>, (version, changed): (Option<u64>, bool)| KindRestored {
        from,
        version,
        changed,
    };
    let db = snapshot::restore::restore_to(store, state.db_snapshot, seq, (env, grace_ms))?;
    let workspace =
        workspace_store::restore::restore_to(store, state.workspace, seq, (env, grace_ms))?;
    let checkpoint = agent_state::restore::checkpoint_to(store, state.checkpoint, env)?;
    let memory = agent_state::restore::memory_to(store, &state.memory, env)?
        .into_iter()
        .map(|(key, became)| {
            let from = from(state.memory.get(&key).copied());
            (key, kind(from, became))
        })
        .collect();
    Ok(Restored {
        seq,
        point_seq: state.seq,
        db_snapshot: kind(from(state.db_snapshot), db),
        workspace: kind(from(state.workspace), workspace),
        checkpoint: kind(from(state.checkpoint), checkpoint),
        memory,
        undo: UndoHandle {
            pin: String::new(),
            seq: 0,
        },
    })
}

fn body_of(point: &Point) -> PointBody {
    match point {
        Point::Seq(seq) => PointBody {
            seq: Some(*seq),
            ..PointBody::default()
        },
        Point::At(at) => PointBody {
            at: Some(*at),
            ..PointBody::default()
        },
        Point::Version { kind, key, version } => PointBody {
            kind: Some(*kind),
            key: key.clone(),
            version: Some(*version),
            ..PointBody::default()
        },
    }
}
