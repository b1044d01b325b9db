//! The real parts of a sidecar test: `stasis serve` on a port that survives its restart, the
//! `stasis-client sidecar` binary as its own process (so that it can be killed and signalled),
//! and the agent's log read back.

use std::io::{BufRead, BufReader, Read};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::helpers::admin_token;
use crate::support::{SECRET, admin, agent, with_compiled_components};

/// The agent every sidecar test feeds.
pub const TOWN: &str = "e2e-sidecar";
pub const RIG: &str = "hq";
pub const AGENT: &str = "mayor";
/// The container every sidecar test runs in.
pub const CONTAINER: &str = "c-sidecar-test";

/// `stasis serve` on a fixed loopback port, over one data directory, restartable.
pub struct Stasis {
    child: Option<Child>,
    pub port: u16,
    pub base: String,
    data_dir: PathBuf,
}

impl Stasis {
    /// Starts it on a free port.
    pub fn start(data_dir: &Path) -> Self {
        with_compiled_components(data_dir);
        let port = free_port();
        let mut stasis = Stasis {
            child: None,
            port,
            base: format!("http://127.0.0.1:{port}"),
            data_dir: data_dir.to_owned(),
        };
        stasis.restart();
        stasis
    }

    /// (Re)starts the process on the same port and data, and waits until it answers.
    pub fn restart(&mut self) {
        let child = Command::new(env!("CARGO_BIN_EXE_stasis"))
            .args([
                "serve",
                "--listen",
                &format!("127.0.0.1:{}", self.port),
                "--data-dir",
            ])
            .arg(&self.data_dir)
            .env("STASIS_SECRET", SECRET)
            .env("STASIS_LOG", "error")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn stasis");
        self.child = Some(child);
        let until = Instant::now() + Duration::from_secs(30);
        while ureq::get(format!("{}/healthz", self.base)).call().is_err() {
            assert!(
                Instant::now() < until,
                "stasis did not come up on {}",
                self.port
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// SIGKILL: no shutdown code runs.
    pub fn kill_hard(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.kill().expect("kill -9");
            child.wait().expect("reap");
        }
    }
}

impl Drop for Stasis {
    fn drop(&mut self) {
        self.kill_hard();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// The `stasis-client` binary, built once per test run (without TLS, like the CLI test).
pub fn client_binary() -> &'static Path {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(|| {
        let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .expect("the workspace");
        let mut command = Command::new(env!("CARGO"));
        command.current_dir(workspace).args([
            "build",
            "--locked",
            "-p",
            "stasis-client",
            "--no-default-features",
            "--bin",
            "stasis-client",
            "--message-format=json-render-diagnostics",
        ]);
        if !cfg!(debug_assertions) {
            command.arg("--release");
        }
        let output = command.output().expect("cargo builds stasis-client");
        assert!(output.status.success(), "building stasis-client failed");
        String::from_utf8_lossy(&output.stdout)
            .lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .find_map(|m| m["executable"].as_str().map(PathBuf::from))
            .expect("cargo names the stasis-client executable")
    })
}

/// What a sidecar is started with.
pub struct Setup<'a> {
    pub stasis_url: &'a str,
    pub runtime_url: &'a str,
    pub db: &'a Path,
    pub state_dir: &'a Path,
    pub container_id: &'a str,
    pub token: String,
    /// Further flags (`--linger 60s`, ...).
    pub extra: Vec<String>,
}

impl<'a> Setup<'a> {
    pub fn new(
        stasis_url: &'a str,
        runtime_url: &'a str,
        db: &'a Path,
        state_dir: &'a Path,
    ) -> Self {
        Setup {
            stasis_url,
            runtime_url,
            db,
            state_dir,
            container_id: CONTAINER,
            token: admin_token(),
            extra: Vec::new(),
        }
    }

    pub fn with(mut self, flags: &[&str]) -> Self {
        self.extra.extend(flags.iter().map(|f| (*f).to_owned()));
        self
    }
}

/// A running `stasis-client sidecar`.
pub struct SidecarProcess {
    child: Child,
    stderr: Arc<Mutex<String>>,
}

/// How it ended.
pub struct Exit {
    pub code: Option<i32>,
    /// The JSON summary it printed on stdout.
    pub summary: Value,
    pub stderr: String,
    pub took: Duration,
}

