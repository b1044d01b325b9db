//! The run: which workload goes against what, in which order, within which
//! bounds. The peer and each baseline run right beside the stasis workload
//! they are compared with, so that a busy machine skews both alike. A
//! failing workload is recorded and the run goes on.

use crate::{
    client::Endpoint,
    logs::Log,
    native,
    peer::PeerServer,
    results::{Comparison, Measured, Missing, Results},
    server::{HostConfig, HostDurability, StasisHost, random_hex},
    stats::{Latency, Rate},
    workloads::{Bounds, catchup, latency, sse, startup, throughput},
};
use anyhow::Result;
use stasis_sqlite::Durability;
use std::{
    cell::Cell,
    path::{Path, PathBuf},
    sync::Arc,
};
use tokio::runtime::Runtime;

/// A server to run workloads on, or why there is none.
type Target = Result<Arc<Endpoint>, Missing>;

/// Bytes of `data` in the event-log workloads.
pub const SMALL: usize = 100;
/// Bytes of `data` in the workloads compared with the peer.
pub const LARGE: usize = 1000;
/// Items in a catch-up read.
pub const CATCH_UP: usize = 10_000;
/// Connections in the concurrent workloads.
pub const CONNS: usize = 16;
/// Items per batch.
pub const BATCH: usize = 100;

/// What the command line asked for.
#[derive(Debug, Clone)]
pub struct Options {
    /// A short smoke run.
    pub quick: bool,
    /// The `stasis` binary to spawn.
    pub stasis_bin: PathBuf,
    /// An already running stasis instead of a spawned one: URL and token.
    pub url: Option<(String, Option<String>)>,
    /// Whether to run the peer.
    pub peer: bool,
    /// The peer's folder.
    pub peer_dir: PathBuf,
    /// The `node` binary.
    pub node: PathBuf,
    /// Where temp folders go (the same filesystem for every party).
    pub tmp_dir: Option<PathBuf>,
}

/// Bounds for every loop; `--quick` shrinks them.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    /// 100-event batches, 16 connections.
    pub throughput: Bounds,
    /// The native batched inserts.
    pub native_throughput: Bounds,
    /// Single appends at concurrency 1.
    pub latency: Bounds,
    /// fdatasync and one-row commits.
    pub native_latency: Bounds,
    /// Catch-up reads.
    pub reads: Bounds,
    /// SSE deliveries.
    pub sse: Bounds,
    /// Host starts.
    pub starts: Bounds,
    /// Peer comparison, one item per request.
    pub single: Bounds,
    /// Peer comparison, 100 items per request.
    pub batches: Bounds,
}

impl Budget {
    /// The bounds for a full or a quick run.
    pub fn new(quick: bool) -> Self {
        if quick {
            Self {
                throughput: Bounds::new(300, 1),
                native_throughput: Bounds::new(300, 1),
                latency: Bounds::new(200, 1),
                native_latency: Bounds::new(200, 1),
                reads: Bounds::new(5, 2),
                sse: Bounds::new(40, 2),
                starts: Bounds::new(2, 10),
                single: Bounds::new(300, 1),
                batches: Bounds::new(100, 1),
            }
        } else {
            Self {
                throughput: Bounds::new(4000, 8),
                native_throughput: Bounds::new(4000, 5),
                latency: Bounds::new(2000, 6),
                native_latency: Bounds::new(2000, 3),
                reads: Bounds::new(30, 10),
                sse: Bounds::new(300, 10),
                starts: Bounds::new(7, 60),
                single: Bounds::new(3000, 5),
                batches: Bounds::new(1000, 5),
            }
        }
    }
}

/// What every workload needs: the runtime, the bounds, the town's name and
/// where the native baselines write.
struct Ctx {
    rt: Runtime,
    budget: Budget,
    town: String,
    native_dir: PathBuf,
    native_runs: Cell<u32>,
}

