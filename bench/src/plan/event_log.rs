//! The event-log workloads (appends, latency, catch-up reads, SSE, the peer
//! comparison, `/healthz`), each on the host beside its baseline or peer
//! figure, then on the edge.

use super::{
    BATCH, CATCH_UP, CONNS, LARGE, SMALL, Server, Target, ctx::Ctx, state::state_workloads,
};
use crate::{
    client::{Call, Endpoint},
    logs::Log,
    native,
    results::{Comparison, Measured, Missing, Results, Work},
    stats::{Latency, Rate},
    workloads::{Bounds, catchup, latency, sse, throughput},
};
use stasis_sqlite::Durability;
use std::sync::Arc;

/// Every workload that needs only a base URL and a token, each beside its
/// baseline or peer figure, then on the edge.
pub(super) fn main_workloads(
    ctx: &Ctx,
    host: &Server,
    edge: &Server,
    peer: &Target,
    r: &mut Results,
) {
    batched_appends(ctx, host, edge, r);
    single_appends(ctx, host, edge, r);
    catch_up_reads(ctx, host, edge, peer, r);

    let budget = ctx.budget;
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

/// 100-event batches over 16 connections, to 16 agents then to one, each
/// after its native baseline.
fn batched_appends(ctx: &Ctx, host: &Server, edge: &Server, r: &mut Results) {
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
}

/// Single-event appends at concurrency 1, after their native baselines.
fn single_appends(ctx: &Ctx, host: &Server, edge: &Server, r: &mut Results) {
    let budget = ctx.budget;
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
}

/// Catch-up reads of 10,000 events of 100 B and of 1000 B: host, peer, edge.
fn catch_up_reads(ctx: &Ctx, host: &Server, edge: &Server, peer: &Target, r: &mut Results) {
    let budget = ctx.budget;
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
