//! Snapshot housekeeping after the answer: once a snapshot is stored, the
//! chunks nothing names any more are collected on a task of their own, so
//! that a push waits for no deletion (on ext4 mounted with `discard`, each
//! freed chunk file costs about a millisecond).
//!
//! One task per agent at a time: a commit that lands while its agent's
//! task runs asks for one more pass instead of a second task; a task that
//! ends early (a panic, a shutdown) clears its mark. A pass collects the
//! chunks no manifest names whose pending time or grace has passed; the
//! chunks a commit superseded are readable for the grace, so one more pass
//! is due once it ends (one sleeper per agent, moved on by each commit).
//! A whole-file PUT's listing sweep, for chunk files without a row, runs
//! before its answer. Uploads and collections claim each chunk's row
//! first (`chunk_store::claims`), so none of this can take a chunk an
//! upload is writing.

use super::HostObjects;
use stasis_api::{AfterCommit, Snapshots};
use stasis_domain::{chunk_store, ids::AgentKey, snapshot::saga};
use std::{
    collections::HashMap,
    sync::{Mutex, MutexGuard, PoisonError},
    time::Duration,
};
use tokio::time::Instant;

/// Collection steps one pass runs at most (each up to
/// `chunk_store::COLLECT_BATCH` chunks); a later pass takes the rest.
const STEPS_PER_PASS: u32 = 1_000;

/// How long after a grace ends its pass runs: the superseded chunks' last
/// millisecond has passed by then.
const AFTER_GRACE: Duration = Duration::from_secs(1);

/// The agents whose housekeeping task runs, each with whether another
/// pass was asked for meanwhile, and the agents whose grace pass is due.
#[derive(Default)]
pub struct Tidier {
    running: Mutex<HashMap<AgentKey, bool>>,
    due: Mutex<HashMap<AgentKey, Instant>>,
}

impl Tidier {
    /// Moves `key`'s grace pass to `at` (never earlier); whether a sleeper
    /// must start for it.
    fn due_at(&self, key: &AgentKey, at: Instant) -> bool {
        let mut due = self.due.lock().unwrap_or_else(PoisonError::into_inner);
        let fresh = !due.contains_key(key);
        let slot = due.entry(key.clone()).or_insert(at);
        *slot = (*slot).max(at);
        fresh
    }

    /// Whether `key`'s grace pass is due now (then it is taken), else when.
    fn take_due(&self, key: &AgentKey) -> Option<Result<(), Instant>> {
        let mut due = self.due.lock().unwrap_or_else(PoisonError::into_inner);
        let at = *due.get(key)?;
        if at <= Instant::now() {
            due.remove(key);
            Some(Ok(()))
        } else {
            Some(Err(at))
        }
    }

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

/// A running task's mark in the [`Tidier`]: a task that ends early (a
/// panic in a pass, or the runtime shutting down) clears it, so that the
/// agent's next commit starts a task again.
struct TaskMark<'a> {
    tidier: &'a Tidier,
    key: &'a AgentKey,
    /// Set when the task ended through [`Tidier::pass_done`], which
    /// cleared the mark itself (a new task may hold it by now).
    finished: bool,
}

impl<'a> TaskMark<'a> {
    fn new(tidier: &'a Tidier, key: &'a AgentKey) -> Self {
        Self {
            tidier,
            key,
            finished: false,
        }
    }
}

impl Drop for TaskMark<'_> {
    fn drop(&mut self) {
        if !self.finished {
            self.tidier.lock().remove(self.key);
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
            let _ = saga::sweep_orphans(&object, &blobs, &chunk_store::key_prefix(key)).await;
        }
        self.collect_later(key);
        self.collect_after_grace(key);
    }

    /// One more pass once the grace of what this commit superseded ended.
    fn collect_after_grace(&self, key: &AgentKey) {
        let grace = Duration::from_millis(u64::try_from(self.snapshot_grace_ms()).unwrap_or(0));
        if grace.is_zero()
            || !self
                .tidier()
                .due_at(key, Instant::now() + grace + AFTER_GRACE)
        {
            return;
        }
        let objects = self.unfenced();
        let key = key.clone();
        tokio::spawn(async move {
            while let Some(due) = objects.tidier().take_due(&key) {
                match due {
                    Ok(()) => {
                        objects.collect_later(&key);
                        break;
                    }
                    Err(at) => tokio::time::sleep_until(at).await,
                }
            }
        });
    }

    fn collect_later(&self, key: &AgentKey) {
        if !self.tidier().ask(key) {
            return;
        }
        // Housekeeping is no container's write: it never meets a fence.
        let objects = self.unfenced();
        let key = key.clone();
        tokio::spawn(async move {
            let mut task = TaskMark::new(objects.tidier(), &key);
            loop {
                objects.collect_pass(&key).await;
                if !objects.tidier().pass_done(&key) {
                    break;
                }
            }
            task.finished = true;
        });
    }

    /// One pass; a failure leaves garbage for the next, never a name
    /// without its chunk.
    async fn collect_pass(&self, key: &AgentKey) {
        if let Ok(blobs) = self.snapshot_blobs() {
            let (object, prefix) = (self.snapshot_object(key), chunk_store::key_prefix(key));
            let stale_before = self.snapshot_claims_stale_before();
            let _ = chunk_store::saga::collect_all(
                &object,
                &blobs,
                &prefix,
                stale_before,
                STEPS_PER_PASS,
            )
            .await;
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::expect_used, reason = "tests fail loudly")]

    use super::*;

    fn key() -> AgentKey {
        AgentKey::new("t", "r", "a").expect("key")
    }

    #[test]
    fn a_commit_during_a_task_asks_it_for_one_more_pass() {
        let (tidier, key) = (Tidier::default(), key());
        assert!(tidier.ask(&key), "the first commit starts a task");
        assert!(!tidier.ask(&key), "a second joins the running task");
        assert!(tidier.pass_done(&key), "which makes one more pass");
        assert!(!tidier.pass_done(&key), "and then ends");
        assert!(tidier.ask(&key), "the next commit starts a task again");
    }

    #[test]
    fn a_task_that_unwinds_clears_its_mark() {
        let (tidier, key) = (Tidier::default(), key());
        assert!(tidier.ask(&key));
        let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _task = TaskMark::new(&tidier, &key);
            panic!("a pass failed");
        }));
        assert!(unwound.is_err());
        assert!(tidier.ask(&key), "the next commit starts a task again");
    }

    #[test]
    fn a_finished_task_leaves_the_next_task_its_mark() {
        let (tidier, key) = (Tidier::default(), key());
        assert!(tidier.ask(&key));
        let mut task = TaskMark::new(&tidier, &key);
        assert!(!tidier.pass_done(&key));
        assert!(
            tidier.ask(&key),
            "a new task starts before the old one is dropped"
        );
        task.finished = true;
        drop(task);
        assert!(!tidier.ask(&key), "the new task's mark stays");
    }
}
