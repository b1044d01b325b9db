//! The manifest read as it arrives: its top-level fields one by one, the
//! `events`, `sessions` and `memory` arrays element by element, and the
//! snapshot through [`SnapshotPart`] (its bytes in pieces as they decode).
//! Fields may come in any order; each at most once, unknown ones refused
//! (as the manifest's type refuses them). What is buffered is bounded by the largest single value the
//! contract allows, never by the manifest.

use super::{
    input::{Input, invalid, invalid_json},
    snapshot_part::{SnapshotHead, SnapshotPart, SnapshotPiece},
};
use crate::error::ApiError;
use serde::de::IgnoredAny;
use serde_json::value::RawValue;
use stasis_domain::agent_state::{
    MAX_DOCUMENT_BYTES, ManifestAgent, ManifestChunk, ManifestEvent, ManifestMemory,
    ManifestSession,
};

/// One piece of the manifest, in the order the body holds them.
#[derive(Debug)]
pub(super) enum Item {
    /// `format`, when not null.
    Format(String),
    /// `agent`.
    Agent(Option<ManifestAgent>),
    /// `checkpoint`, JSON text.
    Checkpoint(Option<String>),
    /// An element of `events`, and the length of its JSON text.
    Event(ManifestEvent, usize),
    /// An element of `sessions`, and the length of its JSON text.
    Session(ManifestSession, usize),
    /// An element of `memory`, and the length of its JSON text.
    Memory(ManifestMemory, usize),
    /// `snapshot.data_base64` begins, and the snapshot's size when its
    /// header came first.
    SnapshotBegin(Option<u64>),
    /// The next bytes of `snapshot.data_base64`, decoded.
    SnapshotData(Vec<u8>),
    /// `snapshot` ended (`null`, or its header once all its bytes came).
    Snapshot(Option<SnapshotHead>),
    /// `workspace`: its head, when not null.
    Workspace(Box<crate::workspace_http::ManifestBody>),
    /// An element of `workspace_chunks`, and its index.
    WorkspaceChunk(ManifestChunk, u64),
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Field {
    Format,
    Agent,
    Checkpoint,
    Events,
    Sessions,
    Memory,
    Snapshot,
    Workspace,
    WorkspaceChunks,
}

const FIELDS: [(&str, Field); 9] = [
    ("format", Field::Format),
    ("agent", Field::Agent),
    ("checkpoint", Field::Checkpoint),
    ("events", Field::Events),
    ("sessions", Field::Sessions),
    ("memory", Field::Memory),
    ("snapshot", Field::Snapshot),
    ("workspace", Field::Workspace),
    ("workspace_chunks", Field::WorkspaceChunks),
];

impl Field {
    fn named(name: &str) -> Option<Self> {
        FIELDS.iter().find(|(n, _)| *n == name).map(|(_, f)| *f)
    }

    fn name(self) -> &'static str {
        FIELDS
            .iter()
            .find(|(_, f)| *f == self)
            .map_or("?", |(n, _)| n)
    }
}

/// The longest JSON text one value may take: a 1 MiB document (or event)
/// with its envelope, and room for whitespace and escapes. Longer values
/// are refused before they are buffered whole.
const VALUE_CAP: usize = 4 * MAX_DOCUMENT_BYTES as usize + 64 * 1024;
/// A key, the format and other small values.
const SMALL_CAP: usize = 1024;

enum State {
    Start,
    Key {
        first: bool,
    },
    Colon(Field),
    Value(Field),
    /// Just after an array's `[`, or after a `,` in it.
    Element {
        field: Field,
        index: u64,
        first: bool,
    },
    AfterElement {
        field: Field,
        index: u64,
    },
    Snapshot(Box<SnapshotPart>),
    AfterValue,
    Done,
}

/// Reads one manifest from bytes pushed as they arrive.
pub(super) struct ManifestReader {
    input: Input,
    state: State,
    seen: Vec<Field>,
}

impl ManifestReader {
    pub fn new() -> Self {
        Self {
            input: Input::default(),
            state: State::Start,
            seen: Vec::new(),
        }
    }

    /// Appends arriving bytes.
    pub fn push(&mut self, chunk: &[u8]) {
        self.input.push(chunk);
    }

    /// Marks the body's end.
    pub fn end(&mut self) {
        self.input.eof = true;
    }

