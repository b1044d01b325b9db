//! The `Idempotency-Key` request header: a client that may retry a
//! non-idempotent request (a heartbeat that releases dispatches, a Mayor
//! message) sends the same key with every attempt, and the retry then has
//! the first attempt's effect only.

use crate::error::ApiError;
use http::HeaderMap;

/// The header's name.
pub const HEADER: &str = "idempotency-key";
/// The longest key accepted, in bytes.
pub const MAX_KEY_BYTES: usize = 255;

/// The request's key, if it sent one: 1 to [`MAX_KEY_BYTES`] visible ASCII
/// characters, optionally in double quotes (the IETF draft's structured
/// string form), which are not part of the key.
pub fn key(headers: &HeaderMap) -> Result<Option<String>, ApiError> {
    let Some(value) = headers.get(HEADER) else {
        return Ok(None);
    };
    let text = value.to_str().unwrap_or_default().trim();
    let unquoted = text
        .strip_prefix('"')
        .and_then(|t| t.strip_suffix('"'))
        .unwrap_or(text);
    let fits = (1..=MAX_KEY_BYTES).contains(&unquoted.len())
        && unquoted.bytes().all(|b| b.is_ascii_graphic());
    if fits {
        Ok(Some(unquoted.to_owned()))
    } else {
        Err(ApiError::invalid_request(format!(
            "Idempotency-Key must be 1 to {MAX_KEY_BYTES} visible ASCII characters"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key_of(value: &str) -> Result<Option<String>, String> {
        let mut headers = HeaderMap::new();
        headers.insert(HEADER, value.parse().map_err(|_| "header".to_owned())?);
        key(&headers).map_err(|e| e.code)
    }

    #[test]
    fn keys_are_read_plain_or_quoted() {
        assert_eq!(key(&HeaderMap::new()).map_err(|e| e.code), Ok(None));
        assert_eq!(key_of("boot-1"), Ok(Some("boot-1".into())));
        assert_eq!(key_of("\"boot-1\""), Ok(Some("boot-1".into())));
    }

    #[test]
    fn empty_long_or_spaced_keys_are_refused() {
        for bad in ["", "\"\"", "a b", &"k".repeat(MAX_KEY_BYTES + 1)] {
            assert_eq!(key_of(bad), Err("invalid_request".into()), "{bad:?}");
        }
    }
}
