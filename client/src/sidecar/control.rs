//! What the sidecar's threads tell each other: a stop was asked for (and by when it must be
//! done), a fatal error ended the run, the flush and the last snapshot are done.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::error::Error;

/// The shared coordination point. Every change wakes every waiter.
#[derive(Debug, Default)]
pub(crate) struct Control {
    state: Mutex<State>,
    changed: Condvar,
    /// Mirrors `state.stop_deadline.is_some()` for checks on every line of the stream.
    stopping: AtomicBool,
    /// The reader has opened the runtime's event stream at least once.
    following: AtomicBool,
}

#[derive(Debug, Default)]
struct State {
    stop_deadline: Option<Instant>,
    fatal: Option<Error>,
    flushed: bool,
    last_snapshot: Option<bool>,
}

impl Control {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A thread that panicked while holding the lock left plain flags behind: still usable.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn update(&self, change: impl FnOnce(&mut State)) {
        change(&mut self.lock());
        self.changed.notify_all();
    }

    /// Asks for a stop that must be done within `budget`. A second request ends the budget
    /// now (a second Ctrl-C means "stop waiting").
    pub(crate) fn request_stop(&self, budget: Duration) {
        let now = Instant::now();
        self.update(|s| {
            s.stop_deadline = Some(match s.stop_deadline {
                None => now + budget,
                Some(_) => now,
            });
        });
        self.stopping.store(true, Ordering::SeqCst);
    }

    /// True once a stop was asked for (cheap enough for every line read).
    pub(crate) fn is_stopping(&self) -> bool {
        self.stopping.load(Ordering::Relaxed)
    }

    /// The reader follows the runtime's event stream.
    pub(crate) fn set_following(&self) {
        self.following.store(true, Ordering::SeqCst);
    }

    /// True once the reader has followed the runtime's event stream.
    pub(crate) fn is_following(&self) -> bool {
        self.following.load(Ordering::SeqCst)
    }

    /// When the stop must be done, once one was asked for.
    pub(crate) fn stop_deadline(&self) -> Option<Instant> {
        self.lock().stop_deadline
    }

    /// Ends the run with `error` (the first one wins) and stops every thread.
    pub(crate) fn fail(&self, error: Error) {
        self.update(|s| {
            if s.fatal.is_none() {
                s.fatal = Some(error);
            }
            s.stop_deadline.get_or_insert_with(Instant::now);
        });
        self.stopping.store(true, Ordering::SeqCst);
    }

    /// The fatal error, taken out.
    pub(crate) fn take_fatal(&self) -> Option<Error> {
        self.lock().fatal.take()
    }

    /// The forwarder has sent everything the queue held after the stop.
    pub(crate) fn set_flushed(&self) {
        self.update(|s| s.flushed = true);
    }

    /// The last snapshot was pushed (`true`) or could not be (`false`).
    pub(crate) fn set_last_snapshot(&self, pushed: bool) {
        self.update(|s| s.last_snapshot = Some(pushed));
    }

    /// Waits until a stop is asked for or a fatal error happens.
    pub(crate) fn wait_for_stop(&self) {
        let mut state = self.lock();
        while state.stop_deadline.is_none() && state.fatal.is_none() {
            state = self
                .changed
                .wait(state)
                .unwrap_or_else(|poisoned| poisoned.into_inner());
        }
    }

    /// Waits until the flush is done, a fatal error happens or the deadline (which a second
    /// signal may move closer) passes; answers whether the flush is done.
    pub(crate) fn wait_flushed(&self) -> bool {
        self.wait_until(|s| s.flushed.then_some(true))
            .unwrap_or(false)
    }

    /// Like [`Control::wait_flushed`] for the last snapshot: `Some(pushed)` once it ended.
    pub(crate) fn wait_last_snapshot(&self) -> Option<bool> {
        self.wait_until(|s| s.last_snapshot)
    }

    fn wait_until<T>(&self, done: impl Fn(&State) -> Option<T>) -> Option<T> {
        let mut state = self.lock();
        loop {
            if let Some(value) = done(&state) {
                return Some(value);
            }
            if state.fatal.is_some() {
                return None;
            }
            let left = match state.stop_deadline {
                Some(deadline) => deadline.saturating_duration_since(Instant::now()),
                None => Duration::from_secs(3600),
            };
            if left.is_zero() {
                return None;
            }
            state = self
                .changed
                .wait_timeout(state, left)
                .map(|(guard, _)| guard)
                .unwrap_or_else(|poisoned| poisoned.into_inner().0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_stop_request_ends_the_budget_at_once() {
        let control = Control::default();
        control.request_stop(Duration::from_secs(60));
        let first = control.stop_deadline();
        assert!(first.is_some_and(|d| d > Instant::now() + Duration::from_secs(30)));
        control.request_stop(Duration::from_secs(60));
        assert!(control.stop_deadline().is_some_and(|d| d <= Instant::now()));
        assert!(
            !control.wait_flushed(),
            "the budget is over: no more waiting"
        );
    }

    #[test]
    fn the_first_fatal_error_wins_and_stops_the_run() {
        let control = Control::default();
        control.fail(Error::Config("first".into()));
        control.fail(Error::Config("second".into()));
        assert!(control.is_stopping());
        control.wait_for_stop();
        assert_eq!(
            control.take_fatal().map(|e| e.to_string()),
            Some("configuration: first".into())
        );
    }
}
