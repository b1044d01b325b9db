//! The runtime as a child process: started in a process group of its own with the agent's home
//! environment, its URL read from the line it prints when it listens (`kilo server listening on
//! http://127.0.0.1:PORT`: its own readiness notice, no polling), its output copied into the
//! supervisor's log, its exit reported to the supervisor's loop, and the whole group stopped.

use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Sender};
use std::time::{Duration, Instant, SystemTime};

use rustix::process::{Pid, Signal, kill_process_group};

use super::home::HomeEnv;
use crate::error::{Error, Result};
use crate::sidecar::Log;

/// How a runtime ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Exit {
    pub(crate) pid: u32,
    /// Its exit code, when it exited.
    pub(crate) code: Option<i32>,
    /// The signal that ended it, when one did.
    pub(crate) signal: Option<i32>,
    /// When its exit was collected, on the wall clock (epoch ms): a reader of the log sets it
    /// against a kill it timed.
    pub(crate) collected_at_ms: u64,
}

impl Exit {
    fn of(pid: u32, status: Option<ExitStatus>) -> Self {
        Exit {
            pid,
            code: status.and_then(|s| s.code()),
            signal: status.and_then(|s| s.signal()),
            collected_at_ms: epoch_millis(SystemTime::now()),
        }
    }
}

/// `at` in milliseconds since the Unix epoch (0 before it).
pub(crate) fn epoch_millis(at: SystemTime) -> u64 {
    at.duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.code, self.signal) {
            (Some(code), _) => write!(f, "pid {} exited with code {code}", self.pid),
            (None, Some(signal)) => write!(f, "pid {} was killed by signal {signal}", self.pid),
            (None, None) => write!(f, "pid {} ended", self.pid),
        }
    }
}

/// A started runtime.
#[derive(Debug)]
pub(crate) struct Runtime {
    pub(crate) pid: u32,
    /// Its base URL, from its listening line.
    pub(crate) url: String,
    pub(crate) started: Instant,
    /// The wall clock at its spawn: a reader of the log sets it against a kill it timed.
    pub(crate) spawned_at: SystemTime,
    /// Set once its exit was collected (its pid may then name another process).
    gone: Arc<AtomicBool>,
}

/// A runtime spawned whose listening line has not been read yet.
#[derive(Debug)]
pub(crate) struct Spawned {
    runtime: Runtime,
    program: String,
    url: mpsc::Receiver<String>,
}

/// Spawns `command` in `workdir` with `env` over the supervisor's environment, in a process group
/// of its own (a terminal's Ctrl-C reaches the supervisor only, which decides); `on_exit` gets
/// its exit, whenever it comes.
pub(crate) fn spawn(
    command: &[String],
    env: &HomeEnv,
    workdir: &Path,
    log: &Log,
    on_exit: impl FnOnce(Exit) + Send + 'static,
) -> Result<Spawned> {
    let (program, args) = command
        .split_first()
        .ok_or_else(|| Error::Config("no runtime command given (after --)".into()))?;
    let mut builder = Command::new(program);
    builder
        .args(args)
        .current_dir(workdir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    for name in &env.removed {
        builder.env_remove(name);
    }
    builder.envs(env.set.iter().map(|(name, value)| (name, value)));
    let started = Instant::now();
    let spawned_at = SystemTime::now();
    let mut child = builder
        .spawn()
        .map_err(|e| Error::io(format!("starting {program}"), e))?;
    let pid = child.id();
    let (found, url) = mpsc::channel();
    // kilo prints its listening line on stdout; either stream is read for it.
    if let Some(stdout) = child.stdout.take() {
        copy_output(stdout, Arc::clone(log), Some(found.clone()));
    }
    if let Some(stderr) = child.stderr.take() {
        copy_output(stderr, Arc::clone(log), Some(found));
    }
    let gone = Arc::new(AtomicBool::new(false));
    let marker = Arc::clone(&gone);
    std::thread::Builder::new()
        .name("runtime-wait".into())
        .spawn(move || {
            let exit = Exit::of(pid, child.wait().ok());
            marker.store(true, Ordering::SeqCst);
            on_exit(exit);
        })
        .map_err(|e| Error::io("starting the runtime's wait thread", e))?;
    let runtime = Runtime {
        pid,
        url: String::new(),
        started,
        spawned_at,
        gone,
    };
    Ok(Spawned {
        runtime,
        program: program.clone(),
        url,
    })
}

impl Spawned {
    /// Waits for its listening line until `timeout` after its spawn; kills it when none comes.
    pub(crate) fn listening(self, timeout: Duration) -> Result<Runtime> {
        let Spawned {
            runtime,
            program,
            url,
        } = self;
        let left = timeout.saturating_sub(runtime.started.elapsed());
        // A copier sends the URL, or drops its sender at the end of its stream: both ended first
        // means the runtime died before listening. No health poll, nothing to hang on.
        match url.recv_timeout(left) {
            Ok(url) => Ok(Runtime { url, ..runtime }),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                runtime.kill();
                Err(Error::Runtime {
                    what: format!("starting {program}"),
                    detail: format!("it printed no listening URL within {timeout:?}"),
                })
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                runtime.kill();
                Err(Error::Runtime {
                    what: format!("starting {program}"),
                    detail: "it closed its output before printing a listening URL".into(),
                })
            }
        }
    }

    /// SIGKILL to its whole group (a start abandoned).
    pub(crate) fn kill(&self) {
        self.runtime.kill();
    }
}

