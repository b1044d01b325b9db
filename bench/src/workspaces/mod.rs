//! Workspaces (`stasis-client workspace push|pull`, in process) on a host the bench starts:
//!
//! - a synthetic tree (200 MB in 20,000 files; `--quick`: 20 MB in 2,000): the full save and
//!   the full restore (verified) against `tar c` and `tar x` of the same tree on the same disk,
//!   and a save after a one-file edit (bytes sent as a share of the tree, time against the full
//!   save); the same full save and restore against a second host that fsyncs nothing
//!   (`--durability os`, as `tar`), to show what the default host's fsyncs cost;
//! - this repository's tracked files (`git ls-files`: no `target/`, `node_modules/` or `.git`),
//!   copied: the full save against `tar c`, and a one-file edit's save;
//! - the host's peak resident set (`VmHWM`, reset before each) during the push and the pull of
//!   a tree ten times larger (2 GiB in 20,000 files; `--quick`: 200 MB) against those of the
//!   synthetic tree.
//!
//! Every figure beside its baseline from the same run. `--only-workspaces --record FILE`
//! rewrites the section between [`MARKS`].

mod trees;

use crate::report::{self, Marks, RunInfo};
use crate::server::{HostConfig, HostDurability, StasisHost, random_hex};
use crate::workloads::memory::status_kib;
use anyhow::{Context, Result, bail};
use stasis_client::workspace_sync::{self, PullOptions, PullOutcome, PushOptions, Pushed};
use stasis_client::{AgentRef, Client, Config};
use std::path::{Path, PathBuf};
use std::time::Duration;
use trees::Built;

/// Where the section goes in BENCHMARKS.md.
pub const MARKS: Marks = Marks {
    start: "<!-- bench:workspaces:start -->",
    end: "<!-- bench:workspaces:end -->",
    before: None,
};

/// One-file edits saved per tree; the table shows the median save.
const EDIT_ROUNDS: u64 = 5;

/// How the workload runs.
pub struct Options {
    /// The `stasis` binary.
    pub bin: PathBuf,
    /// Small trees.
    pub quick: bool,
    /// The repository whose tracked files make the real tree.
    pub repo: PathBuf,
    /// Where the temp folder goes.
    pub tmp_dir: Option<PathBuf>,
}

/// One line of the table.
pub struct Line {
    what: String,
    stasis: String,
    baseline: String,
    ratio: f64,
    aim: &'static str,
    met: bool,
}

/// Runs the workload; its table's lines.
pub fn run(options: &Options) -> Result<Vec<Line>> {
    let dir = match &options.tmp_dir {
        Some(dir) => tempfile::tempdir_in(dir)?,
        None => tempfile::tempdir()?,
    };
    let secret = random_hex(24)?;
    let config = HostConfig::in_folder(&options.bin, dir.path(), &secret);
    let runtime = tokio::runtime::Runtime::new()?;
    let host = runtime.block_on(StasisHost::start(&config))?;
    let pid = host.pid().context("the host has no pid")?;
    let token = crate::server::admin_token(&secret)?;
    let client = Client::new(Config::new(&host.endpoint().base_url(), Some(token))?);
    let side = Side {
        client: &client,
        pid,
        dir: dir.path(),
    };
    let (files, bytes, big) = if options.quick {
        (2_000, 20_000_000, 200_000_000)
    } else {
        (20_000, 200_000_000, 2 << 30)
    };
    eprintln!("workspaces: building the trees");
    let synthetic = trees::synthetic(&dir.path().join("synthetic"), files, bytes, 1)?;
    let mut lines = side.tree_lines(&synthetic, "synthetic", true)?;
    let unsynced = HostConfig {
        data_dir: dir.path().join("data-os"),
        durability: HostDurability::Os,
        log: dir.path().join("host-os.log"),
        ..config.clone()
    };
    lines.extend(without_fsync(
        &runtime,
        &unsynced,
        &secret,
        &synthetic,
        dir.path(),
    )?);
    let checkout = trees::checkout_copy(&options.repo, &dir.path().join("checkout"))?;
    lines.extend(side.tree_lines(&checkout, "checkout", false)?);

    let small_peaks = side.peaks(&synthetic, "synthetic")?;
    let large = trees::synthetic(&dir.path().join("large"), files, big, 2)?;
    let large_peaks = side.peaks(&large, "large")?;
    let _ = std::fs::remove_dir_all(&large.root);
    for (what, small_kib, large_kib) in [
        ("push", small_peaks.0, large_peaks.0),
        ("pull", small_peaks.1, large_peaks.1),
    ] {
        let ratio = large_kib as f64 / small_kib.max(1) as f64;
        lines.push(Line {
            what: format!(
                "host peak RSS during a {what} of {} ({} files)",
                report::size(large.bytes),
                report::thousands_sep(usize::try_from(files).unwrap_or(0))
            ),
            stasis: format!("{} MiB", large_kib / 1024),
            baseline: format!(
                "{} MiB (the {} tree)",
                small_kib / 1024,
                report::size(synthetic.bytes)
            ),
            ratio,
            aim: "does not grow with the tree (≤ 1.5×)",
            met: ratio <= 1.5,
        });
    }
    host.stop()?;
    Ok(lines)
}

