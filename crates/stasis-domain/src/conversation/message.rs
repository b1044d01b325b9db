//! One message being assembled from its updates, and the turn it becomes.

use super::parse::{PartChange, PartUpdate};
use super::{Turn, UNKNOWN_ROLE};
use std::borrow::Cow;
use std::collections::HashMap;

/// One message being assembled.
#[derive(Default)]
pub(super) struct Message {
    role: Option<String>,
    /// Parts by first appearance.
    parts: Vec<Part>,
    index_by_part_id: HashMap<String, usize>,
    /// The part the previous update named: most updates name it again
    /// (a stream of deltas), and a comparison is cheaper than a hash.
    last_part: Option<(String, usize)>,
    unnamed_part: Option<usize>,
    finished: bool,
    removed: bool,
    /// The session of its first event that named one.
    session: Option<String>,
    /// Cut off, but a later reply of its session finished whole.
    resolved: bool,
}

/// One part: its text (a tool's line for a tool) and what it is.
#[derive(Default)]
struct Part {
    text: String,
    kind: PartKind,
    progress: Progress,
}

#[derive(Default, PartialEq, Eq)]
enum PartKind {
    #[default]
    Text,
    Tool,
    /// Not conversation: its text is not kept.
    Hidden,
    /// Gone for good: nothing later brings it back.
    Removed,
}

/// How far a text part is known to have got.
#[derive(Default, PartialEq, Eq)]
enum Progress {
    /// Not seen streaming: no delta yet, or text without timing (a
    /// user's, the older spellings').
    #[default]
    Unknown,
    /// Deltas came and no ended full text yet.
    Streaming,
    /// Its ended full text arrived.
    Ended,
}

impl Message {
    /// Keeps the first session an event of this message names.
    pub fn note_session(&mut self, session_id: Option<&str>) {
        if self.session.is_none()
            && let Some(session) = session_id
        {
            self.session = Some(session.to_owned());
        }
    }

    /// The session it belongs to, if any event named one.
    pub fn session(&self) -> Option<&str> {
        self.session.as_deref()
    }

    /// An assistant's message that would be marked unfinished.
    pub fn is_cut_reply(&self) -> bool {
        self.is_reply() && (!self.finished || self.parts.iter().any(Part::is_cut_off))
    }

    /// An assistant's message that finished, nothing in it cut off, saying something.
    pub fn is_whole_reply(&self) -> bool {
        self.is_reply()
            && self.finished
            && !self.parts.iter().any(Part::is_cut_off)
            && self.parts.iter().any(Part::says_something)
    }

    /// No longer unfinished: see [`Message::is_cut_reply`] and the rebuild's docs.
    pub fn resolve(&mut self) {
        self.resolved = true;
    }

    fn is_reply(&self) -> bool {
        !self.removed && self.role.as_deref().unwrap_or(UNKNOWN_ROLE) == "assistant"
    }

    /// Whether updates still apply: a removed message stays removed.
    pub fn is_removed(&self) -> bool {
        self.removed
    }

    /// Drops everything: the message was reverted away.
    pub fn remove(&mut self) {
        self.removed = true;
        self.parts = Vec::new();
        self.index_by_part_id = HashMap::new();
        self.last_part = None;
    }

    /// The latest role given wins.
    pub fn set_role(&mut self, role: &str) {
        if self.role.as_deref() != Some(role) {
            self.role = Some(role.to_owned());
        }
    }

    /// The runtime finished writing it.
    pub fn finish(&mut self) {
        self.finished = true;
    }

    /// Applies a change to the part it names (a new part is added last).
    pub fn apply_part(&mut self, update: PartUpdate<'_>) {
        // A finished message cannot grow: a delta now is a late retry.
        if self.finished && matches!(update.change, PartChange::Delta { .. }) {
            return;
        }
        let part = self.part_mut(update.part_id);
        if part.kind != PartKind::Removed {
            part.apply(update.change);
        }
    }

    fn part_mut(&mut self, part_id: Option<Cow<'_, str>>) -> &mut Part {
        let index = match part_id {
            Some(id) => self.named_part(id),
            None => *self.unnamed_part.get_or_insert_with(|| {
                self.parts.push(Part::default());
                self.parts.len() - 1
            }),
        };
        &mut self.parts[index]
    }

    fn named_part(&mut self, id: Cow<'_, str>) -> usize {
        if let Some((last, index)) = &self.last_part
            && *last == id
        {
            return *index;
        }
        let index = match self.index_by_part_id.get(id.as_ref()) {
            Some(&index) => index,
            None => {
                self.parts.push(Part::default());
                let index = self.parts.len() - 1;
                self.index_by_part_id.insert(id.to_string(), index);
                index
            }
        };
        self.last_part = Some((id.into_owned(), index));
        index
    }

    /// The turn, or `None` when the message was removed or says nothing.
    pub fn into_turn(self) -> Option<Turn> {
        if self.removed {
            return None;
        }
        let cut_off = self.parts.iter().any(Part::is_cut_off);
        let content = join_parts(self.parts);
        if content.is_empty() {
            return None;
        }
        Some(Turn::new(
            self.role.unwrap_or_else(|| UNKNOWN_ROLE.to_owned()),
            content,
            (!self.finished || cut_off) && !self.resolved,
        ))
    }
}

impl Part {
    fn apply(&mut self, change: PartChange<'_>) {
        match change {
            PartChange::Text {
                full,
                ended,
                streamed,
            } => self.set_text(&full, ended, streamed),
            PartChange::Delta { piece, live } => self.append(&piece, live),
            PartChange::Tool(call) => {
                self.kind = PartKind::Tool;
                self.text.clear();
                call.render_into(&mut self.text);
            }
            PartChange::Hidden => self.discard(PartKind::Hidden),
            PartChange::Removed => self.discard(PartKind::Removed),
        }
    }

    /// The latest full text wins, except a not-ended one that the deltas
    /// already ran past (a start overtaken by its own stream).
    fn set_text(&mut self, full: &str, ended: bool, streamed: bool) {
        self.kind = PartKind::Text;
        let overtaken = !ended && full.len() < self.text.len() && self.text.starts_with(full);
        if !overtaken {
            self.text.clear();
            self.text.push_str(full);
        }
        if ended {
            self.progress = Progress::Ended;
        } else if streamed && self.progress == Progress::Unknown {
            self.progress = Progress::Streaming;
        }
    }

    fn append(&mut self, piece: &str, live: bool) {
        if self.kind != PartKind::Text {
            // Reasoning streams too; a tool's line is whole.
            return;
        }
        self.text.push_str(piece);
        if live && self.progress == Progress::Unknown {
            self.progress = Progress::Streaming;
        }
    }

    fn discard(&mut self, kind: PartKind) {
        self.kind = kind;
        self.text = String::new();
    }

    /// A text part that streamed and never got its ended full text.
    fn is_cut_off(&self) -> bool {
        self.kind == PartKind::Text && self.progress == Progress::Streaming
    }

    fn says_something(&self) -> bool {
        matches!(self.kind, PartKind::Text | PartKind::Tool) && !self.text.is_empty()
    }
}

/// The parts that say something, joined with `"\n"`, growing the first
/// one's buffer (so the usual single part is not copied).
fn join_parts(parts: Vec<Part>) -> String {
    let mut texts = parts
        .into_iter()
        .filter(Part::says_something)
        .map(|part| part.text);
    let Some(mut content) = texts.next() else {
        return String::new();
    };
    for text in texts {
        content.push('\n');
        content.push_str(&text);
    }
    content
}
