//! Starting `kilo serve` with its whole home under one folder, and stopping
//! it (or killing it outright, as a container dies).

use super::api::KiloApi;
use super::config::{OFFLINE_ENV, config_content};
use super::events::EventStream;
use super::kilo_bin;
use anyhow::{Context, Result};
use rustix::process::{Pid, Signal, kill_process_group};
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Lines of kilo's output kept for error messages.
const OUTPUT_LINES: usize = 200;
/// How long `stop` waits after SIGTERM before SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(10);

/// How to start kilo.
#[derive(Debug, Clone)]
pub struct KiloOptions {
    home: PathBuf,
    model_url: String,
    bin: Option<PathBuf>,
    startup_timeout: Duration,
}

impl KiloOptions {
    /// kilo with its home at `home` (e.g. `/tmp/agent-home-mayor`: its
    /// database is then `home/.local/share/kilo/kilo.db`), using the fake
    /// model at `model_url` (`FakeModel::base_url`).
    pub fn new(home: impl Into<PathBuf>, model_url: &str) -> Self {
        Self {
            home: home.into(),
            model_url: model_url.to_owned(),
            bin: None,
            startup_timeout: Duration::from_secs(60),
        }
    }

    /// Another binary than [`kilo_bin`](super::kilo_bin)'s.
    #[must_use]
    pub fn bin(mut self, bin: impl Into<PathBuf>) -> Self {
        self.bin = Some(bin.into());
        self
    }

    /// How long kilo may take to answer its health check (default 60 s; a
    /// first start migrates its database).
    #[must_use]
    pub fn startup_timeout(mut self, timeout: Duration) -> Self {
        self.startup_timeout = timeout;
        self
    }
}

/// A running `kilo serve`, in its own process group; killed when dropped.
pub struct Kilo {
    child: Option<Child>,
    url: String,
    home: PathBuf,
    output: Arc<Mutex<VecDeque<String>>>,
}

