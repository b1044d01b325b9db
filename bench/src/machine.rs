//! What machine and which commit a run was on, for the record.

use std::{
    process::Command,
    time::{SystemTime, UNIX_EPOCH},
};

/// The facts a recorded run states about where it ran.
#[derive(Debug, Clone)]
pub struct Machine {
    /// CPU model name.
    pub cpu: String,
    /// Logical cores.
    pub cores: usize,
    /// The CPU features that move stasis's figures (SHA-256 and vector
    /// extensions), each marked present or absent.
    pub flags: String,
    /// Total memory, human readable.
    pub memory: String,
    /// Kernel release.
    pub kernel: String,
    /// Today's date, `YYYY-MM-DD` (UTC).
    pub date: String,
    /// `git rev-parse --short HEAD`, with `-dirty` for uncommitted changes.
    pub commit: String,
}

/// The 1, 5 and 15 minute load averages, as `/proc/loadavg` gives them.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg").map_or_else(
        |_| "unknown".to_owned(),
        |text| {
            text.split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ")
        },
    )
}

impl Machine {
    /// Reads `/proc` and git; anything unreadable says `unknown`.
    pub fn detect() -> Self {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu = cpuinfo
            .lines()
            .find_map(|line| line.strip_prefix("model name")?.split_once(':'))
            .map_or_else(|| "unknown CPU".to_owned(), |(_, v)| v.trim().to_owned());
        let cores = match cpuinfo
            .lines()
            .filter(|l| l.starts_with("processor"))
            .count()
        {
            0 => std::thread::available_parallelism().map_or(0, usize::from),
            n => n,
        };
        Self {
            flags: notable_flags(&cpuinfo),
            cpu,
            cores,
            memory: memory(),
            kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease")
                .map_or_else(|_| "unknown".to_owned(), |s| s.trim().to_owned()),
            date: today(),
            commit: commit(),
        }
    }
}

/// `sha_ni yes, avx2 yes, avx512f no` from `/proc/cpuinfo`'s first
/// `flags` line: SHA extensions decide snapshot hashing speed.
fn notable_flags(cpuinfo: &str) -> String {
    const NOTABLE: [&str; 4] = ["sha_ni", "aes", "avx2", "avx512f"];
    let Some(flags) = cpuinfo
        .lines()
        .find_map(|line| line.strip_prefix("flags")?.split_once(':'))
        .map(|(_, flags)| flags.split_whitespace().collect::<Vec<_>>())
    else {
        return "flags unknown".to_owned();
    };
    NOTABLE
        .iter()
        .map(|name| format!("{name} {}", if flags.contains(name) { "yes" } else { "no" }))
        .collect::<Vec<_>>()
        .join(", ")
}

fn memory() -> String {
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    meminfo
        .lines()
        .find_map(|line| line.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or_else(
            || "unknown".to_owned(),
            |kib| format!("{:.1} GiB", kib / 1024.0 / 1024.0),
        )
}

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

fn commit() -> String {
    match git(&["rev-parse", "--short", "HEAD"]) {
        Some(hash) if !hash.is_empty() => {
            let dirty = git(&["status", "--porcelain", "--untracked-files=no"])
                .is_some_and(|s| !s.is_empty());
            if dirty { format!("{hash}-dirty") } else { hash }
        }
        _ => "unknown (no git commit)".to_owned(),
    }
}

fn today() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (y, m, d) = civil_from_days(i64::try_from(secs / 86_400).unwrap_or(0));
    format!("{y:04}-{m:02}-{d:02}")
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (Howard
/// Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (
        y,
        u32::try_from(m).unwrap_or(0),
        u32::try_from(d).unwrap_or(0),
    )
}

#[cfg(test)]
mod tests {
    use super::{civil_from_days, notable_flags};

    #[test]
    fn notable_flags_say_which_are_present() {
        let cpuinfo = "model name\t: X\nflags\t\t: fpu sse avx2 sha_ni\n";
        assert_eq!(
            notable_flags(cpuinfo),
            "sha_ni yes, aes no, avx2 yes, avx512f no"
        );
        assert_eq!(notable_flags(""), "flags unknown");
    }

    #[test]
    fn day_counts_map_to_calendar_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(19_782), (2024, 2, 29));
        assert_eq!(civil_from_days(20_454), (2026, 1, 1));
    }
}
