//! Starting and stopping a real `stasis serve` process for host tests.

#![allow(dead_code, reason = "each test file uses a different part")]
#![allow(clippy::expect_used, clippy::panic, reason = "test setup fails loudly")]

use std::{
    net::TcpListener,
    path::Path,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

/// The secret every test server uses.
pub const SECRET: &str = "host-test-secret-0123456789";

/// A running server and where it listens.
pub struct Server {
    /// The `stasis serve` process.
    pub child: Child,
    /// `http://127.0.0.1:<port>`.
    pub base: String,
}

impl Server {
    /// Starts `stasis serve` on a free loopback port over `data_dir`.
    pub fn start(data_dir: &Path, extra: &[&str]) -> Self {
        let port = free_port();
        let child = Command::new(env!("CARGO_BIN_EXE_stasis"))
            .args([
                "serve",
                "--listen",
                &format!("127.0.0.1:{port}"),
                "--data-dir",
            ])
            .arg(data_dir)
            .args(extra)
            .env("STASIS_SECRET", SECRET)
            .env("STASIS_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn stasis");
        let server = Self {
            child,
            base: format!("http://127.0.0.1:{port}"),
        };
        server.wait_ready();
        server
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
    format!(
        "Bearer {}",
        stasis_api::auth::mint(SECRET.as_bytes(), &stasis_api::auth::Scope::Admin)
    )
}

/// A client that returns 4xx/5xx as responses, not errors.
pub fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(30)))
        .build()
        .into()
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// Puts compiled components into `data_dir/cache`, so that the server started on it skips
/// compiling them (tens of seconds in a debug build). The first call in a test binary starts a
/// server once to compile them into a folder under `CARGO_TARGET_TMPDIR`; later calls copy.
pub fn with_compiled_components(data_dir: &Path) {
    static COMPILED: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    let compiled = COMPILED.get_or_init(|| {
        let shared = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("{}-components", env!("CARGO_CRATE_NAME")));
        let _ = std::fs::remove_dir_all(&shared);
        let warm = tempfile::tempdir().expect("temp dir");
        drop(Server::start(warm.path(), &[]));
        copy_files(&warm.path().join("cache"), &shared);
        shared
    });
    copy_files(compiled, &data_dir.join("cache"));
}

fn copy_files(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("cache dir");
    for entry in std::fs::read_dir(from).expect("compiled components") {
        let entry = entry.expect("entry");
        std::fs::copy(entry.path(), to.join(entry.file_name())).expect("copy");
    }
}
