//! The host's resident memory, open descriptors and threads, from `/proc`.

use std::time::{Duration, Instant};

/// One reading of the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample {
    /// Time since the clients started.
    pub at: Duration,
    /// `VmRSS`, in KiB.
    pub rss_kib: u64,
    /// Entries of `/proc/PID/fd`.
    pub fds: u64,
    /// `Threads`.
    pub threads: u64,
}

/// Reads the process now; `None` once it is gone.
pub fn read(pid: u32, at: Duration) -> Option<Sample> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.count() as u64;
    Some(Sample {
        at,
        rss_kib: field(&status, "VmRSS:")?,
        fds,
        threads: field(&status, "Threads:")?,
    })
}

/// The number after `name` in `/proc/PID/status` (kB units dropped).
fn field(status: &str, name: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|line| line.strip_prefix(name))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|value| value.parse().ok())
}

/// Samples `pid` at once and then every `interval` until `deadline`.
pub async fn every(pid: u32, interval: Duration, deadline: Instant) -> Vec<Sample> {
    let started = Instant::now();
    let mut samples = Vec::new();
    loop {
        samples.extend(read(pid, started.elapsed()));
        let now = Instant::now();
        if now >= deadline {
            return samples;
        }
        tokio::time::sleep(interval.min(deadline - now)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_fields_are_read_without_their_unit() {
        let status = "Name:\tstasis\nVmRSS:\t   51234 kB\nThreads:\t9\n";
        assert_eq!(field(status, "VmRSS:"), Some(51_234));
        assert_eq!(field(status, "Threads:"), Some(9));
        assert_eq!(field(status, "VmHWM:"), None);
    }

    #[test]
    fn this_process_can_be_read() {
        let sample = read(std::process::id(), Duration::ZERO);
        assert!(sample.is_some_and(|s| s.rss_kib > 0 && s.fds > 0 && s.threads > 0));
    }
}
