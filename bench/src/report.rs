//! The results table (markdown) and the BENCHMARKS.md section holding it.

use crate::{
    machine::Machine,
    results::{Measured, Missing},
    stats::{Latency, Rate},
    workloads::memory::PeakRss,
};
use anyhow::{Context, Result};
use std::{fmt::Write as _, path::Path, time::Duration};

/// Where a section starts and ends in BENCHMARKS.md.
#[derive(Debug, Clone, Copy)]
pub struct Marks {
    /// The line opening the section.
    pub start: &'static str,
    /// The line closing it.
    pub end: &'static str,
    /// Where the section goes in a file that has none yet: before this
    /// line when the file has it, else at the end.
    pub before: Option<&'static str>,
}

/// The event-log section (this module's table).
pub const EVENT_LOG: Marks = Marks {
    start: "<!-- bench:event-log:start -->",
    end: "<!-- bench:event-log:end -->",
    before: None,
};
/// The snapshots section: snapshots, `snapshot push`, the conversation
/// rebuild, recovery and peak memory.
pub const SNAPSHOTS: Marks = Marks {
    start: "<!-- bench:snapshots:start -->",
    end: "<!-- bench:snapshots:end -->",
    before: Some(crate::edge_report::EDGE.start),
};

/// A measured figure, or why there is none.
#[derive(Debug, Clone)]
pub enum Figure {
    /// Items per second, with the unit to print (`ev/s`, `msg/s`).
    Rate(Rate, &'static str),
    /// A latency distribution.
    Latency(Latency),
    /// A process's resident memory around one request.
    Memory(PeakRss),
    /// The workload ran and failed.
    Failed(String),
    /// Not measured in this run, and why.
    Skipped(String),
}

impl Figure {
    /// A rate, or why it is missing.
    pub fn rate(measured: &Measured<Rate>, unit: &'static str) -> Self {
        match measured {
            Ok(rate) => Figure::Rate(*rate, unit),
            Err(missing) => Figure::missing(missing),
        }
    }

    /// A latency, or why it is missing.
    pub fn latency(measured: &Measured<Latency>) -> Self {
        match measured {
            Ok(latency) => Figure::Latency(*latency),
            Err(missing) => Figure::missing(missing),
        }
    }

    /// A peak memory figure, or why it is missing.
    pub fn memory(measured: &Measured<PeakRss>) -> Self {
        match measured {
            Ok(peak) => Figure::Memory(*peak),
            Err(missing) => Figure::missing(missing),
        }
    }

    /// Why a figure is missing.
    pub fn missing(missing: &Missing) -> Self {
        match missing {
            Missing::Failed(error) => Figure::Failed(error.clone()),
            Missing::Skipped(why) => Figure::Skipped(why.clone()),
        }
    }

    /// True when the workload ran and failed.
    pub fn is_failure(&self) -> bool {
        matches!(self, Figure::Failed(_))
    }

    /// The figure as a table cell.
    pub fn cell(&self) -> String {
        match self {
            Figure::Rate(rate, unit) => format!("{} {unit}", thousands(rate.per_sec())),
            Figure::Latency(l) => format!(
                "{} (p99 {}, n={})",
                millis(l.median),
                millis(l.p99),
                l.samples
            ),
            Figure::Memory(m) => {
                let mib = |kib: u64| kib as f64 / 1024.0;
                format!(
                    "VmHWM {:.1} MiB from VmRSS {:.1} MiB before: +{:.1} MiB = {:.2}× the body{}",
                    mib(m.peak_kib),
                    mib(m.before_kib),
                    mib(m.peak_kib.saturating_sub(m.before_kib)),
                    m.copies(),
                    if m.peak_reset {
                        ""
                    } else {
                        " (the peak could not be reset before the PUT: an upper bound)"
                    }
                )
            }
            Figure::Failed(error) => format!("failed: {}", one_line(error)),
            Figure::Skipped(why) => format!("not run ({why})"),
        }
    }
}

/// What a row should reach.
#[derive(Debug, Clone, Copy)]
pub enum Goal {
    /// At least this many items per second.
    MinRate(f64, &'static str),
    /// A median of at most this.
    MaxMedian(Duration),
    /// stasis ÷ baseline at least this.
    MinRatio(f64),
    /// stasis ÷ baseline at most this (latencies).
    MaxRatio(f64),
    /// A peak memory growth of at most this many times the body.
    MaxCopies(f64),
}

/// One line of the table.
#[derive(Debug, Clone)]
pub struct Row {
    /// What was measured.
    pub workload: String,
    /// stasis's figure.
    pub stasis: Figure,
    /// Extra words after stasis's figure.
    pub stasis_note: Option<String>,
    /// What the baseline or peer is.
    pub baseline_name: String,
    /// The baseline's or peer's figure, if the row has one.
    pub baseline: Option<Figure>,
    /// What stasis should reach.
    pub goals: Vec<Goal>,
}

impl Row {
    /// stasis ÷ baseline (rates: above 1 is faster; latencies: below 1 is
    /// faster).
    pub fn ratio(&self) -> Option<f64> {
        match (&self.stasis, self.baseline.as_ref()?) {
            (Figure::Rate(s, _), Figure::Rate(b, _)) if b.per_sec() > 0.0 => {
                Some(s.per_sec() / b.per_sec())
            }
            (Figure::Latency(s), Figure::Latency(b)) if !b.median.is_zero() => {
                Some(s.median.as_secs_f64() / b.median.as_secs_f64())
            }
            _ => None,
        }
    }

