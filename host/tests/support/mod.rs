//! Starting and stopping a real `stasis serve` process for host tests.

#![allow(dead_code, reason = "each test file uses a different part")]
#![allow(clippy::expect_used, clippy::panic, reason = "test setup fails loudly")]

use std::{
    fs::File,
    net::TcpListener,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

/// Checks `check` until it holds, every 50 ms, for at most 10 s, then
/// fails with its last complaint: for what the host does just after an
/// answer (collecting the chunks a snapshot superseded).
pub fn eventually(what: &str, mut check: impl FnMut() -> Result<(), String>) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match check() {
            Ok(()) => return,
            Err(complaint) if Instant::now() >= deadline => {
                panic!("{what}: still not so after 10 s: {complaint}")
            }
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}

/// The secret every test server uses.
pub const SECRET: &str = "host-test-secret-0123456789";

/// A running server and where it listens.
pub struct Server {
    /// The `stasis serve` process.
    pub child: Child,
    /// `http://127.0.0.1:<port>`.
    pub base: String,
}

/// How to start a server, beyond its flags.
#[derive(Debug, Default, Clone)]
pub struct Options {
    /// Where its stderr (the log) goes; inherited when `None`.
    pub log_file: Option<PathBuf>,
    /// `STASIS_LOG`; `warn` when `None`.
    pub log_filter: Option<String>,
    /// Soft and hard `RLIMIT_NOFILE` for the process (set by `ulimit -n`
    /// in a shell that then execs it, so the host cannot raise it).
    pub open_file_limit: Option<u64>,
}

impl Server {
    /// Starts `stasis serve` on a free loopback port over `data_dir`.
    pub fn start(data_dir: &Path, extra: &[&str]) -> Self {
        Self::start_with(data_dir, extra, &Options::default())
    }

    /// Starts `stasis serve` with `options`, and waits until it serves.
    pub fn start_with(data_dir: &Path, extra: &[&str], options: &Options) -> Self {
        Self::start_on(free_port(), data_dir, extra, options)
    }

    /// Starts `stasis serve` on `port` (a restart where clients expect it).
    pub fn start_on(port: u16, data_dir: &Path, extra: &[&str], options: &Options) -> Self {
        let mut command = match options.open_file_limit {
            Some(limit) => {
                let mut shell = Command::new("sh");
                shell
                    .arg("-c")
                    .arg(format!("ulimit -n {limit} && exec \"$0\" \"$@\""))
                    .arg(env!("CARGO_BIN_EXE_stasis"));
                shell
            }
            None => Command::new(env!("CARGO_BIN_EXE_stasis")),
        };
        command
            .args([
                "serve",
                "--listen",
                &format!("127.0.0.1:{port}"),
                "--data-dir",
            ])
            .arg(data_dir)
            .arg("--cache-dir")
            .arg(shared_cache_dir())
            .args(extra)
            .env("STASIS_SECRET", SECRET)
            // Superseded chunks go at once, so that tests see collections
            // finish (a reader's grace has tests of its own).
            .env("STASIS_SNAPSHOT_GRACE", "0s")
            // No history kept past the write that supersedes a version, for
            // the same reason (history has tests of its own).
            .env("STASIS_HISTORY_RETENTION", "0")
            .env(
                "STASIS_LOG",
                options.log_filter.as_deref().unwrap_or("warn"),
            )
            .stdout(Stdio::null())
            .stderr(match &options.log_file {
                Some(path) => Stdio::from(File::create(path).expect("log file")),
                None => Stdio::inherit(),
            });
        let server = Self {
            child: command.spawn().expect("spawn stasis"),
            base: format!("http://127.0.0.1:{port}"),
        };
        server.wait_ready();
        server
    }

    /// `127.0.0.1:<port>`, for raw sockets.
    pub fn address(&self) -> String {
        self.base.trim_start_matches("http://").to_owned()
    }

    /// How many file descriptors the process holds now.
    pub fn open_fds(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/fd", self.child.id()))
            .expect("the server's /proc/<pid>/fd")
            .count()
    }

    fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if ureq::get(format!("{}/healthz", self.base)).call().is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("stasis did not answer /healthz within 30 s");
    }

    /// SIGKILL: no shutdown code runs.
    pub fn kill_hard(mut self) {
        self.child.kill().expect("kill -9");
        self.child.wait().expect("reap");
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An admin bearer header value.
pub fn admin() -> String {
    format!("Bearer {}", mint(stasis_api::auth::Scope::Admin, DAY))
}

/// A day, the lifetime of the tokens tests mint unless they say otherwise.
pub const DAY: Duration = Duration::from_secs(86_400);

/// A token for `scope` under the test servers' secret, valid from now for
/// `ttl`.
pub fn mint(scope: stasis_api::auth::Scope, ttl: Duration) -> String {
    let keys = stasis_api::auth::KeyRing::single(SECRET).expect("the test secret is long enough");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("the clock is past 1970")
        .as_secs();
    keys.mint(&stasis_api::auth::Grant::new(scope), now, ttl)
        .expect("a token mints")
}

/// A client that returns 4xx/5xx as responses, not errors.
pub fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(30)))
        .build()
        .into()
}

/// A client for bodies of hundreds of MB: like [`agent`], but patient
/// for five minutes.
pub fn patient_agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(300)))
        .build()
        .into()
}

/// `GET path` as admin, which must answer 200: its whole body (up to 1 GiB).
pub fn get_whole(server: &Server, path: &str) -> Vec<u8> {
    let mut response = patient_agent()
        .get(format!("{}{path}", server.base))
        .header("authorization", admin())
        .call()
        .expect("GET");
    assert_eq!(response.status(), 200, "GET {path}");
    response
        .body_mut()
        .with_config()
        .limit(1 << 30)
        .read_to_vec()
        .expect("the whole body")
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// The compiled components every host test binary shares: `STASIS_CACHE_DIR` when set
/// (scripts/test shares one folder with every server it starts), else a folder under
/// `CARGO_TARGET_TMPDIR`. Each file is named by its guest's and the engine's hash, so a build
/// with other guests adds its own files and never loads another's.
pub fn shared_cache_dir() -> std::path::PathBuf {
    std::env::var_os("STASIS_CACHE_DIR").map_or_else(
        || Path::new(env!("CARGO_TARGET_TMPDIR")).join("compiled-components"),
        std::path::PathBuf::from,
    )
}

/// Puts compiled components into `data_dir/cache`, for a server started there without
/// `--cache-dir` (compiling them takes tens of seconds in a debug build). The first call in a
/// test binary starts a server once, which compiles into [`shared_cache_dir`] only what it
/// lacks; every call copies that folder.
pub fn with_compiled_components(data_dir: &Path) {
    static COMPILED: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    let compiled = COMPILED.get_or_init(|| {
        let warm = tempfile::tempdir().expect("temp dir");
        drop(Server::start(warm.path(), &[]));
        shared_cache_dir()
    });
    copy_files(compiled, &data_dir.join("cache"));
}

fn copy_files(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("cache dir");
    for entry in std::fs::read_dir(from).expect("compiled components") {
        let path = entry.expect("entry").path();
        // Only whole files: another server may be writing a `.tmp<pid>` beside them.
        if path.extension().is_some_and(|ext| ext == "cwasm") {
            let name = path.file_name().expect("a file name");
            std::fs::copy(&path, to.join(name)).expect("copy");
        }
    }
}
