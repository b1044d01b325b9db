//! Snapshot housekeeping after the answer: once a snapshot is stored, the
//! chunks nothing names any more are collected on a task of their own, so
//! that a push waits for no deletion (on ext4 mounted with `discard`, each
//! freed chunk file costs about a millisecond).
//!
//! One task per agent at a time: a commit that lands while its agent's
//! task runs asks for one more pass instead of a second task. A pass only
//! collects rows (chunks no manifest names whose pending time has passed),
//! which no upload in flight can lose; the listing sweep for chunk files
//! without a row stays before a whole-file PUT's answer
//! (`saga::sweep_orphans` says why).

use super::HostObjects;
use stasis_api::{AfterCommit, Snapshots};
use stasis_domain::{
    ids::AgentKey,
    snapshot::{self, chunk_saga, saga},
};
use std::{
    collections::HashMap,
    sync::{Mutex, MutexGuard, PoisonError},
};

/// Collection steps one pass runs at most (each up to
/// `snapshot::COLLECT_BATCH` chunks); a later pass takes the rest.
const STEPS_PER_PASS: u32 = 1_000;

/// The agents whose housekeeping task runs, each with whether another
/// pass was asked for meanwhile.
#[derive(Default)]
pub struct Tidier {
    running: Mutex<HashMap<AgentKey, bool>>,
}

impl Tidier {
    fn lock(&self) -> MutexGuard<'_, HashMap<AgentKey, bool>> {
        self.running.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether a new task must start for `key` (else the running one will
    /// make one more pass).
    fn ask(&self, key: &AgentKey) -> bool {
        let mut running = self.lock();
        match running.get_mut(key) {
            Some(again) => {
                *again = true;
                false
            }
            None => {
                running.insert(key.clone(), false);
                true
            }
        }
    }

    /// Ends a pass: whether another was asked for meanwhile (the task then
    /// goes on), else the task is done.
    fn pass_done(&self, key: &AgentKey) -> bool {
        let mut running = self.lock();
        match running.get_mut(key) {
            Some(again) if *again => {
                *again = false;
                true
            }
            _ => {
                running.remove(key);
                false
            }
        }
    }
}

impl HostObjects {
    /// What follows a stored snapshot: a whole-file PUT's listing sweep
    /// now, then the collection after the answer.
    pub(super) async fn tidy(&self, key: &AgentKey, after: AfterCommit) {
        if after == AfterCommit::Sweep
            && let Ok(blobs) = self.snapshot_blobs()
        {
            let object = self.snapshot_object(key);
            let _ = saga::sweep_orphans(&object, &blobs, &snapshot::key_prefix(key)).await;
        }
        self.collect_later(key);
    }

    fn collect_later(&self, key: &AgentKey) {
        if !self.tidier().ask(key) {
            return;
        }
        // Housekeeping is no container's write: it never meets a fence.
        let objects = self.unfenced();
        let key = key.clone();
        tokio::spawn(async move {
            loop {
                objects.collect_pass(&key).await;
                if !objects.tidier().pass_done(&key) {
                    break;
                }
            }
        });
    }

    /// One pass; a failure leaves garbage for the next, never a name
    /// without its chunk.
    async fn collect_pass(&self, key: &AgentKey) {
        if let Ok(blobs) = self.snapshot_blobs() {
            let (object, prefix) = (self.snapshot_object(key), snapshot::key_prefix(key));
            let _ = chunk_saga::collect_all(&object, &blobs, &prefix, STEPS_PER_PASS).await;
        }
    }
}