impl Kilo {
    /// Starts kilo and waits until `GET /global/health` answers.
    ///
    /// # Errors
    ///
    /// When the binary is missing, kilo exits or prints no listening URL,
    /// or does not become healthy within the startup timeout.
    pub fn start(options: &KiloOptions) -> Result<Self> {
        let bin = match &options.bin {
            Some(bin) => bin.clone(),
            None => kilo_bin()?,
        };
        let work = prepare_home(&options.home)?;
        let mut child = command(&bin, &options.home, &options.model_url)?
            .current_dir(&work)
            .spawn()
            .with_context(|| format!("starting {}", bin.display()))?;
        let output = Arc::new(Mutex::new(VecDeque::new()));
        let (url_found, url) = mpsc::channel();
        for stream in [
            child
                .stdout
                .take()
                .map(|s| Box::new(s) as Box<dyn Read + Send>),
            child
                .stderr
                .take()
                .map(|s| Box::new(s) as Box<dyn Read + Send>),
        ]
        .into_iter()
        .flatten()
        {
            follow_output(stream, Arc::clone(&output), url_found.clone());
        }
        drop(url_found);
        let mut kilo = Self {
            child: Some(child),
            url: String::new(),
            home: options.home.clone(),
            output,
        };
        let deadline = Instant::now() + options.startup_timeout;
        kilo.url = url
            .recv_timeout(options.startup_timeout)
            .map_err(|_| kilo.failure("kilo printed no listening URL"))?;
        kilo.wait_healthy(deadline)?;
        Ok(kilo)
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// kilo's process group (its own pid: kilo leads it), for the processes a container runs
    /// beside it, so that [`Kilo::kill`] takes them down too; `None` once it was stopped.
    pub fn process_group(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// kilo's home folder.
    pub fn home(&self) -> &Path {
        &self.home
    }

    /// kilo's database: `home/.local/share/kilo/kilo.db` (with `-wal` and
    /// `-shm` beside it while kilo runs, and often after).
    pub fn db_path(&self) -> PathBuf {
        db_path(&self.home)
    }

    /// Typed calls to kilo's HTTP API.
    pub fn api(&self) -> KiloApi {
        KiloApi::new(&self.url)
    }

    /// A reader of `GET /event`, connected before this returns.
    ///
    /// # Errors
    ///
    /// When the stream cannot be opened.
    pub fn events(&self) -> Result<EventStream> {
        EventStream::open(&self.url)
    }

    /// kilo's latest output lines (stdout and stderr).
    pub fn output(&self) -> Vec<String> {
        lock(&self.output).iter().cloned().collect()
    }

    /// SIGKILL to kilo's whole process group (with whatever joined it, see
    /// [`Kilo::process_group`]), as when its container dies: no shutdown code
    /// runs.
    pub fn kill(mut self) {
        self.kill_group();
    }

    /// SIGTERM to the group, then SIGKILL if it has not exited within 10 s.
    pub fn stop(mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        let _ = kill_process_group(Pid::from_child(&child), Signal::TERM);
        let deadline = Instant::now() + STOP_GRACE;
        while Instant::now() < deadline {
            if matches!(child.try_wait(), Ok(Some(_))) {
                // The group may outlive its leader.
                let _ = kill_process_group(Pid::from_child(&child), Signal::KILL);
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.child = Some(child);
        self.kill_group();
    }

    fn kill_group(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = kill_process_group(Pid::from_child(&child), Signal::KILL);
            let _ = child.wait();
        }
    }

    fn wait_healthy(&mut self, deadline: Instant) -> Result<()> {
        let api = self.api();
        while Instant::now() < deadline {
            if api.is_healthy() {
                return Ok(());
            }
            if let Some(Ok(Some(status))) = self.child.as_mut().map(Child::try_wait) {
                return Err(self.failure(&format!("kilo exited ({status})")));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Err(self.failure("kilo did not become healthy in time"))
    }

    fn failure(&self, what: &str) -> anyhow::Error {
        anyhow::anyhow!("{what}; its output:\n{}", self.output().join("\n"))
    }
}

impl Drop for Kilo {
    fn drop(&mut self) {
        self.kill_group();
    }
}

/// The database of a kilo whose home is `home`.
pub(crate) fn db_path(home: &Path) -> PathBuf {
    home.join(".local/share/kilo/kilo.db")
}

/// Creates the home's folders; returns kilo's working directory in it.
fn prepare_home(home: &Path) -> Result<PathBuf> {
    for dir in [
        ".local/share",
        ".local/state",
        ".config",
        ".cache",
        "tmp",
        "work",
    ] {
        std::fs::create_dir_all(home.join(dir))
            .with_context(|| format!("creating {}", home.join(dir).display()))?;
    }
    Ok(home.join("work"))
}

fn command(bin: &Path, home: &Path, model_url: &str) -> Result<Command> {
    let config = config_content(model_url)?;
    let mut command = Command::new(bin);
    command
        .args(["serve", "--port", "0", "--hostname", "127.0.0.1"])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("KILO_TEST_HOME", home)
        .env("XDG_DATA_HOME", home.join(".local/share"))
        .env("XDG_STATE_HOME", home.join(".local/state"))
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_CACHE_HOME", home.join(".cache"))
        .env("TMPDIR", home.join("tmp"))
        .envs(OFFLINE_ENV.iter().copied())
        .env("KILO_CONFIG_CONTENT", config)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    Ok(command)
}

/// Keeps the last lines of `stream` and sends the URL of the line
/// `kilo server listening on http://...`.
fn follow_output(
    stream: Box<dyn Read + Send>,
    output: Arc<Mutex<VecDeque<String>>>,
    url_found: mpsc::Sender<String>,
) {
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines() {
            let Ok(line) = line else { return };
            if let Some((_, url)) = line.split_once("listening on ") {
                let _ = url_found.send(url.trim().trim_end_matches('/').to_owned());
            }
            let mut kept = lock(&output);
            if kept.len() == OUTPUT_LINES {
                kept.pop_front();
            }
            kept.push_back(line);
        }
    });
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
