//! A child process the bench started and must stop, even on an early error.

use anyhow::Result;
use rustix::process::{Pid, Signal, kill_process};
use std::{
    process::{Child, ExitStatus},
    time::{Duration, Instant},
};

/// How long a child gets to exit after SIGTERM before it is killed.
const GRACE: Duration = Duration::from_secs(5);

/// A running child; stopped (SIGTERM, then SIGKILL) when dropped.
#[derive(Debug)]
pub struct Spawned {
    child: Option<Child>,
    name: &'static str,
}

impl Spawned {
    /// Takes ownership of `child`.
    pub fn new(name: &'static str, child: Child) -> Self {
        Self {
            child: Some(child),
            name,
        }
    }

    /// The child's process id, while it has not been stopped.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// The child's exit status if it has already exited.
    pub fn exited(&mut self) -> Option<ExitStatus> {
        self.child.as_mut()?.try_wait().ok().flatten()
    }

    /// Stops the child: SIGTERM, wait up to the grace period, then SIGKILL.
    pub fn stop(&mut self) -> Result<()> {
        let Some(mut child) = self.child.take() else {
            return Ok(());
        };
        if child.try_wait()?.is_some() {
            return Ok(());
        }
        // The child may exit between the check and the signal: ESRCH is
        // fine.
        let _ = kill_process(Pid::from_child(&child), Signal::TERM);
        let deadline = Instant::now() + GRACE;
        while Instant::now() < deadline {
            if child.try_wait()?.is_some() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        eprintln!(
            "{} did not stop on SIGTERM within {GRACE:?}; killing it",
            self.name
        );
        child.kill()?;
        child.wait()?;
        Ok(())
    }
}

impl Drop for Spawned {
    fn drop(&mut self) {
        if let Err(error) = self.stop() {
            eprintln!("stopping {}: {error:#}", self.name);
        }
    }
}
