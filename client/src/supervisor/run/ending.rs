//! How a run ends: wound down after a crash (the sidecar flushes), a pause before the restart,
//! stopped when fenced, or evicted on SIGTERM.

use std::sync::atomic::Ordering;
use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, Instant};

use super::super::eviction::{self, Eviction};
use super::super::{Msg, Outcome};
use super::{CRASH_FLUSH, Loop, Run};
use crate::error::Error;
use crate::sidecar::End;

impl Loop<'_> {
    /// After a crash: the sidecar flushes what it holds (the exit event queued last) and ends.
    pub(super) fn wind_down(&mut self, run: &mut Run) {
        run.alive.store(false, Ordering::SeqCst);
        // The group may outlive its leader.
        run.runtime.kill();
        if run.sidecar_done.is_none() {
            run.stop.stop_within(CRASH_FLUSH);
            let deadline = Instant::now() + CRASH_FLUSH + Duration::from_secs(5);
            self.await_sidecar(run, deadline);
        }
        self.journal.route_through(None);
    }

    /// Waits for the run's sidecar to end (other messages are dropped: the run is over).
    pub(super) fn await_sidecar(&mut self, run: &mut Run, deadline: Instant) {
        while run.sidecar_done.is_none() {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.inbox.recv_timeout(left) {
                Ok(Msg::SidecarEnded { run: id, report }) if id == run.id => {
                    run.sidecar_done = Some(report);
                }
                Ok(Msg::Signal(_)) => self.signals += 1,
                Ok(_) => {}
                Err(_) => return,
            }
        }
    }

    /// A pause before a restart; a signal meanwhile ends the supervisor (nothing runs to evict).
    pub(super) fn pause(&mut self, delay: Duration) -> Option<Outcome> {
        let deadline = Instant::now() + delay;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            match self.inbox.recv_timeout(left) {
                Ok(Msg::Signal(name)) => {
                    return Some(self.evicted_while_down(&format!("{name} received")));
                }
                Ok(_) | Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return None,
            }
        }
    }

    /// A signal while no runtime runs: the eviction notice, and nothing else to do.
    pub(super) fn evicted_while_down(&self, why: &str) -> Outcome {
        (self.log)(&format!("{why} while no runtime runs: exiting"));
        let _ = crate::town::evict(
            self.client,
            self.options.agent.town(),
            &self.options.container_id,
            "sigterm",
            Some(Instant::now() + Duration::from_secs(10)),
        );
        Outcome::Evicted
    }

    /// Fenced: the runtime dies at once; nothing more is written.
    pub(super) fn fenced(&self, run: &Run, error: Error) -> Outcome {
        run.alive.store(false, Ordering::SeqCst);
        run.runtime.kill();
        run.stop.stop_within(Duration::ZERO);
        // Reaped before the supervisor exits, so that no zombie outlives it.
        run.runtime.wait_gone(Duration::from_secs(5));
        (self.log)(&format!(
            "fenced: {error}; killed the runtime (pid {})",
            run.runtime.pid
        ));
        Outcome::Fenced(error)
    }

    pub(super) fn evict(&mut self, run: &mut Run) -> Outcome {
        let eviction = Eviction {
            options: &self.options,
            client: self.client,
            journal: &self.journal,
            workspace: self.workspace.as_deref(),
            runtime: &run.runtime,
            api: &run.api,
            status: &run.status,
            session: self.session.clone(),
            log: &self.log,
        };
        let (inbox, sender) = (&self.inbox, self.sender.clone());
        // Anything but a signal goes back in the queue, for after the phases.
        let mut second_signal = || match inbox.try_recv() {
            Ok(Msg::Signal(_)) => true,
            Ok(other) => {
                let _ = sender.send(other);
                false
            }
            Err(_) => false,
        };
        let phases = eviction::run(&eviction, &mut second_signal);
        let deadline = phases.deadline;
        if let Some(error) = phases.fenced {
            return self.fenced(run, error);
        }
        run.alive.store(false, Ordering::SeqCst);
        let left = deadline.saturating_duration_since(Instant::now());
        // The last snapshot is worth a moment past the budget; the exit code then says so.
        run.stop.stop_within(left.max(Duration::from_secs(1)));
        self.await_sidecar(run, deadline + Duration::from_secs(5));
        let late = Instant::now().saturating_duration_since(deadline);
        match run.sidecar_done.take().map(|report| report.end) {
            Some(End::Stopped) if late > Duration::ZERO => Outcome::OverBudget(format!(
                "every phase done and the last snapshot pushed, {late:.1?} past the {:?} budget",
                self.options.eviction.budget
            )),
            Some(End::Stopped) => Outcome::Evicted,
            Some(End::OverBudget(what)) => Outcome::OverBudget(what),
            Some(End::Failed(error)) if error.is_fenced() => Outcome::Fenced(error),
            Some(End::Failed(error)) => Outcome::Failed(error),
            None => Outcome::OverBudget("the sidecar did not end within the budget".into()),
        }
    }
}