impl Ctx {
    /// Runs `work` on `target`, or passes on why there is no target.
    fn on<T>(
        &self,
        target: &Target,
        what: &str,
        work: impl AsyncFnOnce(&Arc<Endpoint>) -> Result<T>,
    ) -> Measured<T> {
        let endpoint = target.as_ref().map_err(Clone::clone)?;
        step(what, || self.rt.block_on(work(endpoint)))
    }

    /// Runs a native baseline in a folder of its own.
    fn native<T>(&self, what: &str, work: impl FnOnce(&Path) -> Result<T>) -> Measured<T> {
        let run = self.native_runs.get() + 1;
        self.native_runs.set(run);
        let dir = self.native_dir.join(run.to_string());
        step(what, || {
            std::fs::create_dir_all(&dir)?;
            work(&dir)
        })
    }

    /// The log of `agent` in this run's town.
    fn agent(&self, agent: &str) -> Log {
        Log::stasis(&self.town, agent)
    }
}

/// Runs everything `options` asks for.
pub fn run(options: &Options) -> Result<Results> {
    let tmp = match &options.tmp_dir {
        Some(dir) => tempfile::Builder::new()
            .prefix("stasis-bench-")
            .tempdir_in(dir)?,
        None => tempfile::Builder::new().prefix("stasis-bench-").tempdir()?,
    };
    let ctx = Ctx {
        rt: tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?,
        budget: Budget::new(options.quick),
        town: format!("bench-{}", random_hex(4)?),
        native_dir: tmp.path().join("native"),
        native_runs: Cell::new(0),
    };
    let mut results = Results::not_run();

    let peer_server = if options.peer {
        let data_dir = tmp.path().join("peer-data");
        std::fs::create_dir_all(&data_dir)?;
        eprintln!(
            "starting the peer (node {}/server.mjs)",
            options.peer_dir.display()
        );
        PeerServer::start(
            &options.node,
            &options.peer_dir,
            &data_dir,
            &tmp.path().join("peer.log"),
        )
        .map_err(|error| Missing::Failed(format!("the peer did not start: {error:#}")))
    } else {
        Err(Missing::Skipped("--no-peer".to_owned()))
    };
    let peer: Target = peer_server
        .as_ref()
        .map(|p| Arc::clone(p.endpoint()))
        .map_err(Clone::clone);

    match &options.url {
        Some((url, token)) => {
            let stasis: Target = Ok(Endpoint::new(url, token.as_deref())?);
            main_workloads(&ctx, &stasis, &peer, &mut results);
            let why = Missing::Skipped("needs a spawned host".to_owned());
            results.starts = Err(why.clone());
            results.latency_os = Err(why.clone());
            results.native_commit_os = Err(why);
        }
        None => spawned(&ctx, options, tmp.path(), &peer, &mut results)?,
    }

    if let Ok(peer) = peer_server
        && let Err(error) = peer.stop()
    {
        eprintln!("stopping the peer: {error:#}");
    }
    Ok(results)
}

