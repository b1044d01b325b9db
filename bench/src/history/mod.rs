//! History, restore and fork (`--only-history`), on a host the bench starts
//! and, with `--edge-url`, on the edge worker too:
//!
//! - storage: a live ~25 MB kilo.db pushed by chunks, then 100 turns, each
//!   rewriting a few pages and pushed by chunks, every version kept: what
//!   the agent stores then against what one version stores (the host's data
//!   folder: the agent's KV files and its SQLite pages; both runtimes: the
//!   distinct chunk bytes its kept versions name, through the API);
//! - fork: an agent with 10,000 events and a ~100 MB kilo.db forked at its
//!   last seq, against a checkpoint PUT of the same agent, and the chunk
//!   bytes the fork's KV folder got (host);
//! - restore in place to the seq of its first half, and its undo, against
//!   the same checkpoint PUT.
//!
//! `--quick`: a 5 MB database and 10 turns, 1,000 events and a 10 MB
//! database. `--only-history --record FILE` rewrites the section between
//! [`MARKS`].

mod api;
mod fork;
mod storage;

use crate::{
    report::{self, Marks, RunInfo},
    server::{HostConfig, StasisHost, random_hex},
    stats::Latency,
    workloads::push::live_database,
};
use anyhow::{Context, Result};
use api::Side;
use std::path::PathBuf;
use std::time::Duration;

/// Where the section goes in BENCHMARKS.md.
pub const MARKS: Marks = Marks {
    start: "<!-- bench:history:start -->",
    end: "<!-- bench:history:end -->",
    before: None,
};

/// The host's aim for a fork's time.
const FORK_AIM: Duration = Duration::from_millis(100);
/// The aim for the storage of every turn's version, against one version.
const STORAGE_AIM: f64 = 1.2;

/// How the workloads run.
pub struct Options {
    /// The `stasis` binary.
    pub bin: PathBuf,
    /// Small sizes.
    pub quick: bool,
    /// Where the temp folder goes.
    pub tmp_dir: Option<PathBuf>,
    /// The edge's base URL and an admin token, to run there too.
    pub edge: Option<(String, String)>,
}

/// The sizes of a run.
#[derive(Debug, Clone, Copy)]
struct Sizes {
    storage_db: u64,
    turns: u64,
    fork_db: u64,
    events: u64,
    rounds: u64,
}

impl Sizes {
    fn of(quick: bool) -> Self {
        if quick {
            Self {
                storage_db: 5_000_000,
                turns: 10,
                fork_db: 10_000_000,
                events: 1_000,
                rounds: 2,
            }
        } else {
            Self {
                storage_db: crate::workloads::push::DB_BYTES,
                turns: 100,
                fork_db: 100_000_000,
                events: 10_000,
                rounds: 15,
            }
        }
    }
}

/// One line of the table.
pub struct Line {
    what: String,
    side: &'static str,
    stasis: String,
    baseline: String,
    ratio: Option<f64>,
    aim: String,
    /// `None`: no aim to meet.
    met: Option<bool>,
}

/// Runs the workloads; the table's lines.
pub fn run(options: &Options) -> Result<Vec<Line>> {
    let dir = match &options.tmp_dir {
        Some(dir) => tempfile::tempdir_in(dir)?,
        None => tempfile::tempdir()?,
    };
    let sizes = Sizes::of(options.quick);
    eprintln!("history: building the databases");
    let storage_db = live_database(&mkdir(dir.path().join("storage"))?, sizes.storage_db)?;
    let fork_db = live_database(&mkdir(dir.path().join("fork"))?, sizes.fork_db)?;

    let secret = random_hex(24)?;
    let config = HostConfig::in_folder(&options.bin, dir.path(), &secret);
    let runtime = tokio::runtime::Runtime::new()?;
    let host = runtime.block_on(StasisHost::start(&config))?;
    let token = crate::server::admin_token(&secret)?;
    let mut sides = vec![Side::new(
        "host",
        &host.endpoint().base_url(),
        &token,
        Some(config.data_dir.clone()),
    )?];
    if let Some((url, token)) = &options.edge {
        sides.push(Side::new("edge", url, token, None)?);
    }
    let mut lines = Vec::new();
    for side in &sides {
        eprintln!("history: {}: storage of {} turns", side.name, sizes.turns);
        let stored = storage::run(side, "storage", &storage_db, sizes.turns)
            .with_context(|| format!("the storage workload on the {}", side.name))?;
        lines.extend(storage_lines(side.name, &stored));
        eprintln!(
            "history: {}: fork and restore of {} events",
            side.name, sizes.events
        );
        let forks = fork::run(side, "source", &fork_db, sizes.events, sizes.rounds)
            .with_context(|| format!("the fork workload on the {}", side.name))?;
        lines.extend(fork_lines(side.name, &forks));
    }
    host.stop()?;
    Ok(lines)
}

