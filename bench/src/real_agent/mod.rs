//! The agent sidecar and a real kilo agent, measured on the host and on the edge, each figure
//! beside a baseline from the same run:
//!
//! - forwarding: a synthetic kilo (`host/tests/client_end_to_end/sidecar/fake_kilo.rs`)
//!   streams events on loopback and an in-process [`stasis_client::sidecar::Sidecar`] forwards
//!   them into one agent; events/s of a burst until every one is readable from stasis's own
//!   event stream, and the delay from an event leaving the source to being readable there
//!   (`measure.rs`, shared with the host's ignored test), against direct appends of the same
//!   events ([`baseline`]);
//! - recovery of a real kilo agent ([`recovery`]): container B's `boot` to `kilo serve`
//!   answering `GET /session/{id}/message` with the restored session, against kilo's own
//!   start on an empty home to its first `GET /session` answer. Skipped with a note when the
//!   Kilo CLI is not installed.
//! - the agent coming back by itself ([`supervised`], on the host): a supervised kilo killed
//!   to its session served again, a container killed whole to the next one's continuation of
//!   the cut reply, and the inbox's delivery into a running kilo, each beside kilo's own start.
//!
//! Its rows go to their own BENCHMARKS.md section ([`MARKS`]).

#[path = "../../../host/tests/client_end_to_end/sidecar/fake_kilo.rs"]
mod fake_kilo;
#[path = "../../../host/tests/client_end_to_end/sidecar/measure.rs"]
mod measure;

mod bare_kilo;
mod baseline;
mod forwarding;
mod recovery;
mod rows;
mod section;
mod supervised;

pub use section::{MARKS, section};

use crate::{
    report::Row,
    results::Missing,
    server::{HostConfig, HostDurability, StasisHost, random_hex},
};
use anyhow::Result;
use std::path::{Path, PathBuf};

/// What the command line asked for.
#[derive(Debug, Clone)]
pub struct Options {
    /// A short smoke run.
    pub quick: bool,
    /// The `stasis` binary to spawn when no `url` is given.
    pub stasis_bin: PathBuf,
    /// A running stasis instead: its URL and admin token.
    pub url: Option<(String, String)>,
    /// The edge under `wrangler dev`: its URL and admin token.
    pub edge: Option<(String, String)>,
    /// Where temp folders go.
    pub tmp_dir: Option<PathBuf>,
}

/// A stasis to measure: where it serves and an admin token.
#[derive(Debug, Clone)]
struct Stasis {
    /// `host` or `edge`.
    side: &'static str,
    url: String,
    token: String,
    /// Its secret, when the bench started it (the stories mint their towns' tokens).
    secret: Option<String>,
}

/// How much each workload does.
#[derive(Debug, Clone, Copy)]
struct Sizes {
    burst: u64,
    paced: u64,
    rate: u64,
    rounds: usize,
}

impl Sizes {
    fn new(quick: bool) -> Self {
        if quick {
            Self {
                burst: 5_000,
                paced: 500,
                rate: 500,
                rounds: 1,
            }
        } else {
            Self {
                burst: 50_000,
                paced: 2_000,
                rate: 500,
                rounds: 3,
            }
        }
    }
}

/// Runs the forwarding and recovery workloads on the host (spawned unless `options.url`) and
/// on the edge when given; answers their rows.
pub fn run(options: &Options) -> Result<Vec<Row>> {
    let tmp = match &options.tmp_dir {
        Some(dir) => tempfile::Builder::new()
            .prefix("stasis-bench-agent-")
            .tempdir_in(dir)?,
        None => tempfile::Builder::new()
            .prefix("stasis-bench-agent-")
            .tempdir()?,
    };
    let sizes = Sizes::new(options.quick);
    let (host, spawned) = host(options, tmp.path());
    let mut targets: Vec<Result<Stasis, Missing>> = vec![host];
    if let Some((url, token)) = &options.edge {
        targets.push(Ok(Stasis {
            side: "edge",
            url: url.clone(),
            token: token.clone(),
            secret: None,
        }));
    }
    let mut out = Vec::new();
    for target in &targets {
        out.extend(rows::forwarding(target, &sizes, tmp.path()));
    }
    for target in &targets {
        out.push(rows::recovery(target, &sizes, tmp.path()));
    }
    out.extend(rows::supervised(&targets[0], &sizes, tmp.path()));
    if let Some(host) = spawned
        && let Err(error) = host.stop()
    {
        eprintln!("stopping the host: {error:#}");
    }
    Ok(out)
}

/// The host to measure, and the process when the bench started it.
fn host(options: &Options, tmp: &Path) -> (Result<Stasis, Missing>, Option<StasisHost>) {
    if let Some((url, token)) = &options.url {
        let stasis = Stasis {
            side: "host",
            url: url.clone(),
            token: token.clone(),
            secret: None,
        };
        return (Ok(stasis), None);
    }
    match spawn_host(options, tmp) {
        Ok((stasis, host)) => (Ok(stasis), Some(host)),
        Err(error) => (
            Err(Missing::Failed(format!(
                "the host did not start: {error:#}"
            ))),
            None,
        ),
    }
}

fn spawn_host(options: &Options, tmp: &Path) -> Result<(Stasis, StasisHost)> {
    let data_dir = tmp.join("host-data");
    std::fs::create_dir_all(&data_dir)?;
    let config = HostConfig {
        bin: options.stasis_bin.clone(),
        data_dir,
        durability: HostDurability::Fsync,
        secret: random_hex(32)?,
        log: tmp.join("host.log"),
        extra_args: Vec::new(),
    };
    eprintln!(
        "starting {} serve for the sidecar and kilo workloads",
        config.bin.display()
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let host = runtime.block_on(StasisHost::start(&config))?;
    let endpoint = host.endpoint();
    let stasis = Stasis {
        side: "host",
        url: endpoint.base_url(),
        token: endpoint.token().unwrap_or_default().to_owned(),
        secret: Some(config.secret.clone()),
    };
    Ok((stasis, host))
}

/// `work` on a thread of its own: a panic in the shared test scaffolding (which asserts)
/// becomes a failed figure instead of ending the bench.
fn guarded<T: Send + 'static>(
    what: &str,
    work: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<T, Missing> {
    eprintln!("{what}");
    match std::thread::spawn(work).join() {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(error)) => Err(Missing::Failed(format!("{error:#}"))),
        Err(panic) => {
            let why = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_else(|| "it panicked".to_owned());
            Err(Missing::Failed(why))
        }
    }
}
