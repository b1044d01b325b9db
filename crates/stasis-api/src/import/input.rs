//! The body's bytes as they arrive, and JSON values taken from their front
//! one at a time.
//!
//! serde_json parses every value: a first pass over the buffered bytes
//! finds where the value ends (or that it is cut by the end of what has
//! arrived), a second reads exactly those bytes into the wanted type, with
//! errors that name the path. A value cut short is tried again only once
//! the buffer has doubled, so a large value costs linear time however
//! small the chunks it arrives in; and no value may grow past its cap, so
//! what is buffered stays bounded whatever the manifest's size.

use crate::error::ApiError;
use serde::de::{DeserializeOwned, IgnoredAny};
use stasis_domain::DomainError;

/// Buffered bytes not consumed yet.
#[derive(Default)]
pub(super) struct Input {
    buf: Vec<u8>,
    pos: usize,
    /// Bytes from `pos` the next attempt waits for (0: try now).
    wait_for: usize,
    /// Bytes consumed and dropped before `buf`, for error positions.
    dropped: u64,
    /// The body has ended: what is buffered is all there is.
    pub eof: bool,
}

/// Once this much of the buffer is consumed, it is dropped.
const COMPACT_AT: usize = 1024 * 1024;

impl Input {
    /// Appends arriving bytes.
    pub fn push(&mut self, chunk: &[u8]) {
        if self.pos >= COMPACT_AT && self.pos * 2 >= self.buf.len() {
            self.buf.drain(..self.pos);
            self.dropped += u64::try_from(self.pos).unwrap_or(u64::MAX);
            self.pos = 0;
        }
        self.buf.extend_from_slice(chunk);
    }

    /// Whether the next attempt should wait for more bytes.
    pub fn waiting(&self) -> bool {
        !self.eof && self.rest().len() < self.wait_for
    }

    /// The bytes not consumed yet.
    pub fn rest(&self) -> &[u8] {
        self.buf.get(self.pos..).unwrap_or_default()
    }

    /// Consumes `n` bytes.
    pub fn advance(&mut self, n: usize) {
        self.pos = (self.pos + n).min(self.buf.len());
        self.wait_for = 0;
    }

    /// Skips whitespace and returns the next byte without consuming it;
    /// `None` when more bytes are needed (an error at the body's end).
    pub fn peek(&mut self) -> Result<Option<u8>, ApiError> {
        let skipped = self
            .rest()
            .iter()
            .take_while(|b| matches!(b, b' ' | b'\n' | b'\r' | b'\t'))
            .count();
        self.advance(skipped);
        match self.rest().first() {
            Some(&b) => Ok(Some(b)),
            None if self.eof => Err(self.cut()),
            None => Ok(None),
        }
    }

    /// Consumes `byte` when it comes next; `Ok(false)` when more bytes are
    /// needed; `what` names what was expected in the refusal otherwise.
    pub fn expect(&mut self, byte: u8, what: &str) -> Result<bool, ApiError> {
        match self.peek()? {
            None => Ok(false),
            Some(b) if b == byte => {
                self.advance(1);
                Ok(true)
            }
            Some(_) => Err(self.syntax(&format!("expected {what}"))),
        }
    }

    /// Takes one JSON value of type `T` from the front; `Ok(None)` when it
    /// has not arrived whole yet. `path` names it in refusals; `cap` is the
    /// most bytes its text may take.
    pub fn take<T: DeserializeOwned>(
        &mut self,
        path: &dyn Fn() -> String,
        cap: usize,
    ) -> Result<Option<T>, ApiError> {
        let eof = self.eof;
        let found = {
            let rest = self.rest();
            let mut stream = serde_json::Deserializer::from_slice(rest).into_iter::<IgnoredAny>();
            match stream.next() {
                Some(Ok(_)) if stream.byte_offset() < rest.len() || eof => {
                    Found::End(stream.byte_offset())
                }
                // A number or literal at the very end may still grow.
                Some(Ok(_)) => Found::Partial,
                Some(Err(err)) if err.is_eof() => Found::Partial,
                None => Found::Partial,
                Some(Err(err)) => Found::Malformed(err.to_string()),
            }
        };
        let end = match found {
            Found::End(end) => end,
            Found::Partial if eof => return Err(self.cut()),
            Found::Partial => return self.wait(path, cap),
            Found::Malformed(why) => return Err(self.syntax(&why)),
        };
        let rest = self.rest();
        if end > cap {
            return Err(too_long(&path(), cap));
        }
        let text = rest.get(..end).unwrap_or_default();
        let mut deserializer = serde_json::Deserializer::from_slice(text);
        let value = serde_path_to_error::deserialize(&mut deserializer).map_err(|err| {
            let inner = err.path().to_string();
            let at = match inner.as_str() {
                "." => path(),
                _ if inner.starts_with('[') => format!("{}{inner}", path()),
                _ => format!("{}.{inner}", path()),
            };
            invalid(&at, &err.into_inner().to_string())
        })?;
        self.advance(end);
        Ok(Some(value))
    }

    /// Waits for the buffer to double before trying again; refuses a value
    /// that is already past its cap.
    fn wait<T>(&mut self, path: &dyn Fn() -> String, cap: usize) -> Result<Option<T>, ApiError> {
        let have = self.rest().len();
        if have > cap {
            return Err(too_long(&path(), cap));
        }
        self.wait_for = have.saturating_mul(2).clamp(have + 1, cap + 1);
        Ok(None)
    }

    /// The body ended inside the manifest.
    pub fn cut(&self) -> ApiError {
        invalid_json(format!(
            "the body ends inside the manifest (after {} bytes)",
            self.offset()
        ))
    }

    /// Malformed JSON at the current position.
    pub fn syntax(&self, why: &str) -> ApiError {
        invalid_json(format!(
            "the body is not valid JSON near byte {}: {why}",
            self.offset()
        ))
    }

    fn offset(&self) -> u64 {
        self.dropped + u64::try_from(self.pos).unwrap_or(u64::MAX)
    }
}

/// Where the value at the front ends, as far as the bytes show.
enum Found {
    /// It ends here.
    End(usize),
    /// It is cut by the end of the bytes.
    Partial,
    /// It is not JSON.
    Malformed(String),
}

/// 400 `invalid_json`.
pub(super) fn invalid_json(message: String) -> ApiError {
    ApiError::new(http::StatusCode::BAD_REQUEST, "invalid_json", message)
}

/// 400 `invalid_manifest`: `<path>: <why>`.
pub(super) fn invalid(path: &str, why: &str) -> ApiError {
    ApiError::from(DomainError::invalid(
        "invalid_manifest",
        format!("{path}: {why}"),
    ))
}

fn too_long(path: &str, cap: usize) -> ApiError {
    invalid(
        path,
        &format!("its JSON text is longer than {cap} bytes, more than such a value may hold"),
    )
}
