//! The soak's tables (the host over time, requests by kind, errors by
//! status) and its BENCHMARKS.md section.

use super::sample::Sample;
use super::{Options, Outcome};
use crate::machine::{Machine, load_average};
use crate::report::{Marks, millis, thousands_sep};
use crate::stats::Latency;
use std::fmt::Write as _;
use std::time::Duration;

/// Where the soak's section goes in BENCHMARKS.md (at the end when absent).
pub const RECORD_MARKS: Marks = Marks {
    start: "<!-- bench:soak:start -->",
    end: "<!-- bench:soak:end -->",
    before: None,
};

/// Samples before this are the warm-up (caches filling); growth is judged
/// from here.
const WARM_UP: Duration = Duration::from_secs(60);

/// A row of the host table: its name, the reading it shows, how.
type HostRow = (&'static str, fn(&Sample) -> u64, fn(u64) -> String);

/// A finished soak, ready to print.
pub struct Report {
    options: Options,
    outcome: Outcome,
    machine: Machine,
    load: (String, String),
}

impl Report {
    /// The report of `outcome`.
    pub fn new(options: &Options, outcome: Outcome, load_before: String) -> Self {
        Self {
            options: options.clone(),
            outcome,
            machine: Machine::detect(),
            load: (load_before, load_average()),
        }
    }

    /// True when no request failed.
    pub fn clean(&self) -> bool {
        self.outcome.tally.statuses.is_empty()
    }

    /// The three tables, as markdown.
    pub fn table(&self) -> String {
        let mut text = self.host_table();
        text.push('\n');
        text.push_str(&self.request_table());
        let tally = &self.outcome.tally;
        let errors: Vec<String> = tally
            .statuses
            .iter()
            .map(|(s, n)| format!("{s}: {n}"))
            .collect();
        let errors = if errors.is_empty() {
            "none".to_owned()
        } else {
            errors.join(", ")
        };
        let _ = writeln!(text, "\nErrors by status: {errors}.");
        for problem in &tally.problems {
            let _ = writeln!(text, "- {}", crate::report::one_line(problem));
        }
        text
    }

    fn host_table(&self) -> String {
        let samples = &self.outcome.samples;
        let warm_at = WARM_UP.min(self.options.duration / 5);
        let pick = |at: Option<&Sample>| at.copied();
        let start = pick(samples.first());
        let warm = pick(samples.iter().find(|s| s.at >= warm_at).or(samples.last()));
        let end = pick(samples.last());
        let idle = self.outcome.idle_after;
        let mut text = format!(
            "| host | start | after warm-up ({} s) | peak | end of load | idle 3 s after | end ÷ warm-up |\n\
             |---|---:|---:|---:|---:|---:|---:|\n",
            warm.map_or(0, |s| s.at.as_secs())
        );
        let rows: [HostRow; 3] = [
            ("resident memory (RSS)", |s| s.rss_kib, mib),
            ("open descriptors", |s| s.fds, |n| n.to_string()),
            ("threads", |s| s.threads, |n| n.to_string()),
        ];
        for (name, value, show) in rows {
            let cell = |s: Option<Sample>| s.map_or("–".to_owned(), |s| show(value(&s)));
            let peak = samples.iter().map(value).max();
            let ratio = match (end, warm) {
                (Some(e), Some(w)) if value(&w) > 0 => {
                    format!("{:.2}×", value(&e) as f64 / value(&w) as f64)
                }
                _ => "–".to_owned(),
            };
            let _ = writeln!(
                text,
                "| {name} | {} | {} | {} | {} | {} | {ratio} |",
                cell(start),
                cell(warm),
                peak.map_or("–".to_owned(), show),
                cell(end),
                cell(idle),
            );
        }
        text
    }

    fn request_table(&self) -> String {
        let secs = self.outcome.elapsed.as_secs_f64().max(1e-9);
        let mut text = "| requests | count | per second | p50 | p99 | errors |\n|---|---:|---:|---:|---:|---:|\n".to_owned();
        let (mut all, mut failed) = (0, 0);
        let mut latencies = Vec::new();
        for (kind, tally) in &self.outcome.tally.kinds {
            all += tally.requests;
            failed += tally.errors;
            latencies.extend(tally.latencies.iter().copied());
            let _ = writeln!(
                text,
                "{}",
                row(
                    kind,
                    tally.requests,
                    secs,
                    Latency::of(tally.latencies.clone()),
                    tally.errors
                )
            );
        }
        let _ = writeln!(
            text,
            "{}",
            row("**all**", all, secs, Latency::of(latencies), failed)
        );
        let _ = writeln!(
            text,
            "\nLive tails received {} events over their reconnects.",
            thousands_sep(usize::try_from(self.outcome.tally.tail_events).unwrap_or(usize::MAX))
        );
        text
    }

    /// The BENCHMARKS.md section.
    pub fn section(&self) -> String {
        let m = &self.machine;
        format!(
            "{}\n## Soak: a realistic mix for {} against one host\n\n\
             - Machine: {} ({} cores; {}), {} memory, Linux {}\n\
             - Load average (1/5/15 min): {} before the soak, {} after\n\
             - Date: {} (UTC)\n\
             - stasis commit: {}\n\
             - Command: {}\n\
             - Target: `{} serve --durability fsync`, started by the soak on 127.0.0.1; {} clients \
             (one agent's container each, four towns), 5–25 ms of think time between requests; the \
             host sampled from `/proc` every {} s\n\n\
             {}\n{NOTES}{}\n",
            RECORD_MARKS.start,
            minutes(self.outcome.elapsed),
            m.cpu,
            m.cores,
            m.flags,
            m.memory,
            m.kernel,
            self.load.0,
            self.load.1,
            m.date,
            m.commit,
            self.options.command,
            self.options.stasis_bin.display(),
            self.options.clients,
            self.options.sample_every.as_secs(),
            self.table(),
            RECORD_MARKS.end,
        )
    }
}

const NOTES: &str = "\
The ratio column divides the end of the load by the reading after the warm-up, when the
host's caches (compiled components, SQLite page caches, the open agent databases) have filled:
about 1× means no growth under a steady load. \"Idle 3 s after\" is read once the clients have
closed their connections, so descriptors held by live tails and keep-alive connections are gone
there; what stays is the listener and each agent's and town's open SQLite database (the file,
its WAL and its shared memory: three apiece). A request counts as an error when it got any status but the one the contract promises
for it (or no answer); a retried append must answer `duplicate: true` with its first seqs.
";

fn row(kind: &str, count: u64, secs: f64, latency: Option<Latency>, errors: u64) -> String {
    let (p50, p99) = latency.map_or(("–".to_owned(), "–".to_owned()), |l| {
        (millis(l.median), millis(l.p99))
    });
    format!(
        "| {kind} | {} | {:.1} | {p50} | {p99} | {errors} |",
        thousands_sep(usize::try_from(count).unwrap_or(usize::MAX)),
        count as f64 / secs
    )
}

fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

fn minutes(elapsed: Duration) -> String {
    let secs = elapsed.as_secs();
    if secs >= 60 && secs % 60 < 5 {
        format!("{} minutes", secs / 60)
    } else {
        format!("{secs} s")
    }
}
