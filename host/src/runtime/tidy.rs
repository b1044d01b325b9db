//! Snapshot housekeeping after the answer: once a snapshot is stored, the
//! chunks nothing names any more are collected on a task of their own, so
//! that a push waits for no deletion (on ext4 mounted with `discard`, each
//! freed chunk file costs about a millisecond).
//!
//! One task per agent at a time: a commit that lands while its agent's
//! task runs asks for one more pass instead of a second task. The listing
//! sweep, which looks for chunk files without a row, runs with an agent's
//! first pass after the host starts: here such a file can only be left by
//! a write the host did not finish (a crash or an I/O error), and a sweep
//! that ran beside a push could take a chunk the push has renamed into
//! place but not yet recorded (the push would then be refused with 503
//! `chunk_being_collected` and retried). Every other pass only collects
//! rows, which no upload in flight can lose.

use super::HostObjects;
use stasis_api::Snapshots;
use stasis_domain::{
    ids::AgentKey,
    snapshot::{self, chunk_saga, saga},
};
use std::{
    collections::{HashMap, HashSet},
    sync::{Mutex, MutexGuard, PoisonError},
};

/// Collection steps one pass runs at most (each up to
/// `snapshot::COLLECT_BATCH` chunks); a later pass takes the rest.
const STEPS_PER_PASS: u32 = 1_000;

/// Which agents have a housekeeping task, and which were swept.
#[derive(Default)]
pub struct Tidier {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Agents whose task runs, each with whether another pass was asked for.
    running: HashMap<AgentKey, bool>,
    /// Agents swept since the host started.
    swept: HashSet<AgentKey>,
}

impl Tidier {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether a new task must start for `key` (else the running one will
    /// make one more pass).
    fn ask(&self, key: &AgentKey) -> bool {
        let mut state = self.lock();
        match state.running.get_mut(key) {
            Some(again) => {
                *again = true;
                false
            }
            None => {
                state.running.insert(key.clone(), false);
                true
            }
        }
    }

    /// Whether this pass must also sweep: the agent's first since start.
    fn first_pass(&self, key: &AgentKey) -> bool {
        self.lock().swept.insert(key.clone())
    }

    /// Ends a pass: whether another was asked for meanwhile (the task then
    /// goes on), else the task is done.
    fn pass_done(&self, key: &AgentKey) -> bool {
        let mut state = self.lock();
        match state.running.get_mut(key) {
            Some(again) if *again => {
                *again = false;
                true
            }
            _ => {
                state.running.remove(key);
                false
            }
        }
    }
}

impl HostObjects {
    /// Collects what the agent's last commit superseded, after the answer.
    pub(super) fn tidy_later(&self, key: &AgentKey) {
        if !self.tidier().ask(key) {
            return;
        }
        // Housekeeping is no container's write: it never meets a fence.
        let objects = self.unfenced();
        let key = key.clone();
        tokio::spawn(async move {
            loop {
                objects.tidy_pass(&key).await;
                if !objects.tidier().pass_done(&key) {
                    break;
                }
            }
        });
    }

    /// One pass; a failure leaves garbage for the next, never a name
    /// without its chunk.
    async fn tidy_pass(&self, key: &AgentKey) {
        let Ok(blobs) = self.snapshot_blobs() else {
            return;
        };
        let (object, prefix) = (self.snapshot_object(key), snapshot::key_prefix(key));
        if self.tidier().first_pass(key) {
            let _ = saga::sweep(&object, &blobs, &prefix).await;
        } else {
            let _ = chunk_saga::collect_all(&object, &blobs, &prefix, STEPS_PER_PASS).await;
        }
    }
}
