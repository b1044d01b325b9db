//! The manifest's `snapshot` object, read as it arrives: its small fields
//! as values, its `data_base64` decoded as it streams (the text is never
//! held whole). The decoded bytes are collected up to the snapshot limit,
//! and handed over with the header once the object closes.
//!
//! This is the one place that knows how a manifest carries a snapshot's
//! bytes; storing them is the runtime's snapshot saga.

use super::input::{Input, invalid};
use crate::error::ApiError;
use base64::{Engine as _, engine::general_purpose::STANDARD};
use stasis_domain::agent_state::{MAX_MANIFEST_SNAPSHOT_BYTES, check_snapshot_header};

/// A snapshot as the manifest gave it, its bytes decoded (not yet checked
/// against its sha256: storing them does that).
#[derive(Debug)]
pub(super) struct SnapshotBody {
    /// Lowercase hex sha256, as given.
    pub sha256: String,
    /// The last seq the snapshot reflects.
    pub event_watermark: u64,
    /// The bytes, as many as `size` said.
    pub bytes: Vec<u8>,
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

    /// Reads on; `Some` once the object has closed, `None` when more bytes
    /// are needed.
    pub fn step(&mut self, input: &mut Input) -> Result<Option<SnapshotBody>, ApiError> {
        loop {
            if input.waiting() {
                return Ok(None);
            }
            match self.state {
                State::Key { first } => match input.peek()? {
                    None => return Ok(None),
                    Some(b'}') if first => {
                        input.advance(1);
                        return self.finish().map(Some);
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
                }
                State::Base64 => {
                    if !self.base64(input)? {
                        return Ok(None);
                    }
                    self.state = State::AfterValue;
                }
                State::AfterValue => match input.peek()? {
                    None => return Ok(None),
                    Some(b',') => {
                        input.advance(1);
                        self.state = State::Key { first: false };
                    }
                    Some(b'}') => {
                        input.advance(1);
                        return self.finish().map(Some);
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
    /// closing quote; `false` when more bytes are needed.
    fn base64(&mut self, input: &mut Input) -> Result<bool, ApiError> {
        let Some(data) = self.data.as_mut() else {
            return Err(invalid("snapshot.data_base64", "lost its decoder"));
        };
        loop {
            let rest = input.rest();
            let plain = rest
                .iter()
                .take_while(|&&b| b != b'"' && b != b'\\')
                .count();
            data.push(rest.get(..plain).unwrap_or_default())?;
            input.advance(plain);
            match input.rest() {
                [] if input.eof => return Err(input.cut()),
                [] | [b'\\'] => return Ok(false),
                [b'"', ..] => {
                    input.advance(1);
                    return Ok(true);
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

    fn finish(&mut self) -> Result<SnapshotBody, ApiError> {
        let missing = |name: &str| invalid("snapshot", &format!("missing field `{name}`"));
        let sha256 = self.sha256.take().ok_or_else(|| missing("sha256"))?;
        let size = self.size.ok_or_else(|| missing("size"))?;
        let event_watermark = self
            .event_watermark
            .ok_or_else(|| missing("event_watermark"))?;
        let data = self.data.take().ok_or_else(|| missing("data_base64"))?;
        check_snapshot_header(&sha256, size, event_watermark)?;
        let bytes = data.finish()?;
        let decoded = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
        if decoded != size {
            return Err(invalid(
                "snapshot.data_base64",
                &format!("decodes to {decoded} bytes, not the {size} of size"),
            ));
        }
        Ok(SnapshotBody {
            sha256,
            event_watermark,
            bytes,
        })
    }
}

/// Standard padded base64 decoded as it streams: complete groups of four
/// characters are decoded as they come, but the last group is held back
/// until the end, since only it may carry padding.
#[derive(Default)]
struct Base64Stream {
    pending: Vec<u8>,
    decoded: Vec<u8>,
}

/// Characters decoded at a time.
const DECODE_BATCH: usize = 64 * 1024;

impl Base64Stream {
    fn push(&mut self, text: &[u8]) -> Result<(), ApiError> {
        self.pending.extend_from_slice(text);
        if self.pending.len() >= DECODE_BATCH + 4 {
            let ready = (self.pending.len() - 4) / 4 * 4;
            self.decode(ready)?;
        }
        Ok(())
    }

    fn finish(mut self) -> Result<Vec<u8>, ApiError> {
        if !self.pending.len().is_multiple_of(4) {
            return Err(not_base64());
        }
        self.decode(self.pending.len())?;
        Ok(self.decoded)
    }

    fn decode(&mut self, len: usize) -> Result<(), ApiError> {
        let text = self.pending.get(..len).unwrap_or_default();
        STANDARD
            .decode_vec(text, &mut self.decoded)
            .map_err(|_| not_base64())?;
        self.pending.drain(..len);
        let limit = usize::try_from(MAX_MANIFEST_SNAPSHOT_BYTES).unwrap_or(usize::MAX);
        if self.decoded.len() > limit {
            return Err(invalid(
                "snapshot.data_base64",
                &format!("decodes to more than {MAX_MANIFEST_SNAPSHOT_BYTES} bytes"),
            ));
        }
        Ok(())
    }
}

fn not_base64() -> ApiError {
    invalid(
        "snapshot.data_base64",
        "must be standard base64 with padding",
    )
}
