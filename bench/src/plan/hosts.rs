//! The hosts the bench spawns itself: the `--durability fsync` host the main
//! workloads run on, the fresh host of the peak-memory figure, the restarts,
//! then the `--durability os` host.

use super::{
    Options, SMALL, Server, Target,
    ctx::{Ctx, step},
    event_log::main_workloads,
    state::state_workloads,
};
use crate::{
    cpu::Procs,
    native,
    report::size,
    results::{Measured, Missing, Results, Side},
    server::{HostConfig, HostDurability, StasisHost, random_hex},
    workloads::{latency, memory, startup, summaries},
};
use anyhow::Result;
use stasis_kilo_harness::{FakeModel, Reply, Script};
use stasis_sqlite::Durability;
use std::{path::Path, sync::Arc};

/// The run against hosts the bench starts itself: the main workloads on a
/// `--durability fsync` host, then restarts, then a `--durability os` host.
pub(super) fn spawned(
    ctx: &Ctx,
    options: &Options,
    tmp: &Path,
    edge: &Server,
    peer: &Target,
    results: &mut Results,
) -> Result<()> {
    let configs = Configs {
        bin: options.stasis_bin.clone(),
        tmp,
        secret: random_hex(32)?,
    };
    let fsync = configs.config("stasis-fsync", HostDurability::Fsync)?;
    let host = start_host(ctx, &fsync);
    let stasis = Server {
        side: Side::Host,
        target: host
            .as_ref()
            .map(|h| Arc::clone(h.endpoint()))
            .map_err(Clone::clone),
        procs: host.as_ref().ok().and_then(StasisHost::pid).map(Procs::Pid),
    };
    if options.only_snapshots {
        state_workloads(ctx, &stasis, edge, results);
    } else {
        main_workloads(ctx, &stasis, edge, peer, results);
    }
    results.summary_dispatch = summary_dispatches(ctx, &configs, &stasis.target);
    stop_host(host);

    // A fresh host, so that its peak memory is the PUT's.
    let rss = configs.config("stasis-rss", HostDurability::Fsync)?;
    results.peak_rss = step(
        &format!(
            "stasis: peak RSS during one {} PUT and GET (fresh host)",
            size(ctx.budget.rss_bytes as u64)
        ),
        || {
            ctx.rt.block_on(memory::peak_rss(
                &rss,
                &ctx.agent_path("rss"),
                ctx.budget.rss_bytes,
            ))
        },
    );
    if options.only_snapshots {
        return Ok(());
    }
    // Restarts reuse the data folder the main workloads filled.
    let probe = ctx.agent("latency");
    results.starts = stasis.target.and_then(|_| {
        step("stasis: host starts (warm cache)", || {
            ctx.rt
                .block_on(startup::starts(&fsync, &probe, ctx.budget.starts))
        })
    });
    durability_os(ctx, &configs, results)
}

/// The Mayor's dispatch on a host with the fake summariser (its summary
/// cached) against the same on `plain`, a host with none.
fn summary_dispatches(
    ctx: &Ctx,
    configs: &Configs<'_>,
    plain: &Target,
) -> Measured<summaries::SummaryDispatches> {
    let plain = plain.as_ref().map_err(Clone::clone)?;
    let model = step("the fake summariser", || {
        FakeModel::start(Script::new().otherwise(Reply::text("Summary of the earlier turns.")))
    })?;
    let mut config = configs
        .config("stasis-summariser", HostDurability::Fsync)
        .map_err(|error| Missing::Failed(format!("{error:#}")))?;
    config.extra_args = [
        "--summariser-url",
        &model.base_url(),
        "--summariser-model",
        "fake",
    ]
    .map(str::to_owned)
    .to_vec();
    let host = start_host(ctx, &config);
    let path = ctx.agent_path("summarised-mayor");
    let measured = host.as_ref().map_err(Clone::clone).and_then(|summarised| {
        let what = format!("both hosts: a Mayor with {} user turns", summaries::TURNS);
        ctx.on(&Ok(Arc::clone(summarised.endpoint())), &what, async |ep| {
            summaries::fill(ep, &path).await?;
            summaries::fill(plain, &path).await
        })?;
        let what = "stasis: dispatches with a cached summary, then without a summariser";
        ctx.on(&Ok(Arc::clone(summarised.endpoint())), what, async |ep| {
            summaries::dispatches(ep, plain, &path, ctx.budget.summary_dispatches).await
        })
    });
    stop_host(host);
    model.stop();
    measured
}

/// The hosts' configs: one data folder and log per host, one secret.
struct Configs<'a> {
    bin: std::path::PathBuf,
    tmp: &'a Path,
    secret: String,
}

impl Configs<'_> {
    fn config(&self, name: &str, durability: HostDurability) -> Result<HostConfig> {
        let data_dir = self.tmp.join(name);
        std::fs::create_dir_all(&data_dir)?;
        Ok(HostConfig {
            bin: self.bin.clone(),
            data_dir,
            durability,
            secret: self.secret.clone(),
            log: self.tmp.join(format!("{name}.log")),
            extra_args: Vec::new(),
        })
    }
}

/// Single appends on a `--durability os` host, after their native baseline.
fn durability_os(ctx: &Ctx, configs: &Configs<'_>, results: &mut Results) -> Result<()> {
    let os = configs.config("stasis-os", HostDurability::Os)?;
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
