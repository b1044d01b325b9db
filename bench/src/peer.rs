//! The peer: the Durable Streams reference server (`@durable-streams/server`
//! 0.3.7, file-backed), started from `bench/peer/server.mjs` with Node.

use crate::{client::Endpoint, process::Spawned};
use anyhow::{Context, Result, bail};
use std::{
    fs::File,
    io::{BufRead, BufReader},
    path::{Path, PathBuf},
    process::{ChildStdin, Command, Stdio},
    sync::{Arc, mpsc},
    time::Duration,
};

/// How long the peer may take to print its URL.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// The folder holding `server.mjs` and its `node_modules`, as built.
pub const DEFAULT_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/peer");

/// A running peer server; stopped when dropped.
pub struct PeerServer {
    // Dropped after `process` is stopped: the script also exits when its
    // stdin closes, so it never outlives the bench.
    process: Spawned,
    _stdin: Option<ChildStdin>,
    endpoint: Arc<Endpoint>,
}

impl PeerServer {
    /// Starts `node server.mjs --data-dir DATA_DIR` in `dir` and waits for
    /// the URL it prints.
    pub fn start(node: &Path, dir: &Path, data_dir: &Path, log: &Path) -> Result<Self> {
        if !dir.join("node_modules/@durable-streams/server").is_dir() {
            bail!(
                "{} has no node_modules: run `npm ci` there (scripts/bench does)",
                dir.display()
            );
        }
        let log = File::create(log)?;
        let mut child = Command::new(node)
            .arg("server.mjs")
            .arg("--data-dir")
            .arg(data_dir)
            .current_dir(dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(log))
            .spawn()
            .with_context(|| format!("starting {} server.mjs", node.display()))?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().context("the peer has no stdout")?;
        let process = Spawned::new("the peer server", child);
        // On an error `process` is dropped, which stops the server.
        let url = read_url(stdout)?;
        Ok(Self {
            process,
            _stdin: stdin,
            endpoint: Endpoint::new(&url, None)?,
        })
    }

    /// Where it serves.
    pub fn endpoint(&self) -> &Arc<Endpoint> {
        &self.endpoint
    }

    /// Stops it.
    pub fn stop(mut self) -> Result<()> {
        self.process.stop()
    }
}

/// Reads stdout until a line holding the base URL, then keeps draining it on
/// a thread so the server never blocks on a full pipe.
fn read_url(stdout: std::process::ChildStdout) -> Result<String> {
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        let mut sent = false;
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if !sent && line.starts_with("http://") {
                sent = sender.send(line.trim().to_owned()).is_ok();
            }
        }
    });
    receiver
        .recv_timeout(START_TIMEOUT)
        .context("the peer server did not print its URL")
}

/// The peer folder to use: `--peer-dir`, else the one beside this crate.
pub fn resolve_dir(given: Option<PathBuf>) -> PathBuf {
    given.unwrap_or_else(|| PathBuf::from(DEFAULT_DIR))
}
