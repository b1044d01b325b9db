//! The chunk store's content hash (sha256: a chunk's name, a whole file's
//! check), and the codes of bytes that fail it.

use sha2::{Digest, Sha256};

/// How a storage error about bytes that fail their sha256 begins; the API
/// answers it with the code of the same name.
pub const CORRUPT: &str = "snapshot_corrupt";

/// The code of a body that does not hash to the sha256 its sender gave.
pub const SHA256_MISMATCH: &str = "sha256_mismatch";

/// A raw sha256, as chunk names are stored in SQL.
pub type ChunkHash = [u8; 32];

/// Lowercase hex sha256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    to_hex(&Sha256::digest(bytes).into())
}

/// Lowercase hex of a raw sha256.
pub fn to_hex(hash: &ChunkHash) -> String {
    let mut out = String::with_capacity(64);
    for &byte in hash {
        out.push(char::from(HEX[usize::from(byte >> 4)]));
        out.push(char::from(HEX[usize::from(byte & 0x0f)]));
    }
    out
}

/// Lowercase hex of each raw sha256.
pub fn to_hex_all(hashes: &[ChunkHash]) -> Vec<String> {
    hashes.iter().map(to_hex).collect()
}

/// The raw sha256 that 64 hex digits (either case) spell.
pub fn from_hex(text: &str) -> Option<ChunkHash> {
    // The hex crate's table decode: a commit parses every chunk name of a
    // tree (20,000 of them for a mid-sized one), several times over.
    let mut out = [0u8; 32];
    hex::decode_to_slice(text, &mut out).ok()?;
    Some(out)
}

/// A whole file's sha256, fed as its bytes pass.
#[derive(Default, Clone)]
pub struct RunningHash(Sha256);

impl RunningHash {
    /// Adds `bytes`.
    pub fn update(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    /// Lowercase hex of everything fed.
    pub fn finish_hex(self) -> String {
        to_hex(&self.0.finalize().into())
    }
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// True for 64 hex digits (either case).
pub fn is_sha256_hex(text: &str) -> bool {
    text.len() == 64 && text.bytes().all(|b| b.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_the_empty_input() {
        assert_eq!(
            sha256_hex(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert!(is_sha256_hex(&sha256_hex(b"x")));
        assert!(!is_sha256_hex("abc"));
    }

    #[test]
    fn hex_and_raw_round_trip_and_a_running_hash_matches_the_whole() {
        let hex = sha256_hex(b"hello world");
        let raw = from_hex(&hex).expect("valid hex");
        assert_eq!(to_hex(&raw), hex);
        assert_eq!(from_hex(&hex.to_ascii_uppercase()), Some(raw));
        assert_eq!(from_hex("zz"), None);
        let mut running = RunningHash::default();
        running.update(b"hello ");
        running.update(b"world");
        assert_eq!(running.finish_hex(), hex);
    }
}
