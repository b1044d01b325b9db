//! Where a workload's CPU time went: the server's processes and the bench
//! itself, read from `/proc` before and after the workload.
//!
//! This is what the edge section's explanations rest on: a figure is only
//! explained as "workerd was busy" when workerd's own CPU time says so.

use std::{
    collections::BTreeMap,
    time::{Duration, Instant},
};

/// The processes a workload's server time is charged to.
#[derive(Debug, Clone)]
pub enum Procs {
    /// One process: a host the bench spawned.
    Pid(u32),
    /// Every process of a process group: `wrangler dev` started with
    /// `setsid` (node, esbuild and its two workerd processes). `port` is the
    /// port it serves, which tells the workerd that listens on it (wrangler's
    /// proxy) from the one running the worker.
    Group {
        /// The process group id.
        pgid: u32,
        /// The port the dev server listens on.
        port: u16,
    },
}

/// CPU time per role at one instant.
#[derive(Debug, Clone)]
pub struct Snapshot {
    at: Instant,
    /// Per process: its role and CPU time so far.
    procs: BTreeMap<u32, (&'static str, Duration)>,
    /// Per thread of those processes: its run-queue wait so far.
    waits: BTreeMap<(u32, u32), Duration>,
    client: Duration,
}

impl Snapshot {
    /// Reads the CPU time of `procs` (if any) and of the bench itself.
    pub fn take(procs: Option<&Procs>) -> Self {
        let mut found = BTreeMap::new();
        match procs {
            Some(Procs::Pid(pid)) => {
                if let Some(stat) = Stat::read(&pid.to_string()) {
                    found.insert(*pid, ("stasis", stat.cpu));
                }
            }
            Some(Procs::Group { pgid, port }) => {
                for (pid, stat) in group(*pgid) {
                    found.insert(pid, (role(pid, &stat.comm, *port), stat.cpu));
                }
            }
            None => {}
        }
        let mut waits = BTreeMap::new();
        for pid in found.keys() {
            for (tid, wait) in run_queue_waits(*pid) {
                waits.insert((*pid, tid), wait);
            }
        }
        Self {
            at: Instant::now(),
            procs: found,
            waits,
            client: Stat::read("self").map_or(Duration::ZERO, |s| s.cpu),
        }
    }

    /// The CPU time used per role since this snapshot.
    pub fn usage(&self, procs: Option<&Procs>) -> CpuUse {
        let now = Snapshot::take(procs);
        let mut by_role: BTreeMap<&'static str, Duration> = BTreeMap::new();
        for (pid, (role, cpu)) in &now.procs {
            // A process started during the workload is charged all its time.
            let before = self.procs.get(pid).map_or(Duration::ZERO, |(_, c)| *c);
            *by_role.entry(role).or_default() += cpu.saturating_sub(before);
        }
        // Likewise a thread; a thread that ended meanwhile is not counted.
        let waited = now
            .waits
            .iter()
            .map(|(key, wait)| {
                wait.saturating_sub(self.waits.get(key).copied().unwrap_or_default())
            })
            .sum();
        let mut servers: Vec<(&'static str, Duration)> = by_role.into_iter().collect();
        servers.sort_by_key(|(_, cpu)| std::cmp::Reverse(*cpu));
        CpuUse {
            wall: now.at.saturating_duration_since(self.at),
            servers,
            waited,
            client: now.client.saturating_sub(self.client),
        }
    }
}

/// CPU time spent during one workload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuUse {
    /// How long the workload took.
    pub wall: Duration,
    /// The server's processes by role, busiest first.
    pub servers: Vec<(&'static str, Duration)>,
    /// How long the server's threads were runnable but waiting for a core
    /// (summed over threads: the machine was short of CPU for them).
    pub waited: Duration,
    /// The bench (the load generator) itself.
    pub client: Duration,
}

impl CpuUse {
    /// Percent of one core `cpu` is over the workload's wall time.
    pub fn percent(&self, cpu: Duration) -> f64 {
        let wall = self.wall.as_secs_f64();
        if wall > 0.0 {
            100.0 * cpu.as_secs_f64() / wall
        } else {
            0.0
        }
    }

    /// The share of one core used by `role`.
    pub fn role_percent(&self, role: &str) -> Option<f64> {
        self.servers
            .iter()
            .find(|(r, _)| *r == role)
            .map(|(_, cpu)| self.percent(*cpu))
    }

    /// The client's share of one core.
    pub fn client_percent(&self) -> f64 {
        self.percent(self.client)
    }

    /// The CPU time of `role`.
    pub fn role(&self, role: &str) -> Duration {
        self.servers
            .iter()
            .find(|(r, _)| *r == role)
            .map_or(Duration::ZERO, |(_, cpu)| *cpu)
    }

    /// The CPU time of every role but `role`.
    pub fn others(&self, role: &str) -> Duration {
        self.servers
            .iter()
            .filter(|(r, _)| *r != role)
            .map(|(_, cpu)| *cpu)
            .sum()
    }

