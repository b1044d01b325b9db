//! Peak memory of the host during a large snapshot PUT and GET: a fresh
//! `stasis serve`, its resident set read from `/proc/PID/status` before one
//! PUT (`VmRSS`) and its peak after (`VmHWM`), then the same around the GET
//! of it. 1 GiB in a full run (the default snapshot limit): the server splits
//! and assembles streaming, so the peak must not grow with the body.

use crate::{
    client::{Call, Conn},
    server::{HostConfig, StasisHost},
    workloads::snapshot::{check_receipt, random_bytes},
};
use anyhow::{Context, Result};
use bytes::Bytes;
use hyper::Method;

/// The body of a full run: 1 GiB, the default snapshot limit.
pub const LARGEST: usize = 1 << 30;
/// The body of a quick run: 25 MiB.
pub const QUICK: usize = 26_214_400;

/// What `/proc` said around the PUT.
#[derive(Debug, Clone, Copy)]
pub struct PeakRss {
    /// Bytes PUT.
    pub body: usize,
    /// `VmRSS` just before the PUT, in KiB.
    pub before_kib: u64,
    /// `VmHWM` after it, in KiB: the peak resident set of the PUT.
    pub peak_kib: u64,
    /// Whether the peak could be reset just before the PUT (writing `5` to
    /// `/proc/PID/clear_refs`); if not, `peak_kib` may be an earlier peak
    /// (the start, the warm-up).
    pub peak_reset: bool,
    /// `VmRSS` just before the GET, in KiB (the peak reset again).
    pub before_get_kib: u64,
    /// `VmHWM` after the GET, in KiB.
    pub get_peak_kib: u64,
}

impl PeakRss {
    /// How many times the body the PUT or the GET (the larger) added to the
    /// resident set at its peak: `(VmHWM − VmRSS before) / body`.
    pub fn copies(&self) -> f64 {
        let put = self.peak_kib.saturating_sub(self.before_kib);
        let get = self.get_peak_kib.saturating_sub(self.before_get_kib);
        put.max(get) as f64 * 1024.0 / self.body.max(1) as f64
    }
}

/// Starts a host on `config`, stores a 1 KiB snapshot for `agent_path` (the
/// warm-up: the agent's object and the snapshot code are then loaded, as
/// they are on any server that has served a snapshot), resets the peak,
/// reads `VmRSS`, PUTs `body` bytes for the same agent and reads `VmHWM`,
/// then does the same around the GET of them.
pub async fn peak_rss(config: &HostConfig, agent_path: &str, body: usize) -> Result<PeakRss> {
    let host = StasisHost::start(config).await?;
    let pid = host.pid().context("the host has no pid")?;
    let path = format!("{agent_path}/db-snapshot");
    let mut conn = Conn::open(host.endpoint()).await?;
    let warm = Bytes::from(random_bytes(1024, 3));
    conn.expect_ok(&Call::octets(Method::PUT, path.as_str(), warm))
        .await?;
    let big = Bytes::from(random_bytes(body, 4));
    let peak_reset = std::fs::write(format!("/proc/{pid}/clear_refs"), "5").is_ok();
    let before_kib = status_kib(pid, "VmRSS")?;
    let receipt = conn
        .expect_ok(&Call::octets(Method::PUT, path.as_str(), big))
        .await?;
    let peak_kib = status_kib(pid, "VmHWM")?;
    check_receipt(&receipt, body)?;
    let peak_reset = peak_reset && std::fs::write(format!("/proc/{pid}/clear_refs"), "5").is_ok();
    let before_get_kib = status_kib(pid, "VmRSS")?;
    let got = conn.expect_ok(&Call::get(path.as_str())).await?;
    let get_peak_kib = status_kib(pid, "VmHWM")?;
    if got.len() != body {
        anyhow::bail!("the GET answered {} bytes, {body} were PUT", got.len());
    }
    drop(got);
    host.stop()?;
    Ok(PeakRss {
        body,
        before_kib,
        peak_kib,
        peak_reset,
        before_get_kib,
        get_peak_kib,
    })
}

/// A `kB` field of `/proc/PID/status`.
pub fn status_kib(pid: u32, field: &str) -> Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .with_context(|| format!("reading /proc/{pid}/status"))?;
    parse_kib(&status, field).with_context(|| format!("no {field} in /proc/{pid}/status"))
}

fn parse_kib(status: &str, field: &str) -> Option<u64> {
    status.lines().find_map(|line| {
        let value = line.strip_prefix(field)?.strip_prefix(':')?;
        value.trim().strip_suffix("kB")?.trim().parse().ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_fields_parse_in_kib() {
        let status = "Name:\tstasis\nVmHWM:\t  204800 kB\nVmRSS:\t  102400 kB\n";
        assert_eq!(parse_kib(status, "VmRSS"), Some(102_400));
        assert_eq!(parse_kib(status, "VmHWM"), Some(204_800));
        assert_eq!(parse_kib(status, "VmSwap"), None);
    }

    #[test]
    fn copies_count_the_growth_in_bodies() {
        let peak = PeakRss {
            body: 1024 * 1024,
            before_kib: 1000,
            peak_kib: 1000 + 3 * 1024,
            peak_reset: true,
            before_get_kib: 2000,
            get_peak_kib: 2000 + 1024,
        };
        assert!((peak.copies() - 3.0).abs() < 1e-9);
        let get = PeakRss {
            get_peak_kib: 2000 + 5 * 1024,
            ..peak
        };
        assert!((get.copies() - 5.0).abs() < 1e-9, "the larger of the two");
    }
}
