//! Which objects are open: a least-recently-used map under a cap, so that
//! any number of agents and towns can be served with bounded file
//! descriptors and memory.
//!
//! An object is closed by dropping its last `Arc`: that closes its SQLite
//! connection (its `-wal` and `-shm` too) and frees its queue. Only objects
//! nobody else holds are closed: a call in flight, a worker draining the
//! queue and a live tail waiting on `last_seq` each hold one, so queued
//! calls, group commit and tails never see their object go. The next call
//! opens a fresh one from the same file. Busy objects may therefore push
//! the count past the cap for as long as they stay busy.

use super::object::Object;
use crate::config::ObjectLimits;
use lru::LruCache;
use stasis_domain::ids::AgentKey;
use std::{
    sync::{Arc, Mutex, PoisonError},
    time::{Duration, Instant},
};

/// An object's identity.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ObjectKey {
    /// An agent's object.
    Agent(AgentKey),
    /// A town's object.
    Town(String),
}

struct Entry {
    object: Arc<Object>,
    last_used: Instant,
}

/// The open objects, most recently used first.
pub struct OpenObjects {
    entries: Mutex<LruCache<ObjectKey, Entry>>,
    limits: ObjectLimits,
}

impl OpenObjects {
    /// An empty map that keeps at most `limits.max_open` idle objects.
    pub fn new(limits: ObjectLimits) -> Self {
        Self {
            entries: Mutex::new(LruCache::unbounded()),
            limits,
        }
    }

    /// The object under `key`, opened with `open` if it is not; marks it
    /// used, and closes the least recently used idle objects past the cap.
    pub fn get(&self, key: &ObjectKey, open: impl FnOnce() -> Object) -> Arc<Object> {
        let now = Instant::now();
        let (object, closing) = {
            let mut entries = self.lock();
            let object = match entries.get_mut(key) {
                Some(entry) => {
                    entry.last_used = now;
                    Arc::clone(&entry.object)
                }
                None => {
                    let object = Arc::new(open());
                    let entry = Entry {
                        object: Arc::clone(&object),
                        last_used: now,
                    };
                    entries.push(key.clone(), entry);
                    object
                }
            };
            let excess = entries.len().saturating_sub(self.limits.max_open);
            (object, take_idle(&mut entries, excess, |_| true))
        };
        close(closing);
        object
    }

    /// Closes a quarter of the idle objects (at least one), least recently
    /// used first, on this thread: descriptors ran out. Returns how many.
    pub fn relieve(&self) -> usize {
        let closing = {
            let mut entries = self.lock();
            let count = (entries.len() / 4).max(1);
            take_idle(&mut entries, count, |_| true)
        };
        let closed = closing.len();
        drop(closing);
        closed
    }

    /// Closes every idle object unused for the configured idle timeout;
    /// returns how many.
    pub fn close_unused(&self) -> usize {
        let Some(cutoff) = Instant::now().checked_sub(self.limits.idle_timeout) else {
            return 0;
        };
        let closing = {
            let mut entries = self.lock();
            let len = entries.len();
            take_idle(&mut entries, len, |entry| entry.last_used <= cutoff)
        };
        let closed = closing.len();
        close(closing);
        closed
    }

    /// How often [`OpenObjects::close_unused`] should run: often enough that
    /// an object outlives its idle timeout by at most half of it.
    pub fn sweep_interval(&self) -> Duration {
        (self.limits.idle_timeout / 2).clamp(Duration::from_millis(50), Duration::from_secs(30))
    }

    /// How many objects are open.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether no object is open.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, LruCache<ObjectKey, Entry>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Removes up to `count` objects that nobody holds and that `eligible`
/// accepts, least recently used first. Recency and `last_used` grow
/// together, so the scan for unused objects stops at the first recent one.
fn take_idle(
    entries: &mut LruCache<ObjectKey, Entry>,
    count: usize,
    eligible: impl Fn(&Entry) -> bool,
) -> Vec<Arc<Object>> {
    if count == 0 {
        return Vec::new();
    }
    let keys: Vec<ObjectKey> = entries
        .iter()
        .rev()
        .take_while(|(_, entry)| eligible(entry))
        // Under the lock nobody can take a new handle, so a count of one
        // (the map's own) means no call, worker or tail holds it.
        .filter(|(_, entry)| Arc::strong_count(&entry.object) == 1)
        .take(count)
        .map(|(key, _)| key.clone())
        .collect();
    keys.iter()
        .filter_map(|key| entries.pop(key))
        .map(|entry| entry.object)
        .collect()
}

/// Drops the objects off the async threads: closing a database checkpoints
/// its WAL, which writes and may fsync.
fn close(objects: Vec<Arc<Object>>) {
    if objects.is_empty() {
        return;
    }
    match tokio::runtime::Handle::try_current() {
        Ok(runtime) => drop(runtime.spawn_blocking(move || drop(objects))),
        Err(_) => drop(objects),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::object::ObjectKind;
    use stasis_sqlite::Durability;

    fn limits(max_open: usize, idle_ms: u64) -> ObjectLimits {
        ObjectLimits {
            max_open,
            idle_timeout: Duration::from_millis(idle_ms),
        }
    }

    fn key(n: usize) -> ObjectKey {
        ObjectKey::Town(format!("t{n}"))
    }

    fn object() -> Object {
        Object::new(
            ObjectKind::Town,
            "/nonexistent/t.sqlite".into(),
            Durability::Os,
            Arc::default(),
        )
    }

    #[test]
    fn the_least_recently_used_idle_object_goes_past_the_cap() {
        let open = OpenObjects::new(limits(2, 60_000));
        drop(open.get(&key(1), object));
        drop(open.get(&key(2), object));
        drop(open.get(&key(1), object));
        drop(open.get(&key(3), object));
        let keys: Vec<ObjectKey> = open.lock().iter().map(|(k, _)| k.clone()).collect();
        assert_eq!(keys, vec![key(3), key(1)]);
    }

    #[test]
    fn a_held_object_stays_open_past_the_cap() {
        let open = OpenObjects::new(limits(1, 60_000));
        let held = open.get(&key(1), object);
        drop(open.get(&key(2), object));
        assert_eq!(
            open.len(),
            2,
            "the held object is not closed, the new one is kept"
        );
        drop(open.get(&key(3), object));
        let again = open.get(&key(1), object);
        assert!(
            Arc::ptr_eq(&held, &again),
            "the held object was never reopened"
        );
    }

    #[test]
    fn unused_objects_close_after_the_idle_timeout() {
        let open = OpenObjects::new(limits(10, 30));
        drop(open.get(&key(1), object));
        let held = open.get(&key(2), object);
        assert_eq!(open.close_unused(), 0);
        std::thread::sleep(Duration::from_millis(60));
        drop(open.get(&key(3), object));
        assert_eq!(open.close_unused(), 1, "only the unused, unheld one closes");
        assert_eq!(open.len(), 2);
        drop(held);
    }
}
