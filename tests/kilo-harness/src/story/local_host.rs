//! A local `stasis serve`: a loopback port, a fresh secret, a data folder of its own; killed
//! and restarted on the same port and data when asked; stopped when dropped.

use anyhow::{Context, Result, bail};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long the host may take to answer `/healthz` (a first start compiles its components).
const START: Duration = Duration::from_secs(120);

/// A host this process runs.
pub struct LocalHost {
    child: Option<Child>,
    bin: PathBuf,
    data_dir: PathBuf,
    port: u16,
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    /// Its `STASIS_SECRET`.
    pub secret: String,
}

impl LocalHost {
    /// Starts `bin serve` over `data_dir` on a free port (its log goes beside `data_dir`, in
    /// `host.log`).
    ///
    /// # Errors
    ///
    /// When it cannot start or does not answer in time.
    pub fn start(bin: &Path, data_dir: &Path) -> Result<Self> {
        let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let mut host = Self {
            child: None,
            bin: bin.to_owned(),
            data_dir: data_dir.to_owned(),
            port,
            url: format!("http://127.0.0.1:{port}"),
            secret: format!("local-{}", super::random_suffix()),
        };
        host.restart()?;
        Ok(host)
    }

    /// SIGKILL: no shutdown code runs.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts it again on the same port and data, and waits until it answers.
    ///
    /// # Errors
    ///
    /// As [`LocalHost::start`].
    pub fn restart(&mut self) -> Result<()> {
        self.kill();
        let log_path = self.log_path();
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)?;
        let child = Command::new(&self.bin)
            .args(["serve", "--listen", &format!("127.0.0.1:{}", self.port)])
            .arg("--data-dir")
            .arg(&self.data_dir)
            .env("STASIS_SECRET", &self.secret)
            .env("STASIS_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .with_context(|| format!("starting {} serve", self.bin.display()))?;
        self.child = Some(child);
        self.wait_healthy()
    }

    fn log_path(&self) -> PathBuf {
        self.data_dir.with_file_name("host.log")
    }

    fn wait_healthy(&mut self) -> Result<()> {
        let deadline = Instant::now() + START;
        let health = format!("{}/healthz", self.url);
        while Instant::now() < deadline {
            if ureq::get(&health).call().is_ok() {
                return Ok(());
            }
            if let Some(child) = self.child.as_mut()
                && let Some(status) = child.try_wait()?
            {
                let output = std::fs::read_to_string(self.log_path()).unwrap_or_default();
                bail!("stasis serve exited ({status}):\n{output}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        bail!("stasis serve did not answer {health} within {START:?}")
    }
}

impl Drop for LocalHost {
    fn drop(&mut self) {
        self.kill();
    }
}