    /// True when a workload of this row failed.
    pub fn failed(&self) -> bool {
        self.stasis.is_failure() || self.baseline.as_ref().is_some_and(Figure::is_failure)
    }

    fn goal_cell(&self) -> String {
        let verdicts: Vec<String> = self
            .goals
            .iter()
            .map(|goal| {
                let (text, met) = match *goal {
                    Goal::MinRate(min, unit) => (
                        format!("≥ {} {unit}", thousands(min)),
                        match &self.stasis {
                            Figure::Rate(rate, _) => Some(rate.per_sec() >= min),
                            _ => None,
                        },
                    ),
                    Goal::MaxMedian(max) => (
                        format!("median ≤ {}", millis(max)),
                        match &self.stasis {
                            Figure::Latency(l) => Some(l.median <= max),
                            _ => None,
                        },
                    ),
                    Goal::MinRatio(min) => {
                        (format!("ratio ≥ {min}"), self.ratio().map(|r| r >= min))
                    }
                    Goal::MaxRatio(max) => {
                        (format!("ratio ≤ {max}"), self.ratio().map(|r| r <= max))
                    }
                    Goal::MaxCopies(max) => (
                        format!("≤ {max} × the body"),
                        match &self.stasis {
                            Figure::Memory(m) => Some(m.copies() <= max),
                            _ => None,
                        },
                    ),
                };
                match met {
                    Some(true) => format!("{text}: met"),
                    Some(false) => format!("{text}: **missed**"),
                    None => text,
                }
            })
            .collect();
        if verdicts.is_empty() {
            "—".to_owned()
        } else {
            verdicts.join("; ")
        }
    }
}

/// The markdown table of `rows`.
pub fn table(rows: &[Row]) -> String {
    let mut out = String::from(
        "| workload | stasis | baseline / peer | stasis ÷ baseline | target |\n|---|---|---|---|---|\n",
    );
    for row in rows {
        let mut stasis = row.stasis.cell();
        if let Some(note) = &row.stasis_note {
            let _ = write!(stasis, "; {note}");
        }
        let baseline = match &row.baseline {
            Some(figure) => format!("{}: {}", row.baseline_name, figure.cell()),
            None => row.baseline_name.clone(),
        };
        let ratio = row
            .ratio()
            .map_or_else(|| "—".to_owned(), |r| format!("{r:.2}×"));
        let _ = writeln!(
            out,
            "| {} | {stasis} | {baseline} | {ratio} | {} |",
            row.workload,
            row.goal_cell()
        );
    }
    out
}

/// How the numbers were taken, printed under the table.
const NOTES: &str = "\
- The ratio column is stasis ÷ baseline: for rates above 1 means stasis is faster, for latencies
  below 1 means stasis is faster. Every baseline and peer figure comes from the same run, on the
  same machine, in the same temp filesystem.
- Client and servers share the machine's cores. The client is one Tokio thread with one
  keep-alive HTTP/1.1 connection per concurrent worker. Events carry `{\"type\":\"bench\",\"data\":…}`
  with `data` a JSON object of the stated size.
- Native baselines use the event log's own schema and PRAGMAs (`stasis_sqlite::SqliteStore`, WAL,
  `synchronous=FULL` for fsync, `NORMAL` for os), rusqlite in-process, one transaction per batch;
  16 files are written by 16 threads.
- The peer is `@durable-streams/server` 0.3.7 (file-backed, it fsyncs each append), one stream per
  connection where stasis uses one agent per connection; its catch-up read is `GET ?offset=-1`,
  its live delivery `?offset=now&live=sse`.
- Every append workload starts on fresh logs. stasis keeps the newest 10,000 events per agent by
  default; a row marked \"retention active\" pushed its agents past that, so most of its appends
  also deleted the oldest events (the peer keeps everything).
- A catch-up read follows `has_more` pages to the end of the log, as a client would: a page ends at
  10,000 events or once its events' data passes the server's page byte limit (8 MiB in
  docs/http-api.md), so 10,000 events of 1000 B are two requests.
- Host start: spawn of `stasis serve` to the first 200 of a read of an existing agent's events,
  after a first start that warmed the compiled-component cache.
";

/// How the snapshot, push, rebuild, recovery and memory figures were taken.
const SNAPSHOT_NOTES: &str = "\
- Same run, same machine, same temp filesystem as the event-log section; the ratio column is
  stasis ÷ baseline on medians (below 1: stasis is faster). Each workload's first round is a
  warm-up and is not counted; every loop is bounded by a count of rounds and a time limit.
- Snapshot round trip: `PUT /db-snapshot` of pseudo-random bytes (each round's body differs in its
  first 8 bytes, so every PUT stores a new version), then `GET /db-snapshot`, timed to the 201 and
  to the last byte of the body, on one keep-alive connection; the bytes read are compared with
  those sent outside the clock. Snapshots over the inline limit (1 MiB) go to the KV folder on the
  host, Workers KV on the edge. The server hashes every PUT and checks every GET against the
  stored sha256 (the contract requires both): the second baseline adds those two hashes (`sha2`
  crate, in-process) to the file written, `fsync`ed and read back, so the gap between the two
  baselines is the hashing floor on this CPU.
- Peak memory: a fresh `stasis serve` stores a 1 KiB snapshot (warm-up: the agent's object and the
  snapshot code loaded), the peak is reset (`5` into `/proc/PID/clear_refs`), `VmRSS` is read, one
  26,214,400 B PUT is sent and `VmHWM` read from `/proc/PID/status`. The growth is
  `VmHWM − VmRSS before`, also as a multiple of the body.
- `snapshot push`: `stasis_client::snapshot::push` as a container runs it (SQLite's online backup
  of the open WAL database into a temp folder, its sha256, the upload streamed from the file with
  `X-Stasis-Sha256`, the receipt checked), no writer running meanwhile; each push is followed by
  its local part alone (backup and hash, no request), timed apart. The baseline, right after the
  pushes, is as many PUTs of as many pseudo-random bytes by the bench's own HTTP client.
- Conversation rebuild: 10,000 events shaped as an agent SDK streams them (a user message is one
  `message.completed` with its text; an assistant message a `message.created`, 10 to 70
  `message_part.updated` with a `delta` of a few words, and a `message.completed`), appended to one
  agent. Then `GET /conversation?max_turns=1000&max_tokens=1000000`, its first answer checked to
  equal `stasis_domain::conversation::rebuild` of the events read (that in-process rebuild is timed
  too), and right after as many `GET /events?after=0&limit=10000` of the same events (one page).
- Recovery: the spec's scenario. Container A registers a Mayor and two polecats, heartbeats,
  publishes its registry, streams 300 events of the Mayor's conversation, saves a checkpoint and
  pushes a kilo.db per agent (pseudo-random, the stated size). Each round, the last container is
  evicted and the user messages the Mayor in the gap (deferred); then a new container runs
  `stasis-client`'s boot steps, timed: the heartbeat (which clears the drain and carries the
  Mayor's dispatch, rebuilt with the gap message) and each agent's snapshot pulled in turn into an
  empty folder (streamed, sha256-verified, fsynced, renamed into place). Checked outside the clock:
  every digest, every file's size, the dispatch's checkpoint and the gap message in its prompt.
  The 5–7 minutes and the 6–10 s target are the issue's figures for the system stasis replaces,
  not measured here.
";

/// Everything the section says besides the table.
#[derive(Debug, Clone)]
pub struct RunInfo {
    /// The machine it ran on.
    pub machine: Machine,
    /// The command line.
    pub command: String,
    /// What stasis was (spawned host or a given URL).
    pub target: String,
    /// Load averages before and after the run.
    pub load: (String, String),
    /// The load average before the wrapper script built anything
    /// (`STASIS_BENCH_LOAD_BEFORE_BUILD`, set by `scripts/bench`).
    pub load_before_build: Option<String>,
}

impl RunInfo {
    /// The section's load-average line, without its leading `- `.
    pub fn load_line(&self) -> String {
        let (before, after) = &self.load;
        match &self.load_before_build {
            Some(build) => format!(
                "Load average (1/5/15 min): {build} before scripts/bench built anything, {before} \
                 when the workloads started (after the builds), {after} after"
            ),
            None => format!("Load average (1/5/15 min): {before} before the run, {after} after"),
        }
    }
}

/// The BENCHMARKS.md event-log section for `rows`.
pub fn section(info: &RunInfo, rows: &[Row]) -> String {
    render(
        EVENT_LOG,
        "Event log: stasis against native baselines and Durable Streams",
        info,
        rows,
        NOTES,
    )
}

/// The BENCHMARKS.md snapshots section for `rows`.
pub fn snapshots_section(info: &RunInfo, rows: &[Row]) -> String {
    render(
        SNAPSHOTS,
        "Snapshots, conversation rebuild and recovery: stasis against native baselines",
        info,
        rows,
        SNAPSHOT_NOTES,
    )
}

fn render(marks: Marks, heading: &str, info: &RunInfo, rows: &[Row], notes: &str) -> String {
    let m = &info.machine;
    format!(
        "{}\n## {heading}\n\n\
         - Machine: {} ({} cores), {} memory, Linux {}\n\
         - {}\n\
         - Date: {} (UTC)\n\
         - stasis commit: {}\n\
         - Command: {}\n\
         - Target: {}\n\n\
         {}\n{notes}{}\n",
        marks.start,
        m.cpu,
        m.cores,
        m.memory,
        m.kernel,
        info.load_line(),
        m.date,
        m.commit,
        info.command,
        info.target,
        table(rows),
        marks.end,
    )
}

/// Writes `section` into `path`, replacing the previous section between
/// `marks` and keeping everything else in the file.
pub fn record(path: &Path, marks: Marks, section: &str) -> Result<()> {
    let existing = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            "# Benchmarks\n\nProduced by `scripts/bench`; each section is rewritten by its own run.\n"
                .to_owned()
        }
        Err(error) => return Err(error).context(format!("reading {}", path.display())),
    };
    let updated = splice(&existing, marks, section);
    std::fs::write(path, updated).with_context(|| format!("writing {}", path.display()))
}

