//! The manifest's `snapshot` object, read as it arrives: its small fields
//! as values, its `data_base64` decoded as it streams and handed on a
//! piece at a time (neither the text nor the bytes are ever held whole),
//! and its header once the object closes.
//!
//! This is the one place that knows how a manifest carries a snapshot's
//! bytes; storing them is the runtime's snapshot saga.

use super::input::{Input, invalid};
use crate::error::ApiError;
use base64::{Engine as _, engine::general_purpose::STANDARD};
use stasis_domain::agent_state::check_snapshot_header;

/// A snapshot's header as the manifest gave it (its bytes already handed
/// on, as many as `size` said; not yet checked against its sha256: storing
/// them does that).
#[derive(Debug)]
pub(super) struct SnapshotHead {
    /// Lowercase hex sha256, as given.
    pub sha256: String,
    /// Bytes.
    pub size: u64,
    /// The last seq the snapshot reflects.
    pub event_watermark: u64,
}

/// What reading a `snapshot` object gives, in order: `Begin`, the bytes in
/// `Data` pieces, then `End`.
#[derive(Debug)]
pub(super) enum SnapshotPiece {
    /// `data_base64` begins; `size` when the header gave it before.
    Begin(Option<u64>),
    /// The next decoded bytes.
    Data(Vec<u8>),
    /// The object closed.
    End(SnapshotHead),
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Field {
    Sha256,
    Size,
    EventWatermark,
    DataBase64,
}

impl Field {
    fn named(name: &str) -> Option<Self> {
        Some(match name {
            "sha256" => Self::Sha256,
            "size" => Self::Size,
            "event_watermark" => Self::EventWatermark,
            "data_base64" => Self::DataBase64,
            _ => return None,
        })
    }
}

enum State {
    Key {
        first: bool,
    },
    Colon(Field),
    Value(Field),
    /// Inside `data_base64`'s string.
    Base64,
    AfterValue,
}

/// Reads one `snapshot` object, from just after its `{`.
pub(super) struct SnapshotPart {
    state: State,
    sha256: Option<String>,
    size: Option<u64>,
    event_watermark: Option<u64>,
    data: Option<Base64Stream>,
}

impl SnapshotPart {
    pub fn new() -> Self {
        Self {
            state: State::Key { first: true },
            sha256: None,
            size: None,
            event_watermark: None,
            data: None,
        }
    }

    /// Reads on: the next piece, or `None` when more bytes are needed.
    pub fn step(&mut self, input: &mut Input) -> Result<Option<SnapshotPiece>, ApiError> {
        loop {
            if input.waiting() {
                return Ok(None);
            }
            match self.state {
                State::Key { first } => match input.peek()? {
                    None => return Ok(None),
                    Some(b'}') if first => {
                        input.advance(1);
                        return self.finish().map(|head| Some(SnapshotPiece::End(head)));
                    }
                    Some(b'"') => {
                        let Some(name) = input.take::<String>(&|| "snapshot".into(), 1024)? else {
                            return Ok(None);
                        };
                        let field = Field::named(&name).ok_or_else(|| {
                            invalid(
                                "snapshot",
                                &format!(
                                    "unknown field `{name}`, expected one of `sha256`, `size`, \
                                     `event_watermark`, `data_base64`"
                                ),
                            )
                        })?;
                        self.state = State::Colon(field);
                    }
                    Some(_) => return Err(input.syntax("expected a field name in snapshot")),
                },
                State::Colon(field) => {
                    if !input.expect(b':', "':' after a field name")? {
                        return Ok(None);
                    }
                    self.state = State::Value(field);
                }
                State::Value(field) => {
                    if !self.value(input, field)? {
                        return Ok(None);
                    }
                    if matches!(self.state, State::Base64) {
                        return Ok(Some(SnapshotPiece::Begin(self.size)));
                    }
                }
                State::Base64 => match self.base64(input)? {
                    Base64Step::NeedMore => return Ok(None),
                    Base64Step::Piece(bytes) => return Ok(Some(SnapshotPiece::Data(bytes))),
                    Base64Step::Closed(rest) => {
                        self.state = State::AfterValue;
                        if !rest.is_empty() {
                            return Ok(Some(SnapshotPiece::Data(rest)));
                        }
                    }
                },
                State::AfterValue => match input.peek()? {
                    None => return Ok(None),
                    Some(b',') => {
                        input.advance(1);
                        self.state = State::Key { first: false };
                    }
                    Some(b'}') => {
                        input.advance(1);
                        return self.finish().map(|head| Some(SnapshotPiece::End(head)));
                    }
                    Some(_) => return Err(input.syntax("expected ',' or '}' in snapshot")),
                },
            }
        }
    }

    /// One field's value; `false` when more bytes are needed.
    fn value(&mut self, input: &mut Input, field: Field) -> Result<bool, ApiError> {
        let twice = || invalid("snapshot", "a field appears twice");
        match field {
            Field::DataBase64 => {
                if self.data.is_some() {
                    return Err(twice());
                }
                if !input.expect(b'"', "a base64 string in snapshot.data_base64")? {
                    return Ok(false);
                }
                self.data = Some(Base64Stream::default());
                self.state = State::Base64;
                return Ok(true);
            }
            Field::Sha256 => {
                let Some(text) = input.take::<String>(&|| "snapshot.sha256".into(), 1024)? else {
                    return Ok(false);
                };
                if self.sha256.replace(text).is_some() {
                    return Err(twice());
                }
            }
            Field::Size | Field::EventWatermark => {
                let name = if field == Field::Size {
                    "snapshot.size"
                } else {
                    "snapshot.event_watermark"
                };
                let Some(number) = input.take::<u64>(&|| name.into(), 64)? else {
                    return Ok(false);
                };
                let slot = if field == Field::Size {
                    &mut self.size
                } else {
                    &mut self.event_watermark
                };
                if slot.replace(number).is_some() {
                    return Err(twice());
                }
            }
        }
        self.state = State::AfterValue;
        Ok(true)
    }