fn mkdir(path: PathBuf) -> Result<PathBuf> {
    std::fs::create_dir_all(&path)?;
    Ok(path)
}

fn storage_lines(side: &'static str, s: &storage::Storage) -> Vec<Line> {
    let what = format!(
        "storage of {} kilo.db versions ({} then {} turns of {} rewritten rows each, pushed by chunks)",
        s.versions,
        report::size(s.db_size),
        s.turns,
        s.turn_rows
    );
    let aim = format!("≤ {STORAGE_AIM}× one version");
    let ratio = |all: u64, one: u64| all as f64 / one.max(1) as f64;
    let mut lines = Vec::new();
    if let (Some(one), Some(all)) = (s.host_one, s.host_all) {
        let r = ratio(all.total(), one.total());
        lines.push(Line {
            what: format!("{what}: bytes stored (the data folder)"),
            side,
            stasis: format!(
                "{} (KV {} + SQL {})",
                report::size(all.total()),
                report::size(all.kv),
                report::size(all.sql)
            ),
            baseline: format!(
                "one version: {} (KV {} + SQL {})",
                report::size(one.total()),
                report::size(one.kv),
                report::size(one.sql)
            ),
            ratio: Some(r),
            aim: aim.clone(),
            met: Some(r <= STORAGE_AIM),
        });
    }
    let r = ratio(s.chunks_all, s.chunks_one);
    lines.push(Line {
        what: format!("{what}: distinct chunk bytes the kept versions name (the API)"),
        side,
        stasis: report::size(s.chunks_all),
        baseline: format!("one version: {}", report::size(s.chunks_one)),
        ratio: Some(r),
        aim,
        met: Some(r <= STORAGE_AIM),
    });
    lines
}

fn latency(l: &Latency) -> String {
    format!("{} (n={})", report::millis(l.median), l.samples)
}

fn fork_lines(side: &'static str, f: &fork::Forks) -> Vec<Line> {
    let agent = format!(
        "an agent with {} events and a {} kilo.db ({} chunks)",
        report::thousands_sep(usize::try_from(f.events).unwrap_or(0)),
        report::size(f.db_size),
        report::thousands_sep(f.db_chunks)
    );
    let checkpoint = format!("checkpoint PUT {}", latency(&f.checkpoint));
    let over =
        |l: &Latency| Some(l.median.as_secs_f64() / f.checkpoint.median.as_secs_f64().max(1e-9));
    let mut lines = vec![Line {
        what: format!("`POST /fork` at the last seq of {agent}"),
        side,
        stasis: latency(&f.fork),
        baseline: checkpoint.clone(),
        ratio: over(&f.fork),
        aim: match side {
            "host" => format!("< {} ms", FORK_AIM.as_millis()),
            _ => "(no time aim on the edge)".to_owned(),
        },
        met: (side == "host").then_some(f.fork.median < FORK_AIM),
    }];
    lines.push(match f.copied {
        Some(copied) => Line {
            what: "the fork's chunk bytes copied (its KV folder's chunk files)".to_owned(),
            side,
            stasis: report::size(copied),
            baseline: format!("the source's kilo.db: {}", report::size(f.db_size)),
            ratio: Some(copied as f64 / f.db_size.max(1) as f64),
            aim: "0".to_owned(),
            met: Some(copied == 0),
        },
        None => Line {
            what: "the fork's chunk bytes copied".to_owned(),
            side,
            stasis: "— (KV is not visible through the API)".to_owned(),
            baseline: format!("the source's kilo.db: {}", report::size(f.db_size)),
            ratio: None,
            aim: "0".to_owned(),
            met: None,
        },
    });
    for (what, measured) in [
        (
            format!("`POST /restore` in place to the seq of its first half ({agent})"),
            &f.restore,
        ),
        (
            "its undo (`POST /restore` to the undo pin)".to_owned(),
            &f.undo,
        ),
    ] {
        lines.push(Line {
            what,
            side,
            stasis: latency(measured),
            baseline: checkpoint.clone(),
            ratio: over(measured),
            aim: "(none)".to_owned(),
            met: None,
        });
    }
    lines
}

