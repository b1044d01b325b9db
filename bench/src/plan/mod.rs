//! The run: which workload goes against what, in which order, within which
//! bounds. The peer, each baseline and the edge (`wrangler dev`) run right
//! beside the host workload they are compared with, so that a busy machine
//! skews both alike. A failing workload is recorded and the run goes on.

mod budget;
mod ctx;
mod edge;
mod event_log;
mod hosts;
mod state;

pub use budget::Budget;

use crate::{
    client::Endpoint,
    cpu::Procs,
    peer::PeerServer,
    results::{Missing, Results, Side},
    server::random_hex,
};
use anyhow::Result;
use ctx::Ctx;
use std::{
    cell::{Cell, RefCell},
    collections::BTreeMap,
    path::PathBuf,
    sync::Arc,
};

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
    /// Only the snapshot workloads (`--only-snapshots`).
    pub only_snapshots: bool,
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

    let edge = edge::edge_server(&ctx, options.edge.as_ref());

    match &options.url {
        Some((url, token)) => {
            let stasis = Server {
                side: Side::Host,
                target: Ok(Endpoint::new(url, token.as_deref())?),
                procs: None,
            };
            if options.only_snapshots {
                state::state_workloads(&ctx, &stasis, &edge, &mut results);
            } else {
                event_log::main_workloads(&ctx, &stasis, &edge, &peer, &mut results);
            }
            let why = Missing::Skipped("needs a spawned host".to_owned());
            results.starts = Err(why.clone());
            results.peak_rss = Err(why.clone());
            results.latency_os = Err(why.clone());
            results.summary_dispatch = Err(why.clone());
            results.native_commit_os = Err(why);
        }
        None => hosts::spawned(&ctx, options, tmp.path(), &edge, &peer, &mut results)?,
    }
    results.cpu = ctx.cpu.take();

    if let Ok(peer) = peer_server
        && let Err(error) = peer.stop()
    {
        eprintln!("stopping the peer: {error:#}");
    }
    Ok(results)
}
