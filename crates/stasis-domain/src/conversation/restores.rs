//! Restores in the log: after a `stasis.restored` event, the conversation
//! continues from the restored point's conversation.
//!
//! The visible events form a chain: each event follows the events visible
//! when it was appended. A `stasis.restored` event (data `{"seq": S, ...}`)
//! makes the visible events those that were visible at seq S, so the
//! events after S and before the restore are skipped; an undo (a restore to
//! the seq just before an earlier restore) brings them back. A restored
//! event whose data does not read is ignored.

use crate::event_log::Event;
use serde::Deserialize;
use std::borrow::Cow;

/// The type of the event a restore appends (`crate::restore`).
pub const RESTORED_EVENT: &str = "stasis.restored";

#[derive(Deserialize)]
struct RestoredAt {
    seq: u64,
}

/// `events` (in seq order) as the conversation sees them once every
/// restore among them is applied; the restored events themselves are left
/// out.
pub fn after_restores(events: &[Event]) -> Cow<'_, [Event]> {
    if !events.iter().any(|e| e.event_type == RESTORED_EVENT) {
        return Cow::Borrowed(events);
    }
    // The visible event before each one, and the newest visible event
    // after each seq.
    let mut parent: Vec<Option<usize>> = vec![None; events.len()];
    let mut heads: Vec<(u64, Option<usize>)> = Vec::with_capacity(events.len());
    let mut head = None;
    for (index, event) in events.iter().enumerate() {
        if event.event_type == RESTORED_EVENT {
            if let Ok(at) = serde_json::from_str::<RestoredAt>(&event.data) {
                let before = heads.partition_point(|(seq, _)| *seq <= at.seq);
                head = before
                    .checked_sub(1)
                    .and_then(|i| heads.get(i))
                    .and_then(|(_, h)| *h);
            }
        } else {
            if let Some(slot) = parent.get_mut(index) {
                *slot = head;
            }
            head = Some(index);
        }
        heads.push((event.seq, head));
    }
    let mut visible = Vec::new();
    let mut at = head;
    // Each step goes to a smaller index: at most one per event.
    while let Some(index) = at {
        visible.extend(events.get(index).cloned());
        at = parent.get(index).copied().flatten();
    }
    visible.reverse();
    Cow::Owned(visible)
}