impl SidecarProcess {
    pub fn spawn(setup: &Setup<'_>) -> Self {
        let mut child = Command::new(client_binary())
            .args(["sidecar", "--town", TOWN, "--rig", RIG, "--agent", AGENT])
            .args([
                "--runtime-url",
                setup.runtime_url,
                "--container-id",
                setup.container_id,
            ])
            .arg("--db")
            .arg(setup.db)
            .arg("--state-dir")
            .arg(setup.state_dir)
            // Its token file (`{root}/stasis-token-{container}`) stays in the test's directory.
            .arg("--root")
            .arg(setup.state_dir.parent().unwrap_or(setup.state_dir))
            .args(&setup.extra)
            .env("STASIS_URL", setup.stasis_url)
            .env("STASIS_TOKEN", &setup.token)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn the sidecar");
        let stderr = Arc::new(Mutex::new(String::new()));
        let pipe = child.stderr.take().expect("stderr");
        let sink = Arc::clone(&stderr);
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                eprintln!("  [sidecar] {line}");
                let mut text = sink.lock().expect("stderr");
                text.push_str(&line);
                text.push('\n');
            }
        });
        SidecarProcess { child, stderr }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Its stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().expect("stderr").clone()
    }

    /// Waits until its stderr holds `text`.
    pub fn wait_for_line(&self, text: &str, within: Duration) {
        let until = Instant::now() + within;
        while !self.stderr().contains(text) {
            assert!(
                Instant::now() < until,
                "no {text:?} on stderr:\n{}",
                self.stderr()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Sends `signal` (`TERM`, `KILL`, ...).
    pub fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .args([&format!("-{signal}"), &self.pid().to_string()])
            .status()
            .expect("kill runs");
        assert!(status.success(), "kill -{signal}");
    }

    /// Waits for the exit (at most `within`), then reads what it printed.
    pub fn wait_exit(mut self, within: Duration) -> Exit {
        let started = Instant::now();
        let code = loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                break status.code();
            }
            if started.elapsed() > within {
                let _ = self.child.kill();
                panic!(
                    "the sidecar did not exit within {within:?}:\n{}",
                    self.stderr()
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        let took = started.elapsed();
        let mut stdout = String::new();
        if let Some(mut pipe) = self.child.stdout.take() {
            pipe.read_to_string(&mut stdout).expect("stdout");
        }
        // The stderr thread ends with the pipe; give it a moment to copy the last lines.
        std::thread::sleep(Duration::from_millis(50));
        Exit {
            code,
            summary: serde_json::from_str(stdout.trim()).unwrap_or(Value::Null),
            stderr: self.stderr(),
            took,
        }
    }
}

impl Drop for SidecarProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The agent's whole log, oldest first.
pub fn read_log(base: &str) -> Vec<Value> {
    let mut events = Vec::new();
    let mut after = 0;
    loop {
        let url = format!(
            "{base}/api/towns/{TOWN}/rigs/{RIG}/agents/{AGENT}/events?after={after}&limit=10000"
        );
        let mut response = agent()
            .get(&url)
            .header("Authorization", admin())
            .call()
            .expect("stasis answers");
        assert_eq!(response.status().as_u16(), 200);
        let page: Value = response.body_mut().read_json().expect("a page");
        let batch = page["events"].as_array().cloned().unwrap_or_default();
        events.extend(batch);
        after = page["next_after"].as_u64().unwrap_or(after);
        if page["has_more"] != Value::Bool(true) {
            return events;
        }
    }
}

/// Polls the log until `done` holds for it (at most `within`); answers the log.
pub fn wait_for_log(base: &str, within: Duration, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let until = Instant::now() + within;
    loop {
        let log = read_log(base);
        if done(&log) {
            return log;
        }
        assert!(
            Instant::now() < until,
            "the log never got there; it holds {} events, the last: {:?}",
            log.len(),
            log.last()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The `n` of every `test.n` event in the log, in log order.
pub fn test_numbers(log: &[Value]) -> Vec<u64> {
    log.iter()
        .filter(|e| e["type"] == "test.n")
        .filter_map(|e| e["data"]["n"].as_u64())
        .collect()
}

/// The events of one type.
pub fn of_type<'l>(log: &'l [Value], kind: &str) -> Vec<&'l Value> {
    log.iter().filter(|e| e["type"] == kind).collect()
}

/// `POST /heartbeat` from `container` as admin: the status and the answer.
pub fn heartbeat(base: &str, container: &str) -> (u16, Value) {
    let body = serde_json::json!({ "container_id": container });
    send_json(base, "POST", &format!("/api/towns/{TOWN}/heartbeat"), &body)
}

/// `PUT` or `POST` of a JSON body as admin: the status and the answer.
pub fn send_json(base: &str, method: &str, path: &str, body: &Value) -> (u16, Value) {
    let url = format!("{base}{path}");
    let request = if method == "PUT" {
        agent().put(&url)
    } else {
        agent().post(&url)
    };
    let mut response = request
        .header("Authorization", admin())
        .send_json(body)
        .expect("stasis answers");
    let status = response.status().as_u16();
    let text = response.body_mut().read_to_string().unwrap_or_default();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// `GET` as admin, answering the status, the JSON answer and the headers wanted.
pub fn get(base: &str, path: &str) -> (u16, Value) {
    let mut response = agent()
        .get(format!("{base}{path}"))
        .header("Authorization", admin())
        .call()
        .expect("stasis answers");
    let status = response.status().as_u16();
    let text = response.body_mut().read_to_string().unwrap_or_default();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// `HEAD /db-snapshot`: the status, the version and the event watermark.
pub fn snapshot_head(base: &str) -> (u16, Option<u64>, Option<u64>) {
    let url = format!("{base}/api/towns/{TOWN}/rigs/{RIG}/agents/{AGENT}/db-snapshot");
    let response = agent()
        .head(&url)
        .header("Authorization", admin())
        .call()
        .expect("stasis answers");
    let number = |name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse().ok())
    };
    (
        response.status().as_u16(),
        number("x-stasis-snapshot-version"),
        number("x-stasis-event-seq"),
    )
}
