//! A measured figure as a table cell, or why it is missing.

use super::format::{millis, one_line, thousands};
use crate::{
    results::{Measured, Missing},
    stats::{Latency, Rate},
    workloads::memory::PeakRss,
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
                    "PUT: VmHWM {:.1} MiB from VmRSS {:.1} MiB before (+{:.1} MiB); GET: VmHWM \
                     {:.1} MiB from {:.1} MiB (+{:.1} MiB); the larger = {:.3}× the body{}",
                    mib(m.peak_kib),
                    mib(m.before_kib),
                    mib(m.peak_kib.saturating_sub(m.before_kib)),
                    mib(m.get_peak_kib),
                    mib(m.before_get_kib),
                    mib(m.get_peak_kib.saturating_sub(m.before_get_kib)),
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

/// One latency out of a workload's figures, or why there is none.
pub fn pick<T>(measured: &Measured<T>, latency: impl Fn(&T) -> Latency) -> Figure {
    match measured {
        Ok(figures) => Figure::Latency(latency(figures)),
        Err(missing) => Figure::missing(missing),
    }
}
