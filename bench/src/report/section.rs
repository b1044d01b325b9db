//! A BENCHMARKS.md section: the run's facts, the table and its notes.

use super::{
    EVENT_LOG, Marks, Row, SNAPSHOTS,
    notes::{NOTES, SNAPSHOT_NOTES},
    table,
};
use crate::machine::Machine;

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
    /// The facts every section opens with (machine with its CPU flags, load, date, commit,
    /// command), each a `- ` line, then `targets`: what was measured, as (label, text).
    pub fn facts(&self, targets: &[(&str, &str)]) -> String {
        let m = &self.machine;
        let mut lines = format!(
            "- Machine: {} ({} cores; {}), {} memory, Linux {}\n\
             - {}\n\
             - Date: {} (UTC)\n\
             - stasis commit: {}\n\
             - Command: {}\n",
            m.cpu,
            m.cores,
            m.flags,
            m.memory,
            m.kernel,
            self.load_line(),
            m.date,
            m.commit,
            self.command,
        );
        for (label, text) in targets {
            lines.push_str(&format!("- {label}: {text}\n"));
        }
        lines
    }

    /// The section's load-average line, without its leading `- `.
    fn load_line(&self) -> String {
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
    format!(
        "{}\n## {heading}\n\n{}\n{}\n{notes}{}\n",
        marks.start,
        info.facts(&[("Target", &info.target)]),
        table(rows),
        marks.end,
    )
}
