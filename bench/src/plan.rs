//! The run: which workload goes against what, in which order, within which
//! bounds. The peer, each baseline and the edge (`wrangler dev`) run right
//! beside the host workload they are compared with, so that a busy machine
//! skews both alike. A failing workload is recorded and the run goes on.

use crate::{
    client::{Call, Conn, Endpoint},
    cpu::{self, CpuUse, Procs},
    logs::Log,
    native,
    peer::PeerServer,
    report::size,
    results::{Comparison, Measured, Missing, Results, Side, Work},
    server::{HostConfig, HostDurability, StasisHost, random_hex},
    stats::{Latency, Rate},
    workloads::{
        Bounds, catchup,
        conversation::{self, Rebuilds},
        latency, memory, push,
        push::Pushes,
        recovery::{self, Recoveries},
        snapshot, sse, startup, throughput,
    },
};
use anyhow::{Result, anyhow};
use bytes::Bytes;
use stasis_sqlite::Durability;
use std::{
    cell::{Cell, RefCell},
    collections::BTreeMap,
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
    /// The edge worker under `wrangler dev --local`, if it is to be run.
    pub edge: Option<EdgeTarget>,
}

/// A running `wrangler dev --local` serving the edge worker.
#[derive(Debug, Clone)]
pub struct EdgeTarget {
    /// Its base URL (loopback).
    pub url: String,
    /// An admin token for it.
    pub token: String,
    /// Its process group, to charge CPU time to (optional).
    pub pgid: Option<u32>,
}

/// A stasis runtime to run workloads on: where it serves, and which
/// processes its CPU time is read from.
struct Server {
    side: Side,
    target: Target,
    procs: Option<Procs>,
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
    /// `GET /healthz` round trips.
    pub healthz: Bounds,
    /// Snapshot PUT + GET rounds.
    pub round_trips: Bounds,
    /// The native write + fsync + read rounds.
    pub native_snapshot: Bounds,
    /// `snapshot push` rounds.
    pub pushes: Bounds,
    /// Bytes of the live database pushed.
    pub push_db_bytes: u64,
    /// Conversation rebuild rounds.
    pub rebuilds: Bounds,
    /// Recoveries.
    pub recoveries: Bounds,
    /// Bytes of each agent's kilo.db in a recovery.
    pub recovery_bytes: usize,
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
                healthz: Bounds::new(2000, 1),
                round_trips: Bounds::new(2, 20),
                native_snapshot: Bounds::new(2, 10),
                pushes: Bounds::new(2, 20),
                push_db_bytes: 5_000_000,
                rebuilds: Bounds::new(3, 10),
                recoveries: Bounds::new(1, 60),
                recovery_bytes: 4_000_000,
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
                healthz: Bounds::new(20_000, 3),
                round_trips: Bounds::new(5, 60),
                native_snapshot: Bounds::new(5, 30),
                pushes: Bounds::new(5, 60),
                push_db_bytes: push::DB_BYTES,
                rebuilds: Bounds::new(10, 30),
                recoveries: Bounds::new(3, 120),
                recovery_bytes: recovery::SNAPSHOT_BYTES,
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
    scratch_dir: PathBuf,
    cpu: RefCell<BTreeMap<(Side, Work), CpuUse>>,
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