    /// The next piece; `None` when more bytes are needed or the manifest is
    /// over (see [`ManifestReader::finish`]).
    pub fn next(&mut self) -> Result<Option<Item>, ApiError> {
        loop {
            if self.input.waiting() {
                return Ok(None);
            }
            let Some(outcome) = self.step()? else {
                return Ok(None);
            };
            if let Some(item) = outcome {
                return Ok(Some(item));
            }
        }
    }

    /// After the body's end: the manifest must be whole, and nothing but
    /// whitespace may follow it.
    pub fn finish(&mut self) -> Result<(), ApiError> {
        if !matches!(self.state, State::Done) {
            return Err(self.input.cut());
        }
        if self.input.rest().iter().any(|b| !b.is_ascii_whitespace()) {
            return Err(self.input.syntax("trailing characters after the manifest"));
        }
        Ok(())
    }

    /// One move: `None` when more bytes are needed, `Some(None)` after
    /// progress without an item.
    fn step(&mut self) -> Result<Option<Option<Item>>, ApiError> {
        let state = std::mem::replace(&mut self.state, State::Done);
        let (next, outcome) = self.advance_from(state)?;
        self.state = next;
        Ok(match outcome {
            Outcome::NeedMore => None,
            Outcome::Moved => Some(None),
            Outcome::Item(item) => Some(Some(item)),
        })
    }

    /// The state after one move from `state`, and what the move gave.
    fn advance_from(&mut self, state: State) -> Result<(State, Outcome), ApiError> {
        let input = &mut self.input;
        let wait = |state| Ok((state, Outcome::NeedMore));
        let moved = |state| Ok((state, Outcome::Moved));
        match state {
            State::Start => match input.peek() {
                Ok(None) => wait(State::Start),
                Ok(Some(b'{')) => {
                    input.advance(1);
                    moved(State::Key { first: true })
                }
                Ok(Some(b'[' | b'"' | b'-' | b'0'..=b'9' | b't' | b'f' | b'n')) => {
                    Err(invalid("manifest", "must be a JSON object"))
                }
                Ok(Some(_)) => Err(input.syntax("expected a JSON object")),
                Err(_) => Err(invalid_json("the body is empty".into())),
            },
            State::Key { first } => match input.peek()? {
                None => wait(State::Key { first }),
                Some(b'}') if first => {
                    input.advance(1);
                    moved(State::Done)
                }
                Some(b'"') => match input.take::<String>(&|| "manifest".into(), SMALL_CAP)? {
                    None => wait(State::Key { first }),
                    Some(name) => moved(State::Colon(self.field(&name)?)),
                },
                Some(_) => Err(input.syntax("expected a field name")),
            },
            State::Colon(field) => match input.expect(b':', "':' after a field name")? {
                false => wait(State::Colon(field)),
                true => moved(State::Value(field)),
            },
            State::Value(field) => value(input, field),
            State::Element {
                field,
                index,
                first,
            } => {
                if first && input.peek()? == Some(b']') {
                    input.advance(1);
                    return moved(State::AfterValue);
                }
                match element(input, field, index)? {
                    None => wait(State::Element {
                        field,
                        index,
                        first,
                    }),
                    Some(item) => Ok((State::AfterElement { field, index }, Outcome::Item(item))),
                }
            }
            State::AfterElement { field, index } => match input.peek()? {
                None => wait(State::AfterElement { field, index }),
                Some(b',') => {
                    input.advance(1);
                    moved(State::Element {
                        field,
                        index: index + 1,
                        first: false,
                    })
                }
                Some(b']') => {
                    input.advance(1);
                    moved(State::AfterValue)
                }
                Some(_) => Err(input.syntax(&format!("expected ',' or ']' in {}", field.name()))),
            },
            State::Snapshot(mut part) => match part.step(input)? {
                None => wait(State::Snapshot(part)),
                Some(SnapshotPiece::Begin(size)) => Ok((
                    State::Snapshot(part),
                    Outcome::Item(Item::SnapshotBegin(size)),
                )),
                Some(SnapshotPiece::Data(bytes)) => Ok((
                    State::Snapshot(part),
                    Outcome::Item(Item::SnapshotData(bytes)),
                )),
                Some(SnapshotPiece::End(head)) => {
                    Ok((State::AfterValue, Outcome::Item(Item::Snapshot(Some(head)))))
                }
            },
            State::AfterValue => match input.peek()? {
                None => wait(State::AfterValue),
                Some(b',') => {
                    input.advance(1);
                    moved(State::Key { first: false })
                }
                Some(b'}') => {
                    input.advance(1);
                    moved(State::Done)
                }
                Some(_) => Err(input.syntax("expected ',' or '}' between fields")),
            },
            State::Done => wait(State::Done),
        }
    }

