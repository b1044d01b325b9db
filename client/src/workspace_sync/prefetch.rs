//! Chunks fetched ahead of a restore, in parallel: the restore asks for chunks one at a time in
//! manifest order; workers fetch the distinct chunks in that same order, at most [`WINDOW`]
//! ahead of the restore, so a tree of any size is restored in bounded memory. A chunk named
//! again later is kept for its next use while the kept bytes stay under [`KEEP_BYTES`], else
//! fetched again then.

use std::collections::HashMap;
use std::sync::{Condvar, Mutex, MutexGuard};

use stasis_domain::workspace::{ChunkRef, ContentHash, TreeManifest};

use crate::error::{Error, Result};
use crate::snapshot::parallel::TRANSFERS_IN_FLIGHT;

/// Distinct chunks fetched ahead of the restore, at most (256 KiB each at most: 32 MiB).
pub(crate) const WINDOW: usize = 128;
/// Bytes of chunks kept for a later use, at most.
pub(crate) const KEEP_BYTES: u64 = 64 << 20;

/// Every distinct chunk in order of first use, and how often each is used.
struct Plan {
    order: Vec<ChunkRef>,
    first_use: HashMap<ContentHash, usize>,
}

impl Plan {
    fn of(manifest: &TreeManifest) -> (Self, HashMap<ContentHash, u32>) {
        let mut order = Vec::new();
        let mut first_use = HashMap::new();
        let mut uses: HashMap<ContentHash, u32> = HashMap::new();
        let chunks = manifest
            .entries
            .iter()
            .filter_map(|e| e.as_file())
            .flat_map(|f| f.chunks.iter());
        for chunk in chunks {
            *uses.entry(chunk.sha256).or_default() += 1;
            first_use.entry(chunk.sha256).or_insert_with(|| {
                order.push(*chunk);
                order.len() - 1
            });
        }
        (Plan { order, first_use }, uses)
    }
}

#[derive(Default)]
struct State {
    /// Fetched, not yet used for the first time.
    ready: HashMap<ContentHash, Vec<u8>>,
    /// Used, and used again later.
    kept: HashMap<ContentHash, Vec<u8>>,
    kept_bytes: u64,
    /// The next chunk (in `order`) a worker takes.
    next: usize,
    /// Chunks of `order` the restore has used for the first time.
    consumed: usize,
    failure: Option<Error>,
    done: bool,
}

/// What the restore calls for each chunk.
pub(crate) struct Prefetch<'p> {
    plan: Plan,
    uses: HashMap<ContentHash, u32>,
    state: Mutex<State>,
    changed: Condvar,
    fetch: &'p (dyn Fn(&ChunkRef) -> Result<Vec<u8>> + Sync),
}

impl<'p> Prefetch<'p> {
    /// Runs `restore` with a fetcher for `manifest`'s chunks while workers fetch them with
    /// `fetch` (which verifies them).
    pub(crate) fn run<R>(
        manifest: &TreeManifest,
        fetch: &'p (dyn Fn(&ChunkRef) -> Result<Vec<u8>> + Sync),
        restore: impl FnOnce(&mut dyn FnMut(&ChunkRef) -> Result<Vec<u8>>) -> R,
    ) -> R {
        let (plan, uses) = Plan::of(manifest);
        let prefetch = Prefetch {
            plan,
            uses,
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
            fetch,
        };
        let workers = TRANSFERS_IN_FLIGHT.min(prefetch.plan.order.len());
        std::thread::scope(|scope| {
            for _ in 0..workers {
                scope.spawn(|| prefetch.work());
            }
            let mut uses = prefetch.uses.clone();
            let mut take = |chunk: &ChunkRef| prefetch.take(chunk, &mut uses);
            let result = restore(&mut take);
            prefetch.lock().done = true;
            prefetch.changed.notify_all();
            result
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A worker: takes the next chunk within the window, fetches it, hands it over.
    fn work(&self) {
        loop {
            let index = {
                let mut state = self.lock();
                loop {
                    if state.done || state.failure.is_some() || state.next >= self.plan.order.len()
                    {
                        return;
                    }
                    if state.next < state.consumed + WINDOW {
                        break;
                    }
                    state = self.changed.wait(state).unwrap_or_else(|p| p.into_inner());
                }
                state.next += 1;
                state.next - 1
            };
            let chunk = self.plan.order[index];
            let fetched = (self.fetch)(&chunk);
            let mut state = self.lock();
            match fetched {
                Ok(bytes) => {
                    state.ready.insert(chunk.sha256, bytes);
                }
                Err(error) => {
                    state.failure.get_or_insert(error);
                }
            }
            drop(state);
            self.changed.notify_all();
        }
    }

    /// The restore's fetcher: the chunk's bytes, waiting for a worker when needed.
    fn take(&self, chunk: &ChunkRef, uses: &mut HashMap<ContentHash, u32>) -> Result<Vec<u8>> {
        let left = uses.get_mut(&chunk.sha256).map(|n| {
            *n = n.saturating_sub(1);
            *n
        });
        let mut state = self.lock();
        if let Some(bytes) = state.kept.get(&chunk.sha256) {
            let bytes = bytes.clone();
            if left == Some(0) {
                state.kept.remove(&chunk.sha256);
                state.kept_bytes = state.kept_bytes.saturating_sub(bytes.len() as u64);
            }
            return Ok(bytes);
        }
        let first = self.plan.first_use.get(&chunk.sha256).copied();
        let Some(index) = first.filter(|&i| i >= state.consumed) else {
            // Used before and not kept: fetched again.
            drop(state);
            return (self.fetch)(chunk);
        };
        let bytes = loop {
            if let Some(bytes) = state.ready.remove(&chunk.sha256) {
                break bytes;
            }
            if let Some(error) = state.failure.take() {
                state.done = true;
                drop(state);
                self.changed.notify_all();
                return Err(error);
            }
            state = self.changed.wait(state).unwrap_or_else(|p| p.into_inner());
        };
        state.consumed = state.consumed.max(index + 1);
        if left.unwrap_or(0) > 0 && state.kept_bytes + bytes.len() as u64 <= KEEP_BYTES {
            state.kept_bytes += bytes.len() as u64;
            state.kept.insert(chunk.sha256, bytes.clone());
        }
        drop(state);
        self.changed.notify_all();
        Ok(bytes)
    }
}
