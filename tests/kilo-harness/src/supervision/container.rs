//! A container whose entrypoint is `stasis-client up` (or one `stasis-client supervise`): the
//! process started in a group of its own, its output in a log file, signalled and awaited.

use anyhow::{Context, Result, bail};
use rustix::process::{Pid, Signal, kill_process};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// A running entrypoint.
pub struct Entrypoint {
    child: Option<Child>,
    log: PathBuf,
}

impl Entrypoint {
    /// Runs `bin args...` with `env` added, its output into `log`.
    ///
    /// # Errors
    ///
    /// When it cannot start.
    pub fn start(
        bin: &Path,
        args: &[String],
        env: &[(String, String)],
        log: &Path,
    ) -> Result<Self> {
        let file = File::create(log).with_context(|| format!("creating {}", log.display()))?;
        let child = Command::new(bin)
            .args(args)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(file.try_clone()?)
            .stderr(file)
            .spawn()
            .with_context(|| format!("starting {}", bin.display()))?;
        Ok(Self {
            child: Some(child),
            log: log.to_owned(),
        })
    }

    /// Its output so far.
    pub fn output(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// `error`, followed by its output.
    pub fn with_output(&self, error: &anyhow::Error) -> anyhow::Error {
        anyhow::anyhow!("{error:#}\n--- the container's output:\n{}", self.output())
    }

    /// SIGTERM to it (not its group: it forwards the signal itself).
    pub fn terminate(&self) {
        if let Some(child) = &self.child {
            let _ = kill_process(Pid::from_child(child), Signal::TERM);
        }
    }

    /// SIGKILL to it and every process below it, as the end of a container kills all of its
    /// processes: `up`, its supervisors (each leads a group of its own) and their kilos. Top
    /// down, so that no supervisor outlives the entrypoint long enough to restart its kilo.
    ///
    /// # Errors
    ///
    /// When it was reaped already or `/proc` cannot be read.
    pub fn kill_all(&self) -> Result<()> {
        let child = self.child.as_ref().context("already reaped")?;
        let root = i32::try_from(child.id()).context("a pid over i32")?;
        let parents = parents_by_pid()?;
        let mut family = vec![root];
        let mut next = 0;
        while let Some(&parent) = family.get(next) {
            for &(pid, ppid) in &parents {
                if ppid == parent && !family.contains(&pid) {
                    family.push(pid);
                }
            }
            next += 1;
        }
        for pid in family {
            if let Some(pid) = Pid::from_raw(pid) {
                // One may have exited meanwhile.
                let _ = kill_process(pid, Signal::KILL);
            }
        }
        Ok(())
    }

    /// Whether it has exited (reaping it then).
    ///
    /// # Errors
    ///
    /// When waiting fails.
    pub fn try_exit(&mut self) -> Result<Option<ExitStatus>> {
        match self.child.as_mut() {
            Some(child) => Ok(child.try_wait()?),
            None => bail!("already reaped"),
        }
    }

    /// Waits at most `within` for its exit.
    ///
    /// # Errors
    ///
    /// When it has not exited in time.
    pub fn wait(&mut self, within: Duration) -> Result<ExitStatus> {
        let deadline = Instant::now() + within;
        loop {
            if let Some(status) = self.try_exit()? {
                self.child = None;
                return Ok(status);
            }
            if Instant::now() >= deadline {
                bail!("it did not exit within {within:?}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// Every process's pid and its parent's, from `/proc/<pid>/stat`.
fn parents_by_pid() -> Result<Vec<(i32, i32)>> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").context("reading /proc")? {
        let Ok(entry) = entry else { continue };
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // `pid (comm) state ppid ...`; the command may hold spaces and parentheses.
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<i32>().ok());
        if let Some(ppid) = ppid {
            found.push((pid, ppid));
        }
    }
    Ok(found)
}

impl Drop for Entrypoint {
    fn drop(&mut self) {
        // A failed test leaves it running: SIGTERM (its supervisors stop their kilos), then KILL.
        if self.child.is_some() {
            self.terminate();
            if self.wait(Duration::from_secs(30)).is_err()
                && let Some(mut child) = self.child.take()
            {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }
}