    /// Runs `work` on a stasis runtime, recording the CPU time its
    /// processes and the bench used meanwhile.
    fn measure<T>(
        &self,
        server: &Server,
        id: Work,
        what: &str,
        work: impl AsyncFnOnce(&Arc<Endpoint>) -> Result<T>,
    ) -> Measured<T> {
        let endpoint = server.target.as_ref().map_err(Clone::clone)?;
        let procs = server.procs.as_ref();
        let before = cpu::Snapshot::take(procs);
        let result = step(&format!("{}: {what}", server.side.name()), || {
            self.rt.block_on(work(endpoint))
        });
        if result.is_ok() {
            self.cpu
                .borrow_mut()
                .insert((server.side, id), before.usage(procs));
        }
        result
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

    /// The path of `agent` (rig `r`) in this run's town.
    fn agent_path(&self, agent: &str) -> String {
        format!("/api/towns/{}/rigs/r/agents/{agent}", self.town)
    }

    /// A new empty folder for a workload's files.
    fn scratch(&self, name: &str) -> Result<PathBuf, Missing> {
        let dir = self.scratch_dir.join(name);
        std::fs::create_dir_all(&dir)
            .map_err(|error| Missing::Failed(format!("creating {}: {error}", dir.display())))?;
        Ok(dir)
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
        scratch_dir: tmp.path().join("scratch"),
        cpu: RefCell::new(BTreeMap::new()),
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

    let edge = edge_server(&ctx, options.edge.as_ref());

    match &options.url {
        Some((url, token)) => {
            let stasis = Server {
                side: Side::Host,
                target: Ok(Endpoint::new(url, token.as_deref())?),
                procs: None,
            };
            main_workloads(&ctx, &stasis, &edge, &peer, &mut results);
            let why = Missing::Skipped("needs a spawned host".to_owned());
            results.starts = Err(why.clone());
            results.peak_rss = Err(why.clone());
            results.latency_os = Err(why.clone());
            results.native_commit_os = Err(why);
        }
        None => spawned(&ctx, options, tmp.path(), &edge, &peer, &mut results)?,
    }
    results.cpu = ctx.cpu.take();

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
    edge: &Server,
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
    let stasis = Server {
        side: Side::Host,
        target: host
            .as_ref()
            .map(|h| Arc::clone(h.endpoint()))
            .map_err(Clone::clone),
        procs: host.as_ref().ok().and_then(StasisHost::pid).map(Procs::Pid),
    };
    main_workloads(ctx, &stasis, edge, peer, results);
    stop_host(host);

    // A fresh host, so that its peak memory is the PUT's.
    let rss = config("stasis-rss", HostDurability::Fsync)?;
    results.peak_rss = step(
        &format!(
            "stasis: peak RSS during one {} PUT (fresh host)",
            size(memory::LARGEST as u64)
        ),
        || {
            ctx.rt.block_on(memory::peak_rss(
                &rss,
                &ctx.agent_path("rss"),
                memory::LARGEST,
            ))
        },
    );

    // Restarts reuse the data folder the main workloads filled.
    let probe = ctx.agent("latency");
    results.starts = stasis.target.and_then(|_| {
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

/// The edge as a [`Server`]: checked to answer `/healthz` and to accept
/// the token before any workload runs, so that a missing dev server fails
/// once, plainly.
fn edge_server(ctx: &Ctx, edge: Option<&EdgeTarget>) -> Server {
    let Some(edge) = edge else {
        return Server {
            side: Side::Edge,
            target: Err(Missing::Skipped("no --edge-url".to_owned())),
            procs: None,
        };
    };
    let target = Endpoint::new(&edge.url, Some(&edge.token))
        .and_then(|endpoint| {
            ctx.rt.block_on(check_edge(&endpoint, &ctx.town))?;
            Ok(endpoint)
        })
        .map_err(|error| Missing::Failed(format!("the edge at {}: {error:#}", edge.url)));
    let procs = match (&target, edge.pgid) {
        (Ok(endpoint), Some(pgid)) => Some(Procs::Group {
            pgid,
            port: endpoint.port(),
        }),
        _ => None,
    };
    Server {
        side: Side::Edge,
        target,
        procs,
    }
}

async fn check_edge(endpoint: &Arc<Endpoint>, town: &str) -> Result<()> {
    let mut conn = Conn::open(endpoint).await?;
    conn.expect_ok(&Call::get("/healthz")).await?;
    // A read of an agent with no events: 2xx only with a token it accepts.
    let probe = Log::stasis(town, "edge-probe").read_from_start(1);
    conn.expect_ok(&probe)
        .await
        .map(drop)
        .map_err(|error| error.context("is --edge-secret the worker's STASIS_SECRET?"))
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
/// baseline or peer figure, then on the edge.
fn main_workloads(ctx: &Ctx, host: &Server, edge: &Server, peer: &Target, r: &mut Results) {
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
    let batches_16 = async |ep: &Arc<Endpoint>| {
        throughput::appends(ep, &agents("tput", CONNS), BATCH, SMALL, budget.throughput).await
    };
    let what = "100-event batches, 16 agents";
    r.batches_16_agents = ctx.measure(host, Work::Batches16, what, batches_16);
    r.edge.batches_16_agents = ctx.measure(edge, Work::Batches16, what, batches_16);

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
    let batches_1 = async |ep: &Arc<Endpoint>| {
        let shared = vec![ctx.agent("tput-shared"); CONNS];
        throughput::appends(ep, &shared, BATCH, SMALL, budget.throughput).await
    };
    let what = "100-event batches, 1 agent";
    r.batches_1_agent = ctx.measure(host, Work::Batches1, what, batches_1);
    r.edge.batches_1_agent = ctx.measure(edge, Work::Batches1, what, batches_1);

    r.native_fdatasync = ctx.native("native: write + fdatasync", |dir| {
        native::write_fdatasync(dir, SMALL, budget.native_latency)
    });
    r.native_commit_fsync = ctx.native("native: one-row commits, synchronous=FULL", |dir| {
        native::single_row_commits(dir, SMALL, Durability::Fsync, budget.native_latency)
    });
    let singles = async |ep: &Arc<Endpoint>| {
        latency::appends(ep, &ctx.agent("latency"), SMALL, budget.latency).await
    };
    r.latency_fsync = ctx.measure(
        host,
        Work::Latency,
        "single appends, --durability fsync",
        singles,
    );
    r.edge.latency = ctx.measure(edge, Work::Latency, "single appends", singles);

    for (size, label, id) in [
        (SMALL, "100 B", Work::ReadSmall),
        (LARGE, "1000 B", Work::ReadLarge),
    ] {
        let name = format!("catchup-{size}");
        // Filling is not timed nor charged: only the reads are.
        let read = |server: &Server| -> Measured<Latency> {
            let log = ctx.agent(&name);
            let fill = format!(
                "{}: fill for the catch-up read, {label}",
                server.side.name()
            );
            ctx.on(&server.target, &fill, async |ep| {
                catchup::fill(ep, &log, CATCH_UP, size).await
            })?;
            ctx.measure(server, id, &format!("catch-up read, {label}"), async |ep| {
                catchup::reads(ep, &log, CATCH_UP, budget.reads).await
            })
        };
        let ours = read(host);
        let theirs = ctx.on(peer, &format!("peer: catch-up read, {label}"), async |ep| {
            let log = Log::peer(&name);
            catchup::fill(ep, &log, CATCH_UP, size).await?;
            catchup::reads(ep, &log, CATCH_UP, budget.reads).await
        });
        let edge_read = read(edge);
        if size == SMALL {
            (r.read_small, r.peer_read_small, r.edge.read_small) = (ours, theirs, edge_read);
        } else {
            (r.read_large, r.peer_read_large, r.edge.read_large) = (ours, theirs, edge_read);
        }
    }

    let deliveries =
        async |ep: &Arc<Endpoint>| sse::delivery(ep, &ctx.agent("sse"), SMALL, budget.sse).await;
    r.sse = ctx.measure(host, Work::Sse, "SSE append-to-delivery", deliveries);
    r.peer_sse = ctx.on(peer, "peer: SSE append-to-delivery", async |ep| {
        sse::delivery(ep, &Log::peer("sse"), SMALL, budget.sse).await
    });
    r.edge.sse = ctx.measure(edge, Work::Sse, "SSE append-to-delivery", deliveries);

    (r.comparison, r.peer_comparison, r.edge.comparison) = comparison(ctx, host, edge, peer);

    let healthz = async |ep: &Arc<Endpoint>| {
        latency::requests(ep, &Call::get("/healthz"), budget.healthz).await
    };
    r.host_healthz = ctx.measure(host, Work::Healthz, "GET /healthz", healthz);
    r.edge.healthz = ctx.measure(edge, Work::Healthz, "GET /healthz", healthz);

    state_workloads(ctx, host, edge, r);
}

/// Snapshots, `snapshot push`, the conversation rebuild and recovery, each
/// on the host then the edge, the native baselines right beside the host's.
fn state_workloads(ctx: &Ctx, host: &Server, edge: &Server, r: &mut Results) {
    let budget = ctx.budget;
    let body = Bytes::from(snapshot::random_bytes(snapshot::ROUND_TRIP_BYTES, 1));
    let bytes = size(body.len() as u64);
    r.native_round_trip = ctx.native(&format!("native: write + fsync + read of {bytes}"), |dir| {
        native::write_fsync_read(dir, &body, 0, budget.native_snapshot)
    });
    let round_trips = async |ep: &Arc<Endpoint>| {
        let path = ctx.agent_path("snapshot");
        snapshot::round_trips(ep, &path, &body, budget.round_trips).await
    };
    let what = format!("snapshot PUT + GET of {bytes}");
    r.state.round_trips = ctx.measure(host, Work::SnapshotRoundTrip, &what, round_trips);
    r.native_round_trip_hashed = ctx.native(
        &format!("native: write + fsync + read + 2 sha256 of {bytes}"),
        |dir| native::write_fsync_read(dir, &body, 2, budget.native_snapshot),
    );
    r.edge.state.round_trips = ctx.measure(edge, Work::SnapshotRoundTrip, &what, round_trips);
    drop(body);

    let db = ctx.native(
        &format!(
            "native: a live {} SQLite database",
            size(budget.push_db_bytes)
        ),
        |dir| push::live_database(dir, budget.push_db_bytes),
    );
    // Each push is followed by its baseline, a raw PUT of as many bytes by
    // the bench's client; only the pushes are charged CPU time.
    let push_then_put = |server: &Server| -> (Measured<Pushes>, Measured<Latency>) {
        let what = "snapshot push of a live database (stasis-client)";
        let pushed = ctx.measure(server, Work::Push, what, async |ep| {
            let db = db
                .as_ref()
                .map_err(|missing| anyhow!("no live database: {missing:?}"))?;
            push::pushes(ep, &ctx.town, "push", db, budget.pushes).await
        });
        let raw = match &pushed {
            Ok(p) => {
                let what = format!("{}: raw PUT of {}", server.side.name(), size(p.size));
                ctx.on(&server.target, &what, async |ep| {
                    let body = Bytes::from(snapshot::random_bytes(usize::try_from(p.size)?, 5));
                    snapshot::puts(ep, &ctx.agent_path("push-raw"), &body, budget.pushes).await
                })
            }
            Err(missing) => Err(missing.clone()),
        };
        (pushed, raw)
    };
    (r.state.push, r.state.push_raw) = push_then_put(host);
    (r.edge.state.push, r.edge.state.push_raw) = push_then_put(edge);
    drop(db);

    let session = "ses-main";
    let stream = conversation::stream(conversation::EVENTS, session);
    // The rebuilds are charged CPU time; their baseline, the plain read of
    // the same events, follows them.
    let rebuilds = |server: &Server| -> (Measured<Rebuilds>, Measured<Latency>) {
        let path = ctx.agent_path("conversation");
        let side = server.side.name();
        let fill = format!(
            "{side}: fill {} streamed message events",
            stream.events.len()
        );
        if let Err(missing) = ctx.on(&server.target, &fill, async |ep| {
            conversation::fill(ep, &path, &stream, session).await
        }) {
            return (Err(missing.clone()), Err(missing));
        }
        let rebuilt = ctx.measure(
            server,
            Work::Conversation,
            "conversation rebuild",
            async |ep| conversation::rebuilds(ep, &path, &stream, budget.rebuilds).await,
        );
        let what = format!("{side}: plain read of the same events");
        let read = ctx.on(&server.target, &what, async |ep| {
            let log = ctx.agent("conversation");
            catchup::reads(ep, &log, stream.events.len(), budget.rebuilds).await
        });
        (rebuilt, read)
    };
    (r.state.conversation, r.state.conversation_read) = rebuilds(host);
    (r.edge.state.conversation, r.edge.state.conversation_read) = rebuilds(edge);

    let recoveries = |server: &Server| -> Measured<Recoveries> {
        let town = format!("{}-recovery", ctx.town);
        let side = server.side.name();
        let setup = format!(
            "{side}: container A (3 agents, {} kilo.db each, conversation, checkpoint)",
            size(budget.recovery_bytes as u64)
        );
        let mut prepared = ctx.on(&server.target, &setup, async |ep| {
            recovery::prepare(ep, &town, budget.recovery_bytes).await
        })?;
        let root = ctx.scratch(&format!("recovery-{side}"))?;
        let what = "recovery: heartbeat to every kilo.db verified + the Mayor's dispatch";
        ctx.measure(server, Work::Recovery, what, async |ep| {
            recovery::recoveries(ep, &mut prepared, &root, budget.recoveries).await
        })
    };
    r.state.recovery = recoveries(host);
    r.edge.state.recovery = recoveries(edge);
}

/// The four comparison workloads, each on the host, the peer, then the
/// edge.
fn comparison(
    ctx: &Ctx,
    host: &Server,
    edge: &Server,
    peer: &Target,
) -> (Comparison, Comparison, Comparison) {
    let budget = ctx.budget;
    let shapes: [(&str, &str, Work, usize, usize, Bounds); 4] = [
        (
            "single-c1",
            "1 per request, 1 conn",
            Work::SingleC1,
            1,
            1,
            budget.single,
        ),
        (
            "single-c16",
            "1 per request, 16 conns",
            Work::SingleC16,
            CONNS,
            1,
            budget.single,
        ),
        (
            "batch-c1",
            "100 per request, 1 conn",
            Work::BatchC1,
            1,
            BATCH,
            budget.batches,
        ),
        (
            "batch-c16",
            "100 per request, 16 conns",
            Work::BatchC16,
            CONNS,
            BATCH,
            budget.batches,
        ),
    ];
    let mut ours: Vec<Measured<Rate>> = Vec::new();
    let mut theirs: Vec<Measured<Rate>> = Vec::new();
    let mut edges: Vec<Measured<Rate>> = Vec::new();
    for (name, what, id, conns, batch, bounds) in shapes {
        let names = (0..conns)
            .map(|k| format!("{name}-{k}"))
            .collect::<Vec<_>>();
        let appends = async |ep: &Arc<Endpoint>| {
            let logs: Vec<Log> = names.iter().map(|n| ctx.agent(n)).collect();
            throughput::appends(ep, &logs, batch, LARGE, bounds).await
        };
        let what = format!("1000 B, {what}");
        ours.push(ctx.measure(host, id, &what, appends));
        theirs.push(ctx.on(peer, &format!("peer: {what}"), async |ep| {
            let logs: Vec<Log> = names.iter().map(|n| Log::peer(n)).collect();
            throughput::appends(ep, &logs, batch, LARGE, bounds).await
        }));
        edges.push(ctx.measure(edge, id, &what, appends));
    }
    (
        into_comparison(ours),
        into_comparison(theirs),
        into_comparison(edges),
    )
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
