//! A real `stasis serve` on a loopback port, started on a data folder and
//! killed with SIGKILL (no shutdown code runs).

use std::fs::File;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::client::Client;

/// How long a start may take: a debug build compiles its components on
/// the first start over a fresh folder.
const START_TIMEOUT: Duration = Duration::from_secs(180);

/// How to start a host.
#[derive(Debug, Clone)]
pub struct HostConfig {
    /// The `stasis` binary.
    pub bin: PathBuf,
    /// Its `--data-dir`, kept across kills.
    pub data_dir: PathBuf,
    /// Where its output goes (appended).
    pub log: PathBuf,
    /// `STASIS_SECRET`.
    pub secret: String,
}

/// A running host; killed when dropped.
#[derive(Debug)]
pub struct Host {
    child: Child,
    /// A client for it, with an admin token.
    pub client: Client,
}

impl Host {
    /// Starts `stasis serve --durability DURABILITY` and waits until
    /// `GET /healthz` answers.
    pub fn start(config: &HostConfig, durability: &str) -> Result<Host, String> {
        let port = free_port()?;
        let client = Client::new(&format!("http://127.0.0.1:{port}"), &config.secret)?;
        let log = File::options()
            .create(true)
            .append(true)
            .open(&config.log)
            .map_err(|e| format!("opening {}: {e}", config.log.display()))?;
        let err_log = log.try_clone().map_err(|e| format!("the host log: {e}"))?;
        let child = Command::new(&config.bin)
            .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
            .arg("--data-dir")
            .arg(&config.data_dir)
            .args(["--durability", durability])
            // Chunks a killed push uploaded are collectable a second later,
            // and a superseded version's two seconds later (its readers, which
            // take milliseconds, must never be cut), so the sweep after the
            // restart can be checked for garbage within its wait.
            .args(["--snapshot-pending-ttl", "1s", "--snapshot-grace", "2s"])
            // No history kept past the write that supersedes a version: the
            // sweep's check wants exactly the current manifest's chunks
            // (what history keeps is checked by the conformance suite).
            .args(["--history-retention", "0"])
            .env("STASIS_SECRET", &config.secret)
            .env("STASIS_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::from(log))
            .stderr(Stdio::from(err_log))
            .spawn()
            .map_err(|e| format!("starting {}: {e}", config.bin.display()))?;
        let mut host = Host { child, client };
        host.wait_healthy()?;
        Ok(host)
    }

    fn wait_healthy(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + START_TIMEOUT;
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!("the host exited before serving ({status})"));
            }
            if self.client.healthy() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Err(format!("the host did not serve within {START_TIMEOUT:?}"))
    }

    /// SIGKILL, then reaps the process.
    pub fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> Result<u16, String> {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .map_err(|e| format!("finding a free port: {e}"))
}

/// The host's temporary KV files: those in `.tmp` of the bucket `kv_root` and in its lane
/// folders (`.tmp/0` …), each named by its path under `.tmp`.
pub fn temp_files_in(kv_root: &Path) -> Vec<String> {
    let temp = kv_root.join(".tmp");
    let mut found = files_in(&temp);
    let lanes = std::fs::read_dir(&temp).map(|entries| {
        entries
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .collect::<Vec<_>>()
    });
    for lane in lanes.unwrap_or_default() {
        let name = lane.file_name().to_string_lossy().into_owned();
        found.extend(
            files_in(&lane.path())
                .into_iter()
                .map(|f| format!("{name}/{f}")),
        );
    }
    found
}

/// The regular files directly in `dir` (none when it is missing).
pub fn files_in(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}