impl Runtime {
    /// True while its exit has not been collected.
    pub(crate) fn is_running(&self) -> bool {
        !self.gone.load(Ordering::SeqCst)
    }

    /// Its port, from its URL.
    pub(crate) fn port(&self) -> Option<u16> {
        self.url
            .rsplit(':')
            .next()?
            .trim_end_matches('/')
            .parse()
            .ok()
    }

    /// SIGKILL to its whole group, at once.
    pub(crate) fn kill(&self) {
        self.signal(Signal::KILL);
    }

    /// Waits at most `within` for its exit to be collected; answers whether it was.
    pub(crate) fn wait_gone(&self, within: Duration) -> bool {
        let deadline = Instant::now() + within;
        while self.is_running() {
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        true
    }

    /// SIGTERM to its group; SIGKILL when it has not exited within `grace`. Answers whether it
    /// exited on the SIGTERM.
    pub(crate) fn stop(&self, grace: Duration) -> bool {
        self.signal(Signal::TERM);
        if self.wait_gone(grace) {
            // The group may outlive its leader (a tool's command).
            self.signal(Signal::KILL);
            return true;
        }
        self.kill();
        self.wait_gone(Duration::from_secs(5));
        false
    }

    fn signal(&self, signal: Signal) {
        let group = i32::try_from(self.pid).ok().and_then(Pid::from_raw);
        if let Some(group) = group {
            // The group is gone when its last member is: nothing to do then.
            let _ = kill_process_group(group, signal);
        }
    }
}

/// Copies each line of `stream` into the log; the first `listening on http…` line's URL goes to
/// `url` (dropped then, or at the end of the stream).
fn copy_output(stream: impl Read + Send + 'static, log: Log, mut url: Option<Sender<String>>) {
    let spawned = std::thread::Builder::new()
        .name("runtime-output".into())
        .spawn(move || {
            for line in BufReader::new(stream).lines() {
                let Ok(line) = line else { return };
                if let Some(found) = listening_url(&line)
                    && let Some(sender) = url.take()
                {
                    let _ = sender.send(found);
                }
                log(&format!("runtime: {line}"));
            }
        });
    if let Err(e) = spawned {
        eprintln!("could not copy the runtime's output: {e}");
    }
}

/// The URL of a `... listening on http://host:port` line.
fn listening_url(line: &str) -> Option<String> {
    let (_, rest) = line.split_once("listening on ")?;
    let url = rest.split_whitespace().next()?.trim_end_matches('/');
    (url.starts_with("http://") || url.starts_with("https://")).then(|| url.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_url_comes_from_kilos_listening_line() {
        assert_eq!(
            listening_url("kilo server listening on http://127.0.0.1:41234"),
            Some("http://127.0.0.1:41234".into())
        );
        assert_eq!(
            listening_url("opencode server listening on http://127.0.0.1:4096/ (ready)"),
            Some("http://127.0.0.1:4096".into())
        );
        assert_eq!(listening_url("listening on port 80"), None);
        assert_eq!(listening_url("INFO starting"), None);
    }

    #[test]
    fn a_runtime_that_dies_before_listening_is_reported_at_once() {
        let dir = tempfile::tempdir().expect("a folder");
        let env = super::super::home::prepare(&dir.path().join("home")).expect("home");
        let log: Log = Arc::new(|_| {});
        let (exited, exit) = mpsc::channel();
        let started = Instant::now();
        let result = spawn(
            &["sh".into(), "-c".into(), "echo starting; exit 3".into()],
            &env,
            dir.path(),
            &log,
            move |e| {
                let _ = exited.send(e);
            },
        )
        .and_then(|spawned| spawned.listening(Duration::from_secs(30)));
        assert!(matches!(result, Err(Error::Runtime { .. })), "{result:?}");
        assert!(started.elapsed() < Duration::from_secs(10));
        let exit = exit
            .recv_timeout(Duration::from_secs(10))
            .expect("its exit");
        assert_eq!(exit.code, Some(3));
    }

    #[test]
    fn the_runtime_runs_with_its_home_and_its_url_is_read_from_its_output() {
        let dir = tempfile::tempdir().expect("a folder");
        let env = super::super::home::prepare(&dir.path().join("home")).expect("home");
        let log_lines = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
        let kept = Arc::clone(&log_lines);
        let log: Log = Arc::new(move |line| {
            if let Ok(mut lines) = kept.lock() {
                lines.push(line.to_owned());
            }
        });
        let script = "echo \"home=$HOME xdg=$XDG_DATA_HOME\"; \
                      echo 'listening on http://127.0.0.1:9'; sleep 30";
        let runtime = spawn(
            &["sh".into(), "-c".into(), script.into()],
            &env,
            dir.path(),
            &log,
            |_| {},
        )
        .and_then(|spawned| spawned.listening(Duration::from_secs(30)))
        .expect("started");
        assert_eq!(runtime.url, "http://127.0.0.1:9");
        assert_eq!(runtime.port(), Some(9));
        assert!(runtime.stop(Duration::from_secs(5)), "SIGTERM ends sh");
        let lines = log_lines.lock().map(|l| l.clone()).unwrap_or_default();
        let home = dir.path().join("home");
        let expected = format!(
            "runtime: home={} xdg={}",
            home.display(),
            home.join(".local/share").display()
        );
        assert!(lines.contains(&expected), "{lines:?}");
    }
}
