//! A sha256 as manifests hold it: 32 raw bytes in memory, lowercase hex in
//! JSON (either case accepted on input).

use crate::chunk_store::{from_hex, to_hex};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use sha2::{Digest, Sha256};
use std::fmt;
use std::str::FromStr;

/// The sha256 of some bytes: a file's, a chunk's, a page's or a tree's.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ContentHash([u8; 32]);

impl ContentHash {
    /// The sha256 of `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        Self(Sha256::digest(bytes).into())
    }

    /// A hash from its raw bytes.
    pub const fn from_raw(raw: [u8; 32]) -> Self {
        Self(raw)
    }

    /// The raw bytes.
    pub fn as_raw(&self) -> &[u8; 32] {
        &self.0
    }

    /// Lowercase hex.
    pub fn to_hex(&self) -> String {
        to_hex(&self.0)
    }
}

impl fmt::Display for ContentHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

impl fmt::Debug for ContentHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ContentHash({})", self.to_hex())
    }
}

/// Text that is not 64 hex digits.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a sha256 is 64 hex digits; got {0:?}")]
pub struct NotAHash(String);

impl FromStr for ContentHash {
    type Err = NotAHash;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        from_hex(text)
            .map(Self)
            .ok_or_else(|| NotAHash(text.chars().take(80).collect()))
    }
}

impl Serialize for ContentHash {
    fn serialize<S: Serializer>(&self, out: S) -> Result<S::Ok, S::Error> {
        out.serialize_str(&self.to_hex())
    }
}

impl<'de> Deserialize<'de> for ContentHash {
    fn deserialize<D: Deserializer<'de>>(input: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(input)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// A sha256 fed as bytes pass (a file read in pieces, a chunk written).
#[derive(Default, Clone)]
pub struct ContentHasher(Sha256);

impl ContentHasher {
    /// Adds `bytes`.
    pub fn update(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    /// The hash of everything fed.
    pub fn finish(self) -> ContentHash {
        ContentHash(self.0.finalize().into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hash_reads_either_case_and_writes_lowercase_hex() {
        let hash = ContentHash::of(b"");
        let hex = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
        assert_eq!(hash.to_hex(), hex);
        assert_eq!(hex.to_ascii_uppercase().parse::<ContentHash>(), Ok(hash));
        assert!("e3b0".parse::<ContentHash>().is_err());
        let json = serde_json::to_string(&hash).expect("encode");
        assert_eq!(json, format!("\"{hex}\""));
        assert_eq!(
            serde_json::from_str::<ContentHash>(&json).expect("decode"),
            hash
        );
    }

    #[test]
    fn a_running_hash_matches_the_whole() {
        let mut running = ContentHasher::default();
        running.update(b"hello ");
        running.update(b"world");
        assert_eq!(running.finish(), ContentHash::of(b"hello world"));
    }
}
