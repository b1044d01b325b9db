//! The state workloads: snapshots, `snapshot push`, the conversation rebuild
//! and recovery, each on the host then the edge.

use super::{Server, ctx::Ctx};
use crate::{
    client::Endpoint,
    native,
    report::size,
    results::{Measured, Results, Work},
    stats::Latency,
    workloads::{
        catchup,
        conversation::{self, Rebuilds},
        delta,
        push::{self, LiveDb, Pushes},
        recovery::{self, Recoveries},
        restore::{self, Pulls},
        snapshot,
    },
};
use anyhow::anyhow;
use bytes::Bytes;
use std::sync::Arc;

/// Snapshots, `snapshot push`, the conversation rebuild and recovery, each
/// on the host then the edge, the native baselines right beside the host's.
pub(super) fn state_workloads(ctx: &Ctx, host: &Server, edge: &Server, r: &mut Results) {
    round_trips(ctx, host, edge, r);
    pushes(ctx, host, edge, r);
    rebuilds(ctx, host, edge, r);
    recoveries(ctx, host, edge, r);
}

/// The 24 MiB PUT + GET, between its two native baselines.
fn round_trips(ctx: &Ctx, host: &Server, edge: &Server, r: &mut Results) {
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
}

/// `snapshot push` of a live database (whole, then by chunks), and the pulls.
fn pushes(ctx: &Ctx, host: &Server, edge: &Server, r: &mut Results) {
    let budget = ctx.budget;
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
    chunk_workloads(ctx, host, edge, &db, r);
    drop(db);
}

/// The conversation rebuild, against a plain read of the same events.
fn rebuilds(ctx: &Ctx, host: &Server, edge: &Server, r: &mut Results) {
    let budget = ctx.budget;
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
}

/// A new container's recovery.
fn recoveries(ctx: &Ctx, host: &Server, edge: &Server, r: &mut Results) {
    let budget = ctx.budget;
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

/// The chunked snapshot figures, host then edge: the delta push after one
/// turn of the live database (against the whole-file push of it), and the
/// pulls of it and of a 100 MB database (against a native copy).
fn chunk_workloads(
    ctx: &Ctx,
    host: &Server,
    edge: &Server,
    db: &Measured<LiveDb>,
    r: &mut Results,
) {
    let budget = ctx.budget;
    let live = || {
        db.as_ref()
            .map_err(|missing| anyhow!("no live database: {missing:?}"))
    };
    let deltas = |server: &Server| {
        let what = format!("{}: delta push after one turn", server.side.name());
        ctx.on(&server.target, &what, async |ep| {
            delta::delta_pushes(ep, &ctx.town, "delta", live()?, budget.deltas).await
        })
    };
    r.state.delta = deltas(host);
    r.edge.state.delta = deltas(edge);

    let large = ctx.native(
        &format!(
            "native: a {} SQLite database",
            size(budget.pull_large_bytes)
        ),
        |dir| push::live_database(dir, budget.pull_large_bytes),
    );
    let pulls = |server: &Server, source: &Measured<LiveDb>, name: &str| -> Measured<Pulls> {
        let side = server.side.name();
        let scratch = ctx.scratch(&format!("pull-{name}-{side}"))?;
        let what = format!("{side}: pull of the {name} database");
        ctx.on(&server.target, &what, async |ep| {
            let source = source
                .as_ref()
                .map_err(|missing| anyhow!("no database: {missing:?}"))?;
            let agent = format!("pull-{name}");
            restore::pulls(ep, &ctx.town, &agent, &source.path, &scratch, budget.pulls).await
        })
    };
    r.state.pull_small = pulls(host, db, "live");
    r.edge.state.pull_small = pulls(edge, db, "live");
    r.state.pull_large = pulls(host, &large, "large");
    r.edge.state.pull_large = pulls(edge, &large, "large");
}
