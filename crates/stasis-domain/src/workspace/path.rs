//! An entry's path: raw bytes (Linux file names need not be UTF-8), relative
//! to the workspace folder, `/`-separated, and how it travels in JSON.
//!
//! In JSON a name that is valid UTF-8 is a plain string (`"path"`,
//! `"target"`); any other name is standard base64 of its bytes in a field of
//! the same name with `_b64` appended (`"path_b64"`, `"target_b64"`). Exactly
//! one of the two is present.

use super::{MAX_NAME_BYTES, MAX_PATH_BYTES};
use base64::{Engine as _, engine::general_purpose::STANDARD};

/// A relative path inside the workspace, e.g. `src/main.rs`. Ordered by its
/// bytes, which is the manifest's order (a folder sorts before what it holds).
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EntryPath(Vec<u8>);

impl EntryPath {
    /// A path from its bytes, unchecked (see [`EntryPath::problem`]).
    pub fn new(bytes: impl Into<Vec<u8>>) -> Self {
        Self(bytes.into())
    }

    /// The bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// The folder that holds this entry; `None` at the workspace's top.
    pub fn parent(&self) -> Option<&[u8]> {
        let slash = self.0.iter().rposition(|&b| b == b'/')?;
        Some(&self.0[..slash])
    }

    /// What makes this path unusable, if anything: empty, absolute, an empty,
    /// `.` or `..` component, a NUL byte, or too long.
    pub fn problem(&self) -> Option<String> {
        if self.0.is_empty() {
            return Some("a path is empty".into());
        }
        if self.0.len() > MAX_PATH_BYTES {
            return Some(format!("a path is longer than {MAX_PATH_BYTES} bytes"));
        }
        if self.0.contains(&0) {
            return Some(format!("{self} holds a NUL byte"));
        }
        for name in self.0.split(|&b| b == b'/') {
            match name {
                b"" => return Some(format!("{self} is absolute or has an empty component")),
                b"." | b".." => return Some(format!("{self} has a . or .. component")),
                _ if name.len() > MAX_NAME_BYTES => {
                    return Some(format!("{self} has a name over {MAX_NAME_BYTES} bytes"));
                }
                _ => {}
            }
        }
        None
    }
}

impl std::fmt::Display for EntryPath {
    /// The path, lossily as UTF-8 and quoted, for messages.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", String::from_utf8_lossy(&self.0))
    }
}

impl std::fmt::Debug for EntryPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "EntryPath({self})")
    }
}

/// Bytes as their JSON pair: `(text, None)` for UTF-8, `(None, base64)` else.
pub(super) fn to_wire(bytes: &[u8]) -> (Option<String>, Option<String>) {
    match std::str::from_utf8(bytes) {
        Ok(text) => (Some(text.to_owned()), None),
        Err(_) => (None, Some(STANDARD.encode(bytes))),
    }
}

/// The bytes a JSON pair spells; `field` names it in errors.
pub(super) fn from_wire(
    field: &str,
    text: Option<String>,
    base64: Option<String>,
) -> Result<Vec<u8>, String> {
    match (text, base64) {
        (Some(text), None) => Ok(text.into_bytes()),
        (None, Some(encoded)) => STANDARD
            .decode(encoded)
            .map_err(|err| format!("{field}_b64 is not base64: {err}")),
        (Some(_), Some(_)) => Err(format!("both {field} and {field}_b64 are given")),
        (None, None) => Err(format!("{field} (or {field}_b64) is missing")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problem(path: &[u8]) -> Option<String> {
        EntryPath::new(path).problem()
    }

    #[test]
    fn a_path_is_relative_with_plain_components() {
        assert_eq!(problem(b"src/main.rs"), None);
        assert_eq!(problem(b".git/HEAD"), None);
        assert_eq!(problem(b"caf\xe9"), None);
        for bad in [
            &b""[..],
            b"/etc",
            b"a//b",
            b"a/",
            b"a/../b",
            b"./a",
            b"..",
            b"a\0b",
        ] {
            assert!(problem(bad).is_some(), "{:?} should be refused", bad);
        }
        assert!(problem(&[b'a'; 256]).is_some());
        assert!(problem(&[b'a'; 255]).is_none());
    }

    #[test]
    fn the_parent_is_everything_before_the_last_slash() {
        assert_eq!(
            EntryPath::new(b"a/b/c".to_vec()).parent(),
            Some(&b"a/b"[..])
        );
        assert_eq!(EntryPath::new(b"top".to_vec()).parent(), None);
    }

    #[test]
    fn names_travel_as_text_or_as_base64() {
        assert_eq!(to_wire(b"a.txt"), (Some("a.txt".into()), None));
        let (text, encoded) = to_wire(b"caf\xe9");
        assert_eq!(text, None);
        assert_eq!(from_wire("path", None, encoded), Ok(b"caf\xe9".to_vec()));
        assert!(from_wire("path", None, None).is_err());
        assert!(from_wire("path", Some("a".into()), Some("YQ==".into())).is_err());
        assert!(from_wire("path", None, Some("%%".into())).is_err());
    }
}
