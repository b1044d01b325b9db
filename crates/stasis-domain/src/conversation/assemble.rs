//! Folding message events into turns, in one pass.

use super::parse::{MessageUpdate, PartText, TextChange, parse};
use super::{Turn, UNKNOWN_ROLE};
use crate::event_log::Event;
use std::collections::HashMap;

/// Every message's turn, in order of first appearance, empty ones dropped.
pub(super) fn assemble(events: &[Event]) -> Vec<Turn> {
    let mut messages = Messages::default();
    let mut previous: Option<&Event> = None;
    for event in events {
        if previous.is_some_and(|previous| is_repeat(previous, event)) {
            continue;
        }
        previous = Some(event);
        if let Some(update) = parse(event) {
            messages.apply(update);
        }
    }
    messages.into_turns()
}

/// The same log entry twice in a row (e.g. overlapping read pages): seqs
/// are unique, so this is not a stream repeating itself.
fn is_repeat(previous: &Event, event: &Event) -> bool {
    previous.seq == event.seq
        && previous.event_type == event.event_type
        && previous.data == event.data
}

/// Messages by first appearance, with an index so each event costs O(1).
#[derive(Default)]
struct Messages {
    in_order: Vec<Message>,
    index_by_id: HashMap<String, usize>,
}

impl Messages {
    fn apply(&mut self, update: MessageUpdate<'_>) {
        let message = self.get_or_insert(&update.message_id);
        if let Some(role) = update.role {
            message.set_role(&role);
        }
        if let Some(text) = update.text {
            message.apply_text(text);
        }
        // After the text: a completing event's own delta still counts.
        message.completed |= update.completes;
    }

    fn get_or_insert(&mut self, id: &str) -> &mut Message {
        let index = match self.index_by_id.get(id) {
            Some(&index) => index,
            None => {
                let index = self.in_order.len();
                self.index_by_id.insert(id.to_owned(), index);
                self.in_order.push(Message::default());
                index
            }
        };
        &mut self.in_order[index]
    }

    fn into_turns(self) -> Vec<Turn> {
        self.in_order
            .into_iter()
            .filter_map(Message::into_turn)
            .collect()
    }
}

/// One message being assembled.
#[derive(Default)]
struct Message {
    role: Option<String>,
    /// Part texts by first appearance.
    parts: Vec<String>,
    index_by_part_id: HashMap<String, usize>,
    unnamed_part: Option<usize>,
    completed: bool,
}

impl Message {
    fn set_role(&mut self, role: &str) {
        if self.role.as_deref() != Some(role) {
            self.role = Some(role.to_owned());
        }
    }

    fn apply_text(&mut self, text: PartText<'_>) {
        if self.completed && matches!(text.change, TextChange::Append(_)) {
            // A finished message cannot grow: this is a late retry.
            return;
        }
        let part = self.part_mut(text.part_id.as_deref());
        match text.change {
            TextChange::Replace(full) => {
                part.clear();
                part.push_str(&full);
            }
            TextChange::Append(delta) => part.push_str(&delta),
        }
    }

    fn part_mut(&mut self, part_id: Option<&str>) -> &mut String {
        let known = match part_id {
            Some(id) => self.index_by_part_id.get(id).copied(),
            None => self.unnamed_part,
        };
        let index = known.unwrap_or_else(|| {
            let index = self.parts.len();
            match part_id {
                Some(id) => {
                    self.index_by_part_id.insert(id.to_owned(), index);
                }
                None => self.unnamed_part = Some(index),
            }
            self.parts.push(String::new());
            index
        });
        &mut self.parts[index]
    }

    /// The turn, or `None` when the message has no text.
    fn into_turn(self) -> Option<Turn> {
        let content = join_parts(self.parts);
        if content.is_empty() {
            return None;
        }
        Some(Turn {
            role: self.role.unwrap_or_else(|| UNKNOWN_ROLE.to_owned()),
            content,
            unfinished: !self.completed,
        })
    }
}

/// The non-empty parts joined with `"\n"`, growing the first part's buffer
/// (so the usual single part is not copied).
fn join_parts(parts: Vec<String>) -> String {
    let mut non_empty = parts.into_iter().filter(|part| !part.is_empty());
    let Some(mut content) = non_empty.next() else {
        return String::new();
    };
    for part in non_empty {
        content.push('\n');
        content.push_str(&part);
    }
    content
}
