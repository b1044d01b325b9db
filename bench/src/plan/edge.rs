//! The edge worker under `wrangler dev --local` as a runtime to run
//! workloads on, checked before any of them runs.

use super::{EdgeTarget, Server, ctx::Ctx};
use crate::{
    client::{Call, Conn, Endpoint},
    cpu::Procs,
    logs::Log,
    results::{Missing, Side},
};
use anyhow::Result;
use std::sync::Arc;

/// The edge as a [`Server`]: checked to answer `/healthz` and to accept
/// the token before any workload runs, so that a missing dev server fails
/// once, plainly.
pub(super) fn edge_server(ctx: &Ctx, edge: Option<&EdgeTarget>) -> Server {
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
