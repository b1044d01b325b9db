//! Snapshot bytes: a kilo.db's bytes with their sha256, and pseudo-random
//! kilo.db contents.

use crate::snapshot::sha256_hex;

/// A kilo.db's bytes and their sha256, hashed once: hashing 20 MB takes
/// seconds in a debug build.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kilo {
    /// The file's bytes.
    pub bytes: Vec<u8>,
    /// Their SHA-256, 64 lowercase hex digits.
    pub sha256: String,
}

impl Kilo {
    /// `bytes` with their sha256.
    pub fn new(bytes: Vec<u8>) -> Kilo {
        let sha256 = sha256_hex(&bytes);
        Kilo { bytes, sha256 }
    }

    /// A pseudo-random kilo.db of `len` bytes (see [`kilo_db`]).
    pub fn random(len: usize, seed: u64) -> Kilo {
        Kilo::new(kilo_db(len, seed))
    }
}

/// `len` bytes that look like a kilo.db: SQLite's header, then
/// pseudo-random bytes drawn from `seed` (xorshift64*), so no two seeds
/// share a page and nothing compresses.
pub fn kilo_db(len: usize, seed: u64) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut bytes = Vec::with_capacity(len + 8);
    bytes.extend_from_slice(b"SQLite format 3\0");
    while bytes.len() < len {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        bytes.extend_from_slice(&state.wrapping_mul(0x2545_F491_4F6C_DD1D).to_le_bytes());
    }
    bytes.truncate(len);
    bytes
}

#[cfg(test)]
mod tests {
    use super::kilo_db;

    #[test]
    fn kilo_db_is_deterministic_per_seed() {
        assert_eq!(kilo_db(1000, 7), kilo_db(1000, 7));
        assert_ne!(kilo_db(1000, 7), kilo_db(1000, 8));
        assert_eq!(kilo_db(3, 7).len(), 3);
        assert!(kilo_db(100, 1).starts_with(b"SQLite format 3\0"));
    }
}
