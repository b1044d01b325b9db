//! What the snapshot tests share: KV in memory (the sagas' blob store), an
//! agent's database, a PUT's request and pseudo-random bodies.

#![allow(dead_code, reason = "each test crate uses a part of it")]

use stasis_domain::{
    DomainError,
    agent::{self, ObjectEnv},
    chunk_store::{
        self,
        ports::{BlobStore, LocalObject},
    },
    snapshot::PutRequest,
};
use stasis_sqlite::SqliteStore;
use std::{cell::RefCell, collections::BTreeMap};

/// KV in memory. `hidden` keys are "not propagated yet"; `fail_puts` makes
/// every write fail.
#[derive(Default)]
pub struct MemoryKv {
    pub values: RefCell<BTreeMap<String, Vec<u8>>>,
    pub hidden: RefCell<Vec<String>>,
    pub fail_puts: bool,
}

impl MemoryKv {
    /// The keys under `prefix`.
    pub fn keys_under(&self, prefix: &str) -> Vec<String> {
        let values = self.values.borrow();
        let keys = values.keys().filter(|k| k.starts_with(prefix)).cloned();
        keys.collect()
    }
}

impl BlobStore for MemoryKv {
    async fn put(&self, key: &str, value: &[u8]) -> Result<(), DomainError> {
        if self.fail_puts {
            return Err(DomainError::Storage("disk full".into()));
        }
        let mut values = self.values.borrow_mut();
        // Keys are versions or content addresses: one key, one value.
        if let Some(old) = values.get(key) {
            assert_eq!(old, value, "KV key {key} was written with other bytes");
        }
        values.insert(key.to_owned(), value.to_vec());
        Ok(())
    }
    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, DomainError> {
        if self.hidden.borrow().iter().any(|k| k == key) {
            return Ok(None);
        }
        Ok(self.values.borrow().get(key).cloned())
    }
    async fn delete(&self, key: &str) -> Result<(), DomainError> {
        self.values.borrow_mut().remove(key);
        Ok(())
    }
    async fn list(
        &self,
        prefix: &str,
        _cursor: Option<String>,
    ) -> Result<(Vec<String>, Option<String>), DomainError> {
        Ok((self.keys_under(prefix), None))
    }
    fn propagation_delays_ms(&self) -> &[u64] {
        &[1, 1]
    }
    async fn pause(&self, _ms: u64) {}
}

/// An agent's database in memory, its tables created.
pub fn agent_store() -> SqliteStore {
    let store = SqliteStore::in_memory().expect("sqlite opens");
    agent::migrate(&store).expect("schema applies");
    store
}

/// The agent's object over `store`, at a fixed time.
pub fn agent_object(store: &SqliteStore) -> LocalObject<'_, SqliteStore> {
    LocalObject {
        store,
        env: ObjectEnv {
            now_ms: 1_700_000_000_000,
            max_events: 10_000,
            // Superseded versions go at once: these tests check collection
            // (history has tests of its own).
            retention: stasis_domain::history::RetentionPolicy::KEEP_NONE,
        },
    }
}

/// A PUT under `key_prefix` with no condition, a 1 KiB inline limit, the
/// given snapshot limit, no grace, and every collection claim made before
/// `stale_before` abandoned.
pub fn put_request(key_prefix: &str, limit: u64, stale_before: i64) -> PutRequest {
    PutRequest {
        expected_sha256: None,
        precondition: None,
        event_watermark: None,
        inline_limit: 1024,
        key_prefix: key_prefix.into(),
        limit,
        pending_ttl_ms: chunk_store::PENDING_CHUNK_TTL_MS,
        stale_before,
        grace_ms: 0,
    }
}

/// `len` pseudo-random bytes (xorshift) from `seed`: no two chunks alike.
pub fn noise(len: usize, seed: u8) -> Vec<u8> {
    let mut state = u64::from(seed).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state.to_le_bytes()[0]
        })
        .collect()
}
