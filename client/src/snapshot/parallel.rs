//! Bounded parallelism for chunk transfers: a few scoped threads take items in turn; the first
//! failure stops the others from starting new items and is the answer.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Chunk transfers in flight at once.
pub const TRANSFERS_IN_FLIGHT: usize = 8;

/// Runs `work` on every item with at most `workers` threads; answers the first error met.
pub fn for_each<T: Sync, E: Send>(
    items: &[T],
    workers: usize,
    work: impl Fn(&T) -> Result<(), E> + Sync,
) -> Result<(), E> {
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let first_error = Mutex::new(None);
    let worker = || {
        while !failed.load(Ordering::SeqCst) {
            let Some(item) = items.get(next.fetch_add(1, Ordering::SeqCst)) else {
                return;
            };
            if let Err(e) = work(item) {
                failed.store(true, Ordering::SeqCst);
                let mut slot = first_error.lock().unwrap_or_else(|p| p.into_inner());
                slot.get_or_insert(e);
                return;
            }
        }
    };
    std::thread::scope(|scope| {
        for _ in 0..workers.clamp(1, items.len().max(1)) {
            scope.spawn(worker);
        }
    });
    match first_error.into_inner().unwrap_or_else(|p| p.into_inner()) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_item_is_worked_once() {
        let items: Vec<usize> = (0..100).collect();
        let seen = Mutex::new(Vec::new());
        let done: Result<(), ()> = for_each(&items, 8, |i| {
            seen.lock().map_err(|_| ())?.push(*i);
            Ok(())
        });
        assert_eq!(done, Ok(()));
        let mut seen = seen.into_inner().unwrap_or_default();
        seen.sort_unstable();
        assert_eq!(seen, items);
    }

    #[test]
    fn a_failure_stops_new_items_and_is_the_answer() {
        let items: Vec<usize> = (0..1000).collect();
        let started = AtomicUsize::new(0);
        let done = for_each(&items, 2, |i| {
            started.fetch_add(1, Ordering::SeqCst);
            if *i == 3 { Err(*i) } else { Ok(()) }
        });
        assert_eq!(done, Err(3));
        assert!(started.load(Ordering::SeqCst) < 100);
    }
}
