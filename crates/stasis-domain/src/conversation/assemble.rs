//! Folding message events into turns, in one pass.

use super::message::Message;
use super::parse::{Update, parse};
use super::{SeqTurn, Turn};
use crate::event_log::Event;
use serde::Deserialize;
use std::collections::{HashMap, HashSet};

/// Every message's turn, in order of first appearance, removed and empty
/// ones dropped, and the runtime's copies of what stasis sent into it left
/// out.
pub(super) fn assemble(events: &[Event]) -> Vec<Turn> {
    assemble_with_seqs(events)
        .into_iter()
        .map(|seq_turn| seq_turn.turn)
        .collect()
}

/// [`assemble`], each turn with the seq of its message's first event.
pub(super) fn assemble_with_seqs(events: &[Event]) -> Vec<SeqTurn> {
    let copies = sent_by_stasis(events);
    let mut messages = Messages::default();
    let mut previous: Option<&Event> = None;
    for event in events {
        if previous.is_some_and(|previous| is_repeat(previous, event)) {
            continue;
        }
        previous = Some(event);
        if let Some(update) = parse(event)
            && !copies.contains(update.message_id.as_ref())
        {
            messages.apply(update, event.session_id.as_deref(), event.seq);
        }
    }
    messages.into_turns()
}

/// The runtime's ids of the messages stasis sent into it, as its records
/// name them: an inbox message delivered (the log holds the message itself,
/// where it was posted), a new session's first prompt (the prior
/// conversation and inbox messages the log holds already), a cut reply's
/// continuation or resent question. Each would otherwise show twice.
fn sent_by_stasis(events: &[Event]) -> HashSet<String> {
    #[derive(Deserialize)]
    struct Record {
        message_id: Option<String>,
    }
    let mut ids = HashSet::new();
    for event in events {
        let named = matches!(
            event.event_type.as_str(),
            "stasis.inbox.delivered" | "stasis.resume.session_prompt" | "stasis.resume.cut_reply"
        );
        if named
            && let Ok(Record {
                message_id: Some(id),
            }) = serde_json::from_str(&event.data)
            && !id.is_empty()
        {
            ids.insert(id);
        }
    }
    ids
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
    /// The seq of each message's first event, by the same index.
    first_seqs: Vec<u64>,
    index_by_id: HashMap<String, usize>,
    /// The message the previous event named: most events name it again,
    /// and a comparison is cheaper than a hash.
    last: Option<(String, usize)>,
}

impl Messages {
    fn apply(&mut self, update: Update<'_>, session_id: Option<&str>, seq: u64) {
        let message = self.get_or_insert(&update.message_id, seq);
        message.note_session(session_id);
        if message.is_removed() {
            return;
        }
        if update.removes_message {
            message.remove();
            return;
        }
        if let Some(role) = update.role {
            message.set_role(&role);
        }
        if let Some(part) = update.part {
            message.apply_part(part);
        }
        // After the part: a finishing event's own delta still counts.
        if update.finishes {
            message.finish();
        }
    }

    fn get_or_insert(&mut self, id: &str, seq: u64) -> &mut Message {
        let index = match &mut self.last {
            Some((last, index)) if last == id => *index,
            last => {
                let index = match self.index_by_id.get(id) {
                    Some(&index) => index,
                    None => {
                        self.in_order.push(Message::default());
                        self.first_seqs.push(seq);
                        let index = self.in_order.len() - 1;
                        self.index_by_id.insert(id.to_owned(), index);
                        index
                    }
                };
                *last = Some((id.to_owned(), index));
                index
            }
        };
        &mut self.in_order[index]
    }

    fn into_turns(mut self) -> Vec<SeqTurn> {
        resolve_cut_replies(&mut self.in_order);
        self.in_order
            .into_iter()
            .zip(self.first_seqs)
            .filter_map(|(message, first_seq)| {
                let turn = message.into_turn()?;
                Some(SeqTurn { first_seq, turn })
            })
            .collect()
    }
}

/// A reply cut off, followed in its session by a reply that finished whole,
/// was taken up again (the runtime went on, e.g. asked to continue it): it is
/// no longer unfinished, so later dispatches stop asking for it.
fn resolve_cut_replies(messages: &mut [Message]) {
    let mut whole_reply_after: Vec<Option<String>> = Vec::new();
    for message in messages.iter_mut().rev() {
        if message.is_cut_reply()
            && whole_reply_after
                .iter()
                .any(|s| s.as_deref() == message.session())
        {
            message.resolve();
        }
        if message.is_whole_reply() {
            let session = message.session().map(str::to_owned);
            if !whole_reply_after.contains(&session) {
                whole_reply_after.push(session);
            }
        }
    }
}
