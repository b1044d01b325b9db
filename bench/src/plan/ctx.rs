//! What every workload runs with: the runtime, the bounds, the town, the
//! folders, the CPU figures so far; and how one workload is run and reported.

use super::{Budget, Server, Target};
use crate::{
    client::Endpoint,
    cpu::{self, CpuUse},
    logs::Log,
    results::{Measured, Missing, Side, Work},
};
use anyhow::Result;
use std::{
    cell::{Cell, RefCell},
    collections::BTreeMap,
    path::{Path, PathBuf},
    sync::Arc,
};
use tokio::runtime::Runtime;

/// What every workload needs: the runtime, the bounds, the town's name and
/// where the native baselines write.
pub(super) struct Ctx {
    pub(super) rt: Runtime,
    pub(super) budget: Budget,
    pub(super) town: String,
    pub(super) native_dir: PathBuf,
    pub(super) native_runs: Cell<u32>,
    pub(super) scratch_dir: PathBuf,
    pub(super) cpu: RefCell<BTreeMap<(Side, Work), CpuUse>>,
}

impl Ctx {
    /// Runs `work` on `target`, or passes on why there is no target.
    pub(super) fn on<T>(
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
    pub(super) fn measure<T>(
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
    pub(super) fn native<T>(
        &self,
        what: &str,
        work: impl FnOnce(&Path) -> Result<T>,
    ) -> Measured<T> {
        let run = self.native_runs.get() + 1;
        self.native_runs.set(run);
        let dir = self.native_dir.join(run.to_string());
        step(what, || {
            std::fs::create_dir_all(&dir)?;
            work(&dir)
        })
    }

    /// The log of `agent` in this run's town.
    pub(super) fn agent(&self, agent: &str) -> Log {
        Log::stasis(&self.town, agent)
    }

    /// The path of `agent` (rig `r`) in this run's town.
    pub(super) fn agent_path(&self, agent: &str) -> String {
        format!("/api/towns/{}/rigs/r/agents/{agent}", self.town)
    }

    /// A new empty folder for a workload's files.
    pub(super) fn scratch(&self, name: &str) -> Result<PathBuf, Missing> {
        let dir = self.scratch_dir.join(name);
        std::fs::create_dir_all(&dir)
            .map_err(|error| Missing::Failed(format!("creating {}: {error}", dir.display())))?;
        Ok(dir)
    }
}

/// Runs one workload, saying so on stderr; an error becomes its text.
pub(super) fn step<T>(what: &str, body: impl FnOnce() -> Result<T>) -> Measured<T> {
    eprintln!("  {what} …");
    let started = std::time::Instant::now();
    let result = body().map_err(|error| Missing::Failed(format!("{error:#}")));
    match &result {
        Ok(_) => eprintln!("    done in {:.1} s", started.elapsed().as_secs_f64()),
        Err(error) => eprintln!("    FAILED: {error:?}"),
    }
    result
}