/// `text` with the section between `marks` replaced by `section`, or
/// `section` added where `marks.before` says when there is none.
fn splice(text: &str, marks: Marks, section: &str) -> String {
    if let Some(start) = text.find(marks.start)
        && let Some(end_at) = text[start..].find(marks.end)
    {
        let mut end = start + end_at + marks.end.len();
        if text[end..].starts_with('\n') {
            end += 1;
        }
        return format!("{}{section}{}", &text[..start], &text[end..]);
    }
    if let Some(at) = marks.before.and_then(|line| text.find(line)) {
        return format!("{}{section}\n{}", &text[..at], &text[at..]);
    }
    let separator = if text.ends_with("\n\n") || text.is_empty() {
        ""
    } else if text.ends_with('\n') {
        "\n"
    } else {
        "\n\n"
    };
    format!("{text}{separator}{section}")
}

/// `12.3k` above ten thousand, whole numbers below.
pub fn thousands(value: f64) -> String {
    if value >= 10_000.0 {
        format!("{:.1}k", value / 1000.0)
    } else {
        format!("{value:.0}")
    }
}

/// Milliseconds with two decimals below 10 ms, one up to a second;
/// seconds with two decimals from a second.
pub fn millis(d: Duration) -> String {
    let ms = d.as_secs_f64() * 1000.0;
    if ms < 10.0 {
        format!("{ms:.2} ms")
    } else if ms < 1000.0 {
        format!("{ms:.1} ms")
    } else {
        format!("{:.2} s", ms / 1000.0)
    }
}

