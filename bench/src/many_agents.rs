//! `stasis-bench --many-agents N`: the host's descriptors and resident set
//! while N agents are each touched once, on a host the bench spawns
//! (`--durability os`: the figures are about open objects, not fsync).
//! Prints a table of samples; the main benchmark does not run.

use crate::{
    report::thousands_sep,
    server::{HostConfig, HostDurability, StasisHost, random_hex},
    workloads::{
        Bounds,
        many_agents::{Sample, touch_once},
    },
};
use anyhow::{Context, Result};
use std::{
    fmt::Write as _,
    path::{Path, PathBuf},
    time::Duration,
};

/// Connections the appends share.
const CONNS: usize = 16;
/// Samples along the way (besides the start, the end and after settling).
const SAMPLES: u64 = 20;
/// The longest the appends may take.
const TIME_LIMIT: Duration = Duration::from_secs(3600);
/// How long after the last append the host is read once more (objects
/// are closed off the request path).
const SETTLE: Duration = Duration::from_secs(2);

/// What `--many-agents` runs against.
pub struct ManyAgents {
    /// The `stasis` binary.
    pub bin: PathBuf,
    /// Agents to touch.
    pub agents: u64,
    /// `--max-open-objects` for the host (its default when `None`).
    pub max_open_objects: Option<usize>,
    /// Where the host's data folder goes (removed afterwards).
    pub tmp_dir: Option<PathBuf>,
}

/// Spawns a host, touches the agents and prints the samples.
pub fn run(options: &ManyAgents) -> Result<()> {
    let tmp = match &options.tmp_dir {
        Some(dir) => tempfile::Builder::new()
            .prefix("stasis-bench-")
            .tempdir_in(dir)?,
        None => tempfile::Builder::new().prefix("stasis-bench-").tempdir()?,
    };
    let config = host_config(options, tmp.path())?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let samples = runtime.block_on(async {
        let host = StasisHost::start(&config).await?;
        let pid = host.pid().context("the host has no pid")?;
        let every = (options.agents / SAMPLES).max(1);
        let bounds = Bounds {
            count: options.agents,
            time: TIME_LIMIT,
        };
        let town = format!("many-{}", random_hex(4)?);
        let samples = touch_once(host.endpoint(), pid, &town, CONNS, every, SETTLE, bounds)
            .await
            .with_context(|| format!("the host's log ends:\n{}", host.log_tail()))?;
        host.stop()?;
        anyhow::Ok(samples)
    })?;
    println!("{}", table(options, &samples));
    Ok(())
}

fn host_config(options: &ManyAgents, tmp: &Path) -> Result<HostConfig> {
    let data_dir = tmp.join("stasis-many");
    std::fs::create_dir_all(&data_dir)?;
    let extra_args = options
        .max_open_objects
        .map(|cap| vec!["--max-open-objects".to_owned(), cap.to_string()])
        .unwrap_or_default();
    Ok(HostConfig {
        bin: options.bin.clone(),
        data_dir,
        durability: HostDurability::Os,
        secret: random_hex(32)?,
        log: tmp.join("stasis-many.log"),
        extra_args,
    })
}

fn table(options: &ManyAgents, samples: &[Sample]) -> String {
    let cap = options
        .max_open_objects
        .map_or_else(|| "its default".to_owned(), |cap| cap.to_string());
    let mut out = format!(
        "{} agents touched once ({CONNS} connections), --max-open-objects {cap}\n\n\
         | agents | descriptors | RSS (MiB) | elapsed (s) |\n|---:|---:|---:|---:|\n",
        thousands_sep(usize::try_from(options.agents).unwrap_or(usize::MAX))
    );
    for sample in samples {
        let _ = writeln!(
            out,
            "| {} | {} | {:.1} | {:.1} |",
            thousands_sep(usize::try_from(sample.agents).unwrap_or(usize::MAX)),
            sample.fds,
            sample.rss_kib as f64 / 1024.0,
            sample.elapsed.as_secs_f64()
        );
    }
    out
}