/// The run against hosts the bench starts itself: the main workloads on a
/// `--durability fsync` host, then restarts, then a `--durability os` host.
fn spawned(
    ctx: &Ctx,
    options: &Options,
    tmp: &Path,
    peer: &Target,
    results: &mut Results,
) -> Result<()> {
    let secret = random_hex(32)?;
    let config = |name: &str, durability| -> Result<HostConfig> {
        let data_dir = tmp.join(name);
        std::fs::create_dir_all(&data_dir)?;
        Ok(HostConfig {
            bin: options.stasis_bin.clone(),
            data_dir,
            durability,
            secret: secret.clone(),
            log: tmp.join(format!("{name}.log")),
        })
    };

    let fsync = config("stasis-fsync", HostDurability::Fsync)?;
    let host = start_host(ctx, &fsync);
    let stasis: Target = host
        .as_ref()
        .map(|h| Arc::clone(h.endpoint()))
        .map_err(Clone::clone);
    main_workloads(ctx, &stasis, peer, results);
    stop_host(host);

    // Restarts reuse the data folder the main workloads filled.
    let probe = ctx.agent("latency");
    results.starts = stasis.and_then(|_| {
        step("stasis: host starts (warm cache)", || {
            ctx.rt
                .block_on(startup::starts(&fsync, &probe, ctx.budget.starts))
        })
    });

    let os = config("stasis-os", HostDurability::Os)?;
    results.native_commit_os = ctx.native("native: one-row commits, synchronous=NORMAL", |dir| {
        native::single_row_commits(dir, SMALL, Durability::Os, ctx.budget.native_latency)
    });
    let host = start_host(ctx, &os);
    let stasis: Target = host
        .as_ref()
        .map(|h| Arc::clone(h.endpoint()))
        .map_err(Clone::clone);
    results.latency_os = ctx.on(
        &stasis,
        "stasis: single appends, --durability os",
        async |ep| latency::appends(ep, &ctx.agent("latency-os"), SMALL, ctx.budget.latency).await,
    );
    stop_host(host);
    Ok(())
}

fn start_host(ctx: &Ctx, config: &HostConfig) -> Result<StasisHost, Missing> {
    eprintln!(
        "starting {} serve --durability {}",
        config.bin.display(),
        config.durability.flag()
    );
    ctx.rt
        .block_on(StasisHost::start(config))
        .map_err(|error| Missing::Failed(format!("the host did not start: {error:#}")))
}

fn stop_host(host: Result<StasisHost, Missing>) {
    if let Ok(host) = host
        && let Err(error) = host.stop()
    {
        eprintln!("stopping the host: {error:#}");
    }
}

/// Every workload that needs only a base URL and a token, each beside its
/// baseline or peer figure.
fn main_workloads(ctx: &Ctx, stasis: &Target, peer: &Target, r: &mut Results) {
    let budget = ctx.budget;
    let agents = |prefix: &str, count: usize| -> Vec<Log> {
        (0..count)
            .map(|k| ctx.agent(&format!("{prefix}-{k}")))
            .collect()
    };

    r.native_inserts_16 = ctx.native("native: 100-row transactions, 16 files", |dir| {
        native::batched_inserts(
            dir,
            CONNS,
            BATCH,
            SMALL,
            Durability::Fsync,
            budget.native_throughput,
        )
    });
    r.batches_16_agents = ctx.on(stasis, "stasis: 100-event batches, 16 agents", async |ep| {
        throughput::appends(ep, &agents("tput", CONNS), BATCH, SMALL, budget.throughput).await
    });
    r.native_inserts_1 = ctx.native("native: 100-row transactions, 1 file", |dir| {
        native::batched_inserts(
            dir,
            1,
            BATCH,
            SMALL,
            Durability::Fsync,
            budget.native_throughput,
        )
    });
    r.batches_1_agent = ctx.on(stasis, "stasis: 100-event batches, 1 agent", async |ep| {
        let shared = vec![ctx.agent("tput-shared"); CONNS];
        throughput::appends(ep, &shared, BATCH, SMALL, budget.throughput).await
    });

    r.native_fdatasync = ctx.native("native: write + fdatasync", |dir| {
        native::write_fdatasync(dir, SMALL, budget.native_latency)
    });
    r.native_commit_fsync = ctx.native("native: one-row commits, synchronous=FULL", |dir| {
        native::single_row_commits(dir, SMALL, Durability::Fsync, budget.native_latency)
    });
    r.latency_fsync = ctx.on(
        stasis,
        "stasis: single appends, --durability fsync",
        async |ep| latency::appends(ep, &ctx.agent("latency"), SMALL, budget.latency).await,
    );

    for (size, label) in [(SMALL, "100 B"), (LARGE, "1000 B")] {
        let name = format!("catchup-{size}");
        let read = async |ep: &Arc<Endpoint>, log: Log| -> Result<Latency> {
            catchup::fill(ep, &log, CATCH_UP, size).await?;
            catchup::reads(ep, &log, CATCH_UP, budget.reads).await
        };
        let ours = ctx.on(
            stasis,
            &format!("stasis: catch-up read, {label}"),
            async |ep| read(ep, ctx.agent(&name)).await,
        );
        let theirs = ctx.on(peer, &format!("peer: catch-up read, {label}"), async |ep| {
            read(ep, Log::peer(&name)).await
        });
        if size == SMALL {
            (r.read_small, r.peer_read_small) = (ours, theirs);
        } else {
            (r.read_large, r.peer_read_large) = (ours, theirs);
        }
    }

    r.sse = ctx.on(stasis, "stasis: SSE append-to-delivery", async |ep| {
        sse::delivery(ep, &ctx.agent("sse"), SMALL, budget.sse).await
    });
    r.peer_sse = ctx.on(peer, "peer: SSE append-to-delivery", async |ep| {
        sse::delivery(ep, &Log::peer("sse"), SMALL, budget.sse).await
    });

    (r.comparison, r.peer_comparison) = comparison(ctx, stasis, peer);
}