/// A byte count as written in the tables: `24 MiB` for whole mebibytes,
/// `20 MB` (one decimal when needed) from a million bytes, else bytes.
pub fn size(bytes: u64) -> String {
    const MIB: u64 = 1024 * 1024;
    if bytes >= MIB && bytes.is_multiple_of(MIB) {
        format!("{} MiB", bytes / MIB)
    } else if bytes >= 1_000_000 {
        let mb = format!("{:.1}", bytes as f64 / 1e6);
        format!("{} MB", mb.trim_end_matches(".0"))
    } else {
        format!("{bytes} B")
    }
}

/// `text` on one line, without table pipes, at most 160 characters.
pub fn one_line(text: &str) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let flat = flat.replace('|', "/");
    if flat.chars().count() > 160 {
        format!("{}…", flat.chars().take(160).collect::<String>())
    } else {
        flat
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const START_MARK: &str = EVENT_LOG.start;
    const END_MARK: &str = EVENT_LOG.end;

    #[test]
    fn a_recorded_section_replaces_only_its_own_part() {
        let old = format!("# B\n\nintro\n\n{START_MARK}\nold\n{END_MARK}\n\n## other\nkeep\n");
        let new = splice(&old, EVENT_LOG, &format!("{START_MARK}\nnew\n{END_MARK}\n"));
        assert_eq!(
            new,
            format!("# B\n\nintro\n\n{START_MARK}\nnew\n{END_MARK}\n\n## other\nkeep\n")
        );
    }

    #[test]
    fn a_file_without_the_section_gets_it_appended() {
        let new = splice("# B\nintro\n", EVENT_LOG, "S\n");
        assert_eq!(new, "# B\nintro\n\nS\n");
    }

    #[test]
    fn sections_with_other_marks_are_left_alone() {
        const OTHER: Marks = Marks {
            start: "<!-- o:start -->",
            end: "<!-- o:end -->",
            before: None,
        };
        let old = format!(
            "{START_MARK}\nlog\n{END_MARK}\n\n{}\nold\n{}\n",
            OTHER.start, OTHER.end
        );
        let new = splice(
            &old,
            OTHER,
            &format!("{}\nnew\n{}\n", OTHER.start, OTHER.end),
        );
        assert_eq!(
            new,
            format!(
                "{START_MARK}\nlog\n{END_MARK}\n\n{}\nnew\n{}\n",
                OTHER.start, OTHER.end
            )
        );
    }

    #[test]
    fn a_new_snapshots_section_goes_before_the_edge_section() {
        let edge = format!(
            "{}\nedge\n{}\n",
            crate::edge_report::EDGE.start,
            crate::edge_report::EDGE.end
        );
        let old = format!("{START_MARK}\nlog\n{END_MARK}\n\n{edge}");
        let new = splice(&old, SNAPSHOTS, "S\n");
        assert_eq!(new, format!("{START_MARK}\nlog\n{END_MARK}\n\nS\n\n{edge}"));
        assert_eq!(splice("# B\n", SNAPSHOTS, "S\n"), "# B\n\nS\n");
    }

    #[test]
    fn sizes_read_as_mebibytes_or_megabytes() {
        assert_eq!(size(25_165_824), "24 MiB");
        assert_eq!(size(26_214_400), "25 MiB");
        assert_eq!(size(20_000_000), "20 MB");
        assert_eq!(size(20_480_000), "20.5 MB");
        assert_eq!(size(1024), "1024 B");
        assert_eq!(millis(Duration::from_millis(2500)), "2.50 s");
    }

    #[test]
    fn ratios_divide_stasis_by_the_baseline() {
        let rate = |items| {
            Figure::Rate(
                Rate {
                    items,
                    elapsed: Duration::from_secs(1),
                },
                "ev/s",
            )
        };
        let row = Row {
            workload: "w".into(),
            stasis: rate(150),
            stasis_note: None,
            baseline_name: "b".into(),
            baseline: Some(rate(300)),
            goals: vec![Goal::MinRatio(0.3), Goal::MinRate(200.0, "ev/s")],
        };
        assert_eq!(row.ratio(), Some(0.5));
        assert_eq!(row.goal_cell(), "ratio ≥ 0.3: met; ≥ 200 ev/s: **missed**");
    }
}