    /// E.g. `workerd 98%, proxy workerd 31%, node 12%, client 20%, 0.3
    /// threads queued` (server threads ready to run but waiting for a core,
    /// on average).
    pub fn summary(&self) -> String {
        let mut parts: Vec<String> = self
            .servers
            .iter()
            .filter(|(_, cpu)| self.percent(*cpu) >= 0.5)
            .map(|(role, cpu)| format!("{role} {:.0}%", self.percent(*cpu)))
            .collect();
        parts.push(format!("client {:.0}%", self.client_percent()));
        if !self.servers.is_empty() {
            parts.push(format!(
                "{:.1} threads queued",
                self.waited.as_secs_f64() / self.wall.as_secs_f64().max(1e-9)
            ));
        }
        parts.join(", ")
    }
}

/// What `/proc/PID/stat` says about a process.
struct Stat {
    comm: String,
    pgrp: u32,
    cpu: Duration,
}

impl Stat {
    /// Reads `/proc/{pid}/stat` (`pid` may be `self`); `None` when the
    /// process is gone or the file is not as expected.
    fn read(pid: &str) -> Option<Self> {
        Self::parse(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
    }

    fn parse(text: &str) -> Option<Self> {
        // `pid (comm) state ppid pgrp … utime stime …`; comm may hold
        // spaces and parentheses, so it ends at the last `)`.
        let open = text.find('(')?;
        let close = text.rfind(')')?;
        let comm = text.get(open + 1..close)?.to_owned();
        let fields: Vec<&str> = text.get(close + 1..)?.split_whitespace().collect();
        // fields[0] is field 3 (state): field n is fields[n - 3].
        let pgrp = fields.get(2)?.parse().ok()?;
        let utime: u64 = fields.get(11)?.parse().ok()?;
        let stime: u64 = fields.get(12)?.parse().ok()?;
        let ticks = rustix::param::clock_ticks_per_second().max(1);
        let micros = (utime + stime).saturating_mul(1_000_000) / ticks;
        Some(Self {
            comm,
            pgrp,
            cpu: Duration::from_micros(micros),
        })
    }
}

/// How long each thread of `pid` has been runnable but not running (the
/// second field of `/proc/PID/task/TID/schedstat`).
fn run_queue_waits(pid: u32) -> Vec<(u32, Duration)> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .filter_map(|task| {
            let task = task.ok()?;
            let tid: u32 = task.file_name().to_str()?.parse().ok()?;
            let text = std::fs::read_to_string(task.path().join("schedstat")).ok()?;
            let nanos: u64 = text.split_whitespace().nth(1)?.parse().ok()?;
            Some((tid, Duration::from_nanos(nanos)))
        })
        .collect()
}

/// Every process of group `pgid`, with its stat.
fn group(pgid: u32) -> Vec<(u32, Stat)> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| {
            let name = entry.ok()?.file_name();
            let pid: u32 = name.to_str()?.parse().ok()?;
            let stat = Stat::read(&pid.to_string())?;
            (stat.pgrp == pgid).then_some((pid, stat))
        })
        .collect()
}

/// The versions of wrangler and workerd that `wrangler dev`'s process
/// group runs, read from the `package.json` beside the binaries its
/// processes were started from, e.g. ` (wrangler 4.86.0, workerd 1.2…)`.
pub fn describe_group(pgid: u32) -> String {
    let mut found: BTreeMap<&'static str, String> = BTreeMap::new();
    for (pid, _) in group(pgid) {
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        for arg in cmdline.split(|&b| b == 0) {
            let arg = std::path::Path::new(std::str::from_utf8(arg).unwrap_or_default());
            // …/wrangler/wrangler-dist/cli.js and …/workerd-linux-64/bin/workerd
            let (name, package) = if arg.ends_with("wrangler-dist/cli.js") {
                ("wrangler", arg.parent().and_then(std::path::Path::parent))
            } else if arg.ends_with("bin/workerd") {
                ("workerd", arg.parent().and_then(std::path::Path::parent))
            } else {
                continue;
            };
            if let Some(version) = package.and_then(package_version) {
                found.insert(name, version);
            }
        }
    }
    if found.is_empty() {
        return String::new();
    }
    let parts: Vec<String> = found
        .iter()
        .map(|(name, version)| format!("{name} {version}"))
        .collect();
    format!(" ({})", parts.join(", "))
}

fn package_version(dir: &std::path::Path) -> Option<String> {
    let text = std::fs::read_to_string(dir.join("package.json")).ok()?;
    let value: serde_json::Value = serde_json::from_str(&text).ok()?;
    value.get("version")?.as_str().map(str::to_owned)
}

/// What a process of `wrangler dev` is there for.
fn role(pid: u32, comm: &str, port: u16) -> &'static str {
    match comm {
        "workerd" => {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let listens_on_port = cmdline.split(|&b| b == 0).any(|arg| {
                let arg = String::from_utf8_lossy(arg);
                arg.contains("entry=") && arg.ends_with(&format!(":{port}"))
            });
            if listens_on_port {
                "proxy workerd"
            } else {
                "workerd"
            }
        }
        "node" => "node",
        "esbuild" => "esbuild",
        _ => "other",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stat_line_yields_comm_group_and_cpu_time() {
        let ticks = rustix::param::clock_ticks_per_second();
        let line = format!(
            "4242 (work (er) d) S 1 4200 4200 0 -1 4194560 100 0 0 0 {} {} 0 0 20 0 8 0",
            ticks * 2,
            ticks / 2
        );
        let stat = Stat::parse(&line);
        assert_eq!(stat.as_ref().map(|s| s.comm.as_str()), Some("work (er) d"));
        assert_eq!(stat.as_ref().map(|s| s.pgrp), Some(4200));
        assert_eq!(stat.map(|s| s.cpu), Some(Duration::from_millis(2500)));
    }

    #[test]
    fn the_bench_sees_its_own_cpu_time() {
        let before = Snapshot::take(None);
        let mut x = 0u64;
        for i in 0..5_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        let used = before.usage(None);
        assert!(used.servers.is_empty());
        assert!(used.wall > Duration::ZERO);
    }
}
