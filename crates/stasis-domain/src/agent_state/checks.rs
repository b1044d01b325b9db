//! Rules shared by the direct calls and by import. Each check says what is
//! wrong; the caller picks the error: a direct call answers 400 or 413, an
//! import answers `invalid_manifest` naming the field's path.

use crate::DomainError;

/// What is wrong with one value.
#[derive(Debug)]
pub(super) enum Breach {
    /// The value breaks a rule; the text says how (without the field name).
    Invalid(String),
    /// The value is larger than `limit` bytes.
    TooLarge { message: String, limit: u64 },
}

impl Breach {
    /// The answer to a direct call: `invalid_request`, or 413 with
    /// `too_large_code`.
    pub(super) fn for_call(self, field: &str, too_large_code: &str) -> DomainError {
        match self {
            Self::Invalid(why) => DomainError::invalid("invalid_request", format!("{field} {why}")),
            Self::TooLarge { message, limit } => {
                DomainError::too_large(too_large_code, format!("{field} {message}"), limit)
            }
        }
    }

    /// The refusal of an import: every problem is `invalid_manifest`, so the
    /// caller learns the manifest is at fault, with the path of the field.
    pub(super) fn for_manifest(self, path: &str) -> DomainError {
        let why = match self {
            Self::Invalid(why) | Self::TooLarge { message: why, .. } => why,
        };
        manifest_error(path, &why)
    }
}

/// An `invalid_manifest` refusal: `<path>: <why>`.
pub(super) fn manifest_error(path: &str, why: &str) -> DomainError {
    DomainError::invalid("invalid_manifest", format!("{path}: {why}"))
}

/// The length of a text in bytes, as the limits count it.
pub(super) fn byte_len(text: &str) -> u64 {
    u64::try_from(text.len()).unwrap_or(u64::MAX)
}

/// A JSON document of at most `limit` bytes. Size first: it is cheaper, and
/// an oversized body is refused as such even when it is also malformed.
pub(super) fn json_text(text: &str, limit: u64) -> Result<(), Breach> {
    let size = byte_len(text);
    if size > limit {
        return Err(Breach::TooLarge {
            message: format!("is {size} bytes; at most {limit} are allowed"),
            limit,
        });
    }
    serde_json::from_str::<serde::de::IgnoredAny>(text)
        .map_err(|err| Breach::Invalid(format!("is not valid JSON text ({err})")))?;
    crate::json_limits::check(text).map_err(|breach| Breach::Invalid(breach.describe()))
}

/// A role: 1 to `max` bytes.
pub(super) fn role(role: &str, max: usize) -> Result<(), Breach> {
    if role.is_empty() || role.len() > max {
        return Err(Breach::Invalid(format!(
            "must be 1 to {max} bytes, got {}",
            role.len()
        )));
    }
    Ok(())
}

/// One of `allowed`.
pub(super) fn one_of(value: &str, allowed: &[&str]) -> Result<(), Breach> {
    if allowed.contains(&value) {
        return Ok(());
    }
    Err(Breach::Invalid(format!(
        "must be one of {}, got {:?}",
        allowed.join(", "),
        value.chars().take(64).collect::<String>()
    )))
}

/// An id per the contract, for import (direct calls use `ids::check_id`,
/// which answers `invalid_id`).
pub(super) fn id(value: &str) -> Result<(), Breach> {
    if crate::ids::is_valid_id(value) {
        return Ok(());
    }
    Err(Breach::Invalid(format!(
        "must match [A-Za-z0-9_.:-]{{1,{}}} and not be '.' or '..'",
        crate::ids::MAX_ID_LEN
    )))
}

/// A count or seq that SQLite's signed integers hold exactly.
pub(super) fn storable(value: u64) -> Result<(), Breach> {
    if i64::try_from(value).is_ok() {
        return Ok(());
    }
    Err(Breach::Invalid(format!("{value} is above 2^63 - 1")))
}