    /// A field name, known and not seen before.
    fn field(&mut self, name: &str) -> Result<Field, ApiError> {
        let Some(field) = Field::named(name) else {
            let known: Vec<String> = FIELDS.iter().map(|(n, _)| format!("`{n}`")).collect();
            return Err(invalid(
                "manifest",
                &format!(
                    "unknown field `{name}`, expected one of {}",
                    known.join(", ")
                ),
            ));
        };
        if self.seen.contains(&field) {
            return Err(invalid("manifest", &format!("duplicate field `{name}`")));
        }
        self.seen.push(field);
        Ok(field)
    }
}

/// What one move of the reader gave.
enum Outcome {
    NeedMore,
    Moved,
    Item(Item),
}

/// A field's value, or the opening of its array or object.
fn value(input: &mut Input, field: Field) -> Result<(State, Outcome), ApiError> {
    let path = || field.name().to_owned();
    let waiting = Ok((State::Value(field), Outcome::NeedMore));
    let item = match field {
        Field::Format => match input.take::<Option<String>>(&path, SMALL_CAP)? {
            None => return waiting,
            Some(format) => format.map(Item::Format),
        },
        Field::Agent => match input.take::<Option<ManifestAgent>>(&path, VALUE_CAP)? {
            None => return waiting,
            Some(agent) => Some(Item::Agent(agent)),
        },
        Field::Checkpoint => match input.take::<Option<Box<RawValue>>>(&path, VALUE_CAP)? {
            None => return waiting,
            Some(raw) => Some(Item::Checkpoint(raw.map(|r| r.get().to_owned()))),
        },
        Field::Workspace => {
            match input.take::<Option<crate::workspace_http::ManifestBody>>(&path, VALUE_CAP)? {
                None => return waiting,
                Some(head) => head.map(|head| Item::Workspace(Box::new(head))),
            }
        }
        Field::Events | Field::Sessions | Field::Memory | Field::WorkspaceChunks => {
            match input.peek()? {
                None => return waiting,
                Some(b'[') => {
                    input.advance(1);
                    let state = State::Element {
                        field,
                        index: 0,
                        first: true,
                    };
                    return Ok((state, Outcome::Moved));
                }
                Some(_) => return Err(invalid(field.name(), "must be an array")),
            }
        }
        Field::Snapshot => match input.peek()? {
            None => return waiting,
            Some(b'{') => {
                input.advance(1);
                let state = State::Snapshot(Box::new(SnapshotPart::new()));
                return Ok((state, Outcome::Moved));
            }
            Some(_) => match input.take::<Option<IgnoredAny>>(&path, SMALL_CAP)? {
                None => return waiting,
                Some(None) => Some(Item::Snapshot(None)),
                Some(Some(_)) => return Err(invalid("snapshot", "must be an object or null")),
            },
        },
    };
    let outcome = item.map_or(Outcome::Moved, Outcome::Item);
    Ok((State::AfterValue, outcome))
}

/// Element `index` of array `field`.
fn element(input: &mut Input, field: Field, index: u64) -> Result<Option<Item>, ApiError> {
    let path = || format!("{}[{index}]", field.name());
    let before = input.rest().len();
    let item = match field {
        Field::Events => input
            .take::<ManifestEvent>(&path, VALUE_CAP)?
            .map(|e| Item::Event(e, before - input.rest().len())),
        Field::Sessions => input
            .take::<ManifestSession>(&path, VALUE_CAP)?
            .map(|s| Item::Session(s, before - input.rest().len())),
        Field::Memory => input
            .take::<ManifestMemory>(&path, VALUE_CAP)?
            .map(|m| Item::Memory(m, before - input.rest().len())),
        Field::WorkspaceChunks => input
            .take::<ManifestChunk>(&path, VALUE_CAP)?
            .map(|c| Item::WorkspaceChunk(c, index)),
        _ => return Err(invalid(field.name(), "is not an array")),
    };
    Ok(item)
}
