//! Spawning the stasis host (`stasis serve`) on a loopback port, and knowing
//! when it serves.

use crate::{
    client::{Call, Conn, Endpoint},
    process::Spawned,
};
use anyhow::{Context, Result, bail};
use std::{
    fs::File,
    net::TcpListener,
    path::{Path, PathBuf},
    process::{Command, Stdio},
    sync::Arc,
    time::{Duration, Instant},
};

/// How long a start may take before the bench gives up on it.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// The host's `--durability`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostDurability {
    /// `fsync`: a commit is on disk before it is acknowledged (the default).
    Fsync,
    /// `os`: a commit is handed to the OS before it is acknowledged.
    Os,
}

impl HostDurability {
    /// The flag's value.
    pub fn flag(self) -> &'static str {
        match self {
            HostDurability::Fsync => "fsync",
            HostDurability::Os => "os",
        }
    }
}

/// How to start a host.
#[derive(Debug, Clone)]
pub struct HostConfig {
    /// The `stasis` binary.
    pub bin: PathBuf,
    /// Its `--data-dir`.
    pub data_dir: PathBuf,
    /// Its `--durability`.
    pub durability: HostDurability,
    /// `STASIS_SECRET`.
    pub secret: String,
    /// Where its stdout and stderr go.
    pub log: PathBuf,
    /// More flags for `stasis serve`.
    pub extra_args: Vec<String>,
}

impl HostConfig {
    /// A durable (`fsync`) host keeping its data and log in `folder`.
    pub fn in_folder(bin: &Path, folder: &Path, secret: &str) -> HostConfig {
        HostConfig {
            bin: bin.to_path_buf(),
            data_dir: folder.join("data"),
            durability: HostDurability::Fsync,
            secret: secret.to_owned(),
            log: folder.join("host.log"),
            extra_args: Vec::new(),
        }
    }
}

/// A host started by the bench; stopped when dropped.
pub struct StasisHost {
    process: Spawned,
    endpoint: Arc<Endpoint>,
    log: PathBuf,
}

impl StasisHost {
    /// Starts the process without waiting for it to serve.
    pub fn spawn(config: &HostConfig) -> Result<Self> {
        let port = free_port()?;
        let log = File::options()
            .create(true)
            .append(true)
            .open(&config.log)
            .with_context(|| format!("opening {}", config.log.display()))?;
        let child = Command::new(&config.bin)
            .arg("serve")
            .arg("--listen")
            .arg(format!("127.0.0.1:{port}"))
            .arg("--data-dir")
            .arg(&config.data_dir)
            .arg("--durability")
            .arg(config.durability.flag())
            .args(&config.extra_args)
            .env("STASIS_SECRET", &config.secret)
            .stdin(Stdio::null())
            .stdout(Stdio::from(log.try_clone()?))
            .stderr(Stdio::from(log))
            .spawn()
            .with_context(|| format!("starting {}", config.bin.display()))?;
        let token = admin_token(&config.secret)?;
        let endpoint = Endpoint::new(&format!("http://127.0.0.1:{port}"), Some(&token))?;
        Ok(Self {
            process: Spawned::new("the stasis host", child),
            endpoint,
            log: config.log.clone(),
        })
    }

    /// Starts the process and waits until `GET /healthz` answers 200.
    pub async fn start(config: &HostConfig) -> Result<Self> {
        let mut host = Self::spawn(config)?;
        host.wait_healthy().await?;
        Ok(host)
    }

    /// Where it serves, with an admin token.
    pub fn endpoint(&self) -> &Arc<Endpoint> {
        &self.endpoint
    }

    /// The process id, for CPU accounting.
    pub fn pid(&self) -> Option<u32> {
        self.process.pid()
    }

    /// Polls `GET /healthz` until it answers 200, failing if the process
    /// exits or the start timeout passes.
    pub async fn wait_healthy(&mut self) -> Result<()> {
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if let Some(status) = self.process.exited() {
                bail!(
                    "the stasis host exited ({status}) before serving; its log:\n{}",
                    log_tail(&self.log)
                );
            }
            if let Ok(mut conn) = Conn::open(&self.endpoint).await
                && let Ok((status, _)) = conn.call(&Call::get("/healthz")).await
                && status.is_success()
            {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!(
                    "the stasis host did not serve /healthz within {START_TIMEOUT:?}; its log:\n{}",
                    log_tail(&self.log)
                );
            }
            tokio::time::sleep(Duration::from_micros(500)).await;
        }
    }

    /// Stops the process (SIGTERM, then SIGKILL after a grace period).
    pub fn stop(mut self) -> Result<()> {
        self.process.stop()
    }

    /// The last lines of its log, for error messages.
    pub fn log_tail(&self) -> String {
        log_tail(&self.log)
    }
}

/// An admin token for the server whose `STASIS_SECRET` is `secret`, valid
/// for a day from now.
pub fn admin_token(secret: &str) -> Result<String> {
    use stasis_api::auth::{Grant, KeyRing, Scope};
    let keys = KeyRing::single(secret)?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_secs();
    let day = std::time::Duration::from_secs(86_400);
    Ok(keys.mint(&Grant::new(Scope::Admin), now, day)?)
}

/// A random hex string from the OS (for secrets and run ids).
pub fn random_hex(bytes: usize) -> Result<String> {
    use std::io::Read;
    let mut buf = vec![0u8; bytes];
    File::open("/dev/urandom")?.read_exact(&mut buf)?;
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}

fn free_port() -> Result<u16> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    Ok(listener.local_addr()?.port())
}

fn log_tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(30)..].join("\n")
}