/// The full save and restore of `tree` against a host that fsyncs nothing (`--durability os`,
/// as `tar` does not): how much of the gap to `tar` is the default host's fsync of every chunk.
fn without_fsync(
    runtime: &tokio::runtime::Runtime,
    config: &HostConfig,
    secret: &str,
    tree: &Built,
    dir: &Path,
) -> Result<Vec<Line>> {
    eprintln!("workspaces: full save and restore against a host with --durability os");
    let host = runtime.block_on(StasisHost::start(config))?;
    let token = crate::server::admin_token(secret)?;
    let client = Client::new(Config::new(&host.endpoint().base_url(), Some(token))?);
    let agent = AgentRef::new(&format!("bench-ws-{}", random_hex(4)?), "hq", "os")?;
    let mut options = PushOptions::beside(&tree.root);
    options.state = workspace_sync::StateDir::new(dir.join("os-state"));
    let archive = dir.join("os.tar");
    let tar_c = trees::tar_c(&tree.root, &archive)?;
    let pushed = workspace_sync::push(&client, &agent, &tree.root, &options)?;
    let saved = Duration::from_millis(pushed.took_ms);
    let tar_x = trees::tar_x(&archive, &dir.join("os-untar"))?;
    let _ = std::fs::remove_file(&archive);
    let into = dir.join("os-restored");
    let started = std::time::Instant::now();
    match workspace_sync::pull(&client, &agent, &into, &PullOptions::beside(&into))? {
        PullOutcome::Restored(_) => {}
        PullOutcome::NoWorkspace => bail!("no workspace to pull"),
    }
    let restored = started.elapsed();
    let _ = std::fs::remove_dir_all(&into);
    let _ = std::fs::remove_dir_all(dir.join("os-untar"));
    host.stop()?;
    let what = "synthetic tree, host with `--durability os` (no fsync, as `tar`)";
    Ok(vec![
        Line {
            what: format!("{what}: full save"),
            stasis: report::millis(saved),
            baseline: format!("`tar c` {}", report::millis(tar_c)),
            ratio: ratio(saved, tar_c),
            aim: "(what the fsyncs cost: not an aim)",
            met: true,
        },
        Line {
            what: format!("{what}: full restore, verified"),
            stasis: report::millis(restored),
            baseline: format!("`tar x` {}", report::millis(tar_x)),
            ratio: ratio(restored, tar_x),
            aim: "(what the fsyncs cost: not an aim)",
            met: true,
        },
    ])
}

struct Side<'a> {
    client: &'a Client,
    pid: u32,
    dir: &'a Path,
}

