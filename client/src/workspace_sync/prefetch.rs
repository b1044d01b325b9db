//! Chunks fetched ahead of a restore, in batches: the restore asks for chunks one at a time in
//! manifest order; [`BATCHES_IN_FLIGHT`] workers fetch the distinct chunks in that same order,
//! many per request ([`FETCH_BATCH`] at most), at most [`WINDOW_BYTES`] ahead of the restore,
//! so a tree of any size is restored in bounded memory. A chunk named
//! again later is kept for its next use while the kept bytes stay under [`KEEP_BYTES`], else
//! fetched again then.

use std::collections::HashMap;
use std::sync::{Condvar, Mutex, MutexGuard};

use stasis_domain::workspace::{ChunkRef, ContentHash, TreeManifest};

use super::batches::{BATCH_BYTES, BATCHES_IN_FLIGHT};
use crate::error::{Error, Result};

/// Bytes of chunks fetched ahead of the restore, at most (a batch past the restore's chunk
/// always may go, so that a chunk larger than this is fetched too).
pub(crate) const WINDOW_BYTES: u64 = 32 << 20;
/// Chunks one fetch asks for, at most (its bytes bounded by [`BATCH_BYTES`]).
pub(crate) const FETCH_BATCH: usize = 128;
/// Bytes of chunks kept for a later use, at most.
pub(crate) const KEEP_BYTES: u64 = 64 << 20;

/// Every distinct chunk in order of first use, and how often each is used.
struct Plan {
    order: Vec<ChunkRef>,
    /// `ahead[i]`: the bytes of `order[..i]`.
    ahead: Vec<u64>,
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
        let mut ahead = Vec::with_capacity(order.len() + 1);
        let mut bytes = 0;
        ahead.push(0);
        for chunk in &order {
            bytes += u64::from(chunk.size);
            ahead.push(bytes);
        }
        (
            Plan {
                order,
                ahead,
                first_use,
            },
            uses,
        )
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
    fetch: &'p Fetch<'p>,
}

/// Fetches distinct chunks in one request, each verified; their bytes in the same order.
pub(crate) type Fetch<'f> = dyn Fn(&[ChunkRef]) -> Result<Vec<Vec<u8>>> + Sync + 'f;

impl<'p> Prefetch<'p> {
    /// Runs `restore` with a fetcher for `manifest`'s chunks while workers fetch them with
    /// `fetch` (which verifies them).
    pub(crate) fn run<R>(
        manifest: &TreeManifest,
        fetch: &'p Fetch<'p>,
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
        let workers = BATCHES_IN_FLIGHT.min(prefetch.plan.order.len());
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

    /// The chunks `order[from..to]` a worker may take: at most [`FETCH_BATCH`] and
    /// [`BATCH_BYTES`], within [`WINDOW_BYTES`] of the restore (at least one chunk).
    fn batch_end(&self, from: usize, consumed: usize) -> usize {
        let ahead = &self.plan.ahead;
        let mut to = from;
        while to < self.plan.order.len() && to - from < FETCH_BATCH {
            let batch = ahead[to + 1] - ahead[from];
            let window = ahead[to + 1] - ahead[consumed.min(to)];
            if to > from && (batch > BATCH_BYTES || window > WINDOW_BYTES) {
                break;
            }
            to += 1;
        }
        to
    }

    /// A worker: takes the next chunks within the window, fetches them, hands them over.
    fn work(&self) {
        loop {
            let (from, to) = {
                let mut state = self.lock();
                loop {
                    if state.done || state.failure.is_some() || state.next >= self.plan.order.len()
                    {
                        return;
                    }
                    let window = self.plan.ahead[state.next + 1] - self.plan.ahead[state.consumed];
                    if state.next == state.consumed || window <= WINDOW_BYTES {
                        break;
                    }
                    state = self.changed.wait(state).unwrap_or_else(|p| p.into_inner());
                }
                let from = state.next;
                state.next = self.batch_end(from, state.consumed);
                (from, state.next)
            };
            let chunks = &self.plan.order[from..to];
            let fetched = (self.fetch)(chunks);
            let mut state = self.lock();
            match fetched {
                Ok(all) => {
                    for (chunk, bytes) in chunks.iter().zip(all) {
                        state.ready.insert(chunk.sha256, bytes);
                    }
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
            let mut again = (self.fetch)(std::slice::from_ref(chunk))?;
            return again.pop().ok_or_else(|| Error::Protocol {
                what: format!("fetching workspace chunk {}", chunk.sha256),
                detail: "the batch came back empty".to_owned(),
            });
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
