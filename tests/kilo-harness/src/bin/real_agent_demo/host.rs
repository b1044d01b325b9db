//! A local `stasis serve` for the demo: a free loopback port, a fresh secret, a data folder of
//! its own; stopped when dropped.

use anyhow::{Context, Result, bail};
use std::hash::{BuildHasher, RandomState};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long the host may take to answer `/healthz` (a first start compiles its components).
const START: Duration = Duration::from_secs(120);

/// A running host.
pub struct LocalHost {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    /// Its `STASIS_SECRET`.
    pub secret: String,
}

impl LocalHost {
    /// Starts `bin serve` over `data_dir` (its log goes to `data_dir/../host.log`).
    pub fn start(bin: &Path, data_dir: &Path) -> Result<Self> {
        let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let secret = format!("demo-{:016x}", RandomState::new().hash_one(port));
        let log_path = data_dir.with_file_name("host.log");
        let log = std::fs::File::create(&log_path)?;
        let child = Command::new(bin)
            .args([
                "serve",
                "--listen",
                &format!("127.0.0.1:{port}"),
                "--data-dir",
            ])
            .arg(data_dir)
            .env("STASIS_SECRET", &secret)
            .env("STASIS_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .with_context(|| format!("starting {} serve", bin.display()))?;
        let mut host = Self {
            child,
            url: format!("http://127.0.0.1:{port}"),
            secret,
        };
        host.wait_healthy(&log_path)?;
        Ok(host)
    }

    fn wait_healthy(&mut self, log: &Path) -> Result<()> {
        let deadline = Instant::now() + START;
        let health = format!("{}/healthz", self.url);
        while Instant::now() < deadline {
            if ureq::get(&health).call().is_ok() {
                return Ok(());
            }
            if let Some(status) = self.child.try_wait()? {
                let output = std::fs::read_to_string(log).unwrap_or_default();
                bail!("stasis serve exited ({status}):\n{output}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        bail!("stasis serve did not answer {health} within {START:?}")
    }
}

impl Drop for LocalHost {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