impl Side<'_> {
    fn push(&self, agent: &AgentRef, tree: &Built) -> Result<Pushed> {
        let pushed = workspace_sync::push(
            self.client,
            agent,
            &tree.root,
            &PushOptions::beside(&tree.root),
        )?;
        Ok(pushed)
    }

    fn pull(&self, agent: &AgentRef, into: &Path) -> Result<Duration> {
        let started = std::time::Instant::now();
        match workspace_sync::pull(self.client, agent, into, &PullOptions::beside(into))? {
            PullOutcome::Restored(_) => Ok(started.elapsed()),
            PullOutcome::NoWorkspace => bail!("no workspace to pull"),
        }
    }

    /// Full save, (restore,) `tar c` (and `tar x`), one-file edit.
    fn tree_lines(&self, tree: &Built, name: &str, restore: bool) -> Result<Vec<Line>> {
        let label = format!(
            "{name} tree ({} files, {})",
            report::thousands_sep(usize::try_from(tree.files).unwrap_or(0)),
            report::size(tree.bytes)
        );
        let agent = AgentRef::new(&format!("bench-ws-{}", random_hex(4)?), "hq", name)?;
        eprintln!("workspaces: {label}: tar c, full save");
        let archive = self.dir.join(format!("{name}.tar"));
        let tar_c = trees::tar_c(&tree.root, &archive)?;
        let full = self.push(&agent, tree)?;
        let full_time = Duration::from_millis(full.took_ms);
        let mut lines = vec![Line {
            what: format!("{label}: full save"),
            stasis: report::millis(full_time),
            baseline: format!("`tar c` {}", report::millis(tar_c)),
            ratio: ratio(full_time, tar_c),
            aim: "≤ 2× `tar c`",
            met: ratio(full_time, tar_c) <= 2.0,
        }];
        if restore {
            eprintln!("workspaces: {label}: tar x, full restore");
            let tar_x = trees::tar_x(&archive, &self.dir.join(format!("{name}-untar")))?;
            let pulled = self.pull(&agent, &self.dir.join(format!("{name}-restored")))?;
            lines.push(Line {
                what: format!("{label}: full restore, verified"),
                stasis: report::millis(pulled),
                baseline: format!("`tar x` {}", report::millis(tar_x)),
                ratio: ratio(pulled, tar_x),
                aim: "≤ 2× `tar x`",
                met: ratio(pulled, tar_x) <= 2.0,
            });
        }
        let _ = std::fs::remove_file(&archive);
        eprintln!("workspaces: {label}: one-file edits");
        // The median of a few edits' saves: one save is a few hundred ms on a shared disk.
        let mut edits = Vec::new();
        for round in 1..=EDIT_ROUNDS {
            trees::edit_one_file(tree, round)?;
            edits.push(self.push(&agent, tree)?);
        }
        edits.sort_by_key(|edited| edited.took_ms);
        let edited = edits.swap_remove(edits.len() / 2);
        let edit_time = Duration::from_millis(edited.took_ms);
        let sent = edited.transfer.bytes_sent;
        let share = sent as f64 / tree.bytes.max(1) as f64;
        let time_ratio = ratio(edit_time, full_time);
        lines.push(Line {
            what: format!("{label}: save after a one-file edit (median of {EDIT_ROUNDS})"),
            stasis: format!(
                "{}; sent {} ({:.2}% of the tree, {} chunks, {} pages)",
                report::millis(edit_time),
                report::size(sent),
                share * 100.0,
                edited.transfer.chunks_sent,
                edited.transfer.pages_sent
            ),
            baseline: format!("the full save {}", report::millis(full_time)),
            ratio: time_ratio,
            aim: "≤ 0.1× the full save; ≤ 1% of the tree sent",
            met: time_ratio <= 0.1 && share <= 0.01,
        });
        Ok(lines)
    }

    /// The host's peak resident set (KiB) during a first push of `tree` and during its pull.
    fn peaks(&self, tree: &Built, name: &str) -> Result<(u64, u64)> {
        eprintln!("workspaces: peak RSS around the push and pull of {name}");
        let agent = AgentRef::new(&format!("bench-ws-{}", random_hex(4)?), "hq", name)?;
        let state = self.dir.join(format!("{name}-rss-state"));
        let mut options = PushOptions::beside(&tree.root);
        options.state = workspace_sync::StateDir::new(&state);
        reset_peak(self.pid);
        workspace_sync::push(self.client, &agent, &tree.root, &options)?;
        let push_peak = status_kib(self.pid, "VmHWM")?;
        let into = self.dir.join(format!("{name}-rss-restored"));
        reset_peak(self.pid);
        self.pull(&agent, &into)?;
        let pull_peak = status_kib(self.pid, "VmHWM")?;
        let _ = std::fs::remove_dir_all(&into);
        Ok((push_peak, pull_peak))
    }
}

/// Resets the process's `VmHWM` to its current resident set.
fn reset_peak(pid: u32) {
    let _ = std::fs::write(format!("/proc/{pid}/clear_refs"), "5");
}

fn ratio(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() / b.as_secs_f64().max(1e-9)
}

/// The markdown table.
pub fn table(lines: &[Line]) -> String {
    let mut out = String::from(
        "| measurement | stasis | baseline (same run) | ratio | aim | met |\n|---|---|---|---|---|---|\n",
    );
    for line in lines {
        out.push_str(&format!(
            "| {} | {} | {} | {:.2}× | {} | {} |\n",
            line.what,
            line.stasis,
            line.baseline,
            line.ratio,
            line.aim,
            if line.met { "yes" } else { "**no**" }
        ));
    }
    out
}

/// The BENCHMARKS.md section.
pub fn section(info: &RunInfo, lines: &[Line]) -> String {
    format!(
        "{}\n## Workspaces: save and restore against `tar`\n\n{}\n{}\n{}\n{}\n",
        MARKS.start,
        info.facts(&[("Target", &info.target)]),
        table(lines),
        NOTES,
        MARKS.end
    )
}

const NOTES: &str = "The saves and restores are `stasis_client::workspace_sync::push` and `pull` \
(what `stasis-client workspace push|pull` runs) in the bench's process, against the host it \
started (`--durability fsync`: every chunk batch is fsynced before it is acknowledged; `tar` \
fsyncs nothing; the `--durability os` lines are a second host that fsyncs nothing either). A restore verifies every file and the root hash and ends with one `syncfs`. The \
checkout is this repository's tracked files (`git ls-files`), copied: no `target/`, \
`node_modules/` or `.git`. A one-file edit rewrites the first bytes of one file in the middle of \
the tree, same length; five edits are saved one after another and the median save is shown. Peak RSS is the host's `VmHWM`, reset (`clear_refs`) before each push and \
each pull.\n";