    /// Streams `data_base64`'s characters into the decoder up to the
    /// closing quote, stopping at each piece of decoded bytes.
    fn base64(&mut self, input: &mut Input) -> Result<Base64Step, ApiError> {
        let Some(data) = self.data.as_mut() else {
            return Err(invalid("snapshot.data_base64", "lost its decoder"));
        };
        loop {
            if let Some(piece) = data.ready() {
                return Ok(Base64Step::Piece(piece));
            }
            let rest = input.rest();
            let plain = rest
                .iter()
                .take_while(|&&b| b != b'"' && b != b'\\')
                .count();
            if plain > 0 {
                data.push(rest.get(..plain).unwrap_or_default())?;
                input.advance(plain);
                check_not_over(data.decoded, self.size)?;
                continue;
            }
            match input.rest() {
                [] if input.eof => return Err(input.cut()),
                [] | [b'\\'] => return Ok(Base64Step::NeedMore),
                [b'"', ..] => {
                    input.advance(1);
                    let rest = data.finish()?;
                    check_not_over(data.decoded, self.size)?;
                    return Ok(Base64Step::Closed(rest));
                }
                // JSON may escape '/', base64's one character that allows it.
                [b'\\', b'/', ..] => {
                    data.push(b"/")?;
                    input.advance(2);
                }
                _ => return Err(not_base64()),
            }
        }
    }

    fn finish(&mut self) -> Result<SnapshotHead, ApiError> {
        let missing = |name: &str| invalid("snapshot", &format!("missing field `{name}`"));
        let sha256 = self.sha256.take().ok_or_else(|| missing("sha256"))?;
        let size = self.size.ok_or_else(|| missing("size"))?;
        let event_watermark = self
            .event_watermark
            .ok_or_else(|| missing("event_watermark"))?;
        let data = self.data.take().ok_or_else(|| missing("data_base64"))?;
        check_snapshot_header(&sha256, event_watermark)?;
        if data.decoded != size {
            return Err(invalid(
                "snapshot.data_base64",
                &format!("decodes to {} bytes, not the {size} of size", data.decoded),
            ));
        }
        Ok(SnapshotHead {
            sha256,
            size,
            event_watermark,
        })
    }
}

/// Refuses bytes past the header's `size` as soon as they are decoded.
fn check_not_over(decoded: u64, size: Option<u64>) -> Result<(), ApiError> {
    match size {
        Some(size) if decoded > size => Err(invalid(
            "snapshot.data_base64",
            &format!("decodes to more than the {size} bytes of size"),
        )),
        _ => Ok(()),
    }
}

/// What one move through `data_base64` gave.
enum Base64Step {
    NeedMore,
    Piece(Vec<u8>),
    /// The closing quote, with the last decoded bytes.
    Closed(Vec<u8>),
}

/// Standard padded base64 decoded as it streams: complete groups of four
/// characters are decoded as they come, but the last group is held back
/// until the end, since only it may carry padding.
#[derive(Default)]
pub(super) struct Base64Stream {
    pending: Vec<u8>,
    bytes: Vec<u8>,
    /// Bytes decoded so far.
    pub decoded: u64,
}

/// Characters decoded at a time.
const DECODE_BATCH: usize = 64 * 1024;
/// Decoded bytes handed on at a time, at least.
const PIECE_BYTES: usize = 256 * 1024;

impl Base64Stream {
    pub fn push(&mut self, text: &[u8]) -> Result<(), ApiError> {
        self.pending.extend_from_slice(text);
        if self.pending.len() >= DECODE_BATCH + 4 {
            let ready = (self.pending.len() - 4) / 4 * 4;
            self.decode(ready)?;
        }
        Ok(())
    }

    /// The decoded bytes once there are enough to hand on.
    pub fn ready(&mut self) -> Option<Vec<u8>> {
        (self.bytes.len() >= PIECE_BYTES).then(|| std::mem::take(&mut self.bytes))
    }

    /// The text ended: decodes the rest and hands on every byte not yet
    /// handed on.
    pub fn finish(&mut self) -> Result<Vec<u8>, ApiError> {
        if !self.pending.len().is_multiple_of(4) {
            return Err(not_base64());
        }
        self.decode(self.pending.len())?;
        Ok(std::mem::take(&mut self.bytes))
    }

    fn decode(&mut self, len: usize) -> Result<(), ApiError> {
        let text = self.pending.get(..len).unwrap_or_default();
        let before = self.bytes.len();
        STANDARD
            .decode_vec(text, &mut self.bytes)
            .map_err(|_| not_base64())?;
        self.pending.drain(..len);
        let added = u64::try_from(self.bytes.len() - before).unwrap_or(u64::MAX);
        self.decoded = self.decoded.saturating_add(added);
        Ok(())
    }
}

fn not_base64() -> ApiError {
    invalid(
        "snapshot.data_base64",
        "must be standard base64 with padding",
    )
}