/// The markdown table.
pub fn table(lines: &[Line]) -> String {
    let mut out = String::from(
        "| measurement | runtime | stasis | baseline (same run) | ratio | aim | met |\n\
         |---|---|---|---|---|---|---|\n",
    );
    for line in lines {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} |\n",
            line.what,
            line.side,
            line.stasis,
            line.baseline,
            line.ratio
                .map_or_else(|| "—".to_owned(), |r| format!("{r:.2}×")),
            line.aim,
            match line.met {
                Some(true) => "yes",
                Some(false) => "**no**",
                None => "—",
            }
        ));
    }
    out
}

/// Whether any line missed its aim.
pub fn missed(lines: &[Line]) -> bool {
    lines.iter().any(|line| line.met == Some(false))
}

/// The BENCHMARKS.md section.
pub fn section(info: &RunInfo, edge: Option<&str>, lines: &[Line]) -> String {
    let edge = edge.map_or_else(
        || "not run (no `--edge-url`)".to_owned(),
        |url| format!("`wrangler dev --local` at {url}"),
    );
    format!(
        "{}\n## History, restore and fork\n\n{}\n{}\n{}\n{}\n",
        MARKS.start,
        info.facts(&[("Host", &info.target), ("Edge", &edge)]),
        table(lines),
        NOTES,
        MARKS.end
    )
}

const NOTES: &str = "Each runtime gets its own town. Storage: the live database is the snapshot \
workloads' (sessions, messages and parts; WAL mode, kept open); a turn rewrites that many `part` \
rows spread over the file (each fills most of one page) and `stasis_client::snapshot::push` \
uploads the chunks the server lacks, then commits the manifest; retention is the default (every \
version kept for 24 hours). The data folder's figure is the agent's files under \
`kv/snapshots/<town>/r/<agent>/` plus its `agent.sqlite` pages in use (`page_count - \
freelist_count`, read through the WAL); the API's is the distinct chunks named by every version \
`GET /history?kind=db_snapshot` lists, sized from each manifest (SQL rows are not visible \
through the API). Fork and restore: the source's log is written in two halves (400-byte events, \
100 per append), each followed by a checkpoint, a memory value and a push of the ~100 MB \
database (one turn apart); each fork is a new agent at the last seq; each restore goes to the \
first half's seq and is then undone through its pin, both checked by the checkpoint they leave. \
The baseline is a checkpoint PUT of the same agent after each fork and each undo. Times are \
medians of whole HTTP requests from the bench on 127.0.0.1.\n";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_without_an_aim_shows_dashes_and_a_missed_aim_is_bold() {
        let lines = vec![
            Line {
                what: "a".into(),
                side: "host",
                stasis: "1 ms".into(),
                baseline: "2 ms".into(),
                ratio: None,
                aim: "(none)".into(),
                met: None,
            },
            Line {
                what: "b".into(),
                side: "edge",
                stasis: "3 ms".into(),
                baseline: "1 ms".into(),
                ratio: Some(3.0),
                aim: "< 1 ms".into(),
                met: Some(false),
            },
        ];
        let text = table(&lines);
        assert!(text.contains("| a | host | 1 ms | 2 ms | — | (none) | — |"));
        assert!(text.contains("| b | edge | 3 ms | 1 ms | 3.00× | < 1 ms | **no** |"));
        assert!(missed(&lines));
        assert!(!missed(&lines[..1]));
    }
}