/// The four comparison workloads, each on stasis then on the peer.
fn comparison(ctx: &Ctx, stasis: &Target, peer: &Target) -> (Comparison, Comparison) {
    let budget = ctx.budget;
    let shapes: [(&str, &str, usize, usize, Bounds); 4] = [
        ("single-c1", "1 per request, 1 conn", 1, 1, budget.single),
        (
            "single-c16",
            "1 per request, 16 conns",
            CONNS,
            1,
            budget.single,
        ),
        (
            "batch-c1",
            "100 per request, 1 conn",
            1,
            BATCH,
            budget.batches,
        ),
        (
            "batch-c16",
            "100 per request, 16 conns",
            CONNS,
            BATCH,
            budget.batches,
        ),
    ];
    let mut ours: Vec<Measured<Rate>> = Vec::new();
    let mut theirs: Vec<Measured<Rate>> = Vec::new();
    for (name, what, conns, batch, bounds) in shapes {
        let names = (0..conns)
            .map(|k| format!("{name}-{k}"))
            .collect::<Vec<_>>();
        ours.push(
            ctx.on(stasis, &format!("stasis: 1000 B, {what}"), async |ep| {
                let logs: Vec<Log> = names.iter().map(|n| ctx.agent(n)).collect();
                throughput::appends(ep, &logs, batch, LARGE, bounds).await
            }),
        );
        theirs.push(ctx.on(peer, &format!("peer: 1000 B, {what}"), async |ep| {
            let logs: Vec<Log> = names.iter().map(|n| Log::peer(n)).collect();
            throughput::appends(ep, &logs, batch, LARGE, bounds).await
        }));
    }
    (into_comparison(ours), into_comparison(theirs))
}

fn into_comparison(mut figures: Vec<Measured<Rate>>) -> Comparison {
    let mut next = || {
        if figures.is_empty() {
            Err(Missing::Skipped("not run".to_owned()))
        } else {
            figures.remove(0)
        }
    };
    Comparison {
        single_c1: next(),
        single_c16: next(),
        batch_c1: next(),
        batch_c16: next(),
    }
}

/// Runs one workload, saying so on stderr; an error becomes its text.
fn step<T>(what: &str, body: impl FnOnce() -> Result<T>) -> Measured<T> {
    eprintln!("  {what} …");
    let started = std::time::Instant::now();
    let result = body().map_err(|error| Missing::Failed(format!("{error:#}")));
    match &result {
        Ok(_) => eprintln!("    done in {:.1} s", started.elapsed().as_secs_f64()),
        Err(error) => eprintln!("    FAILED: {error:?}"),
    }
    result
}
