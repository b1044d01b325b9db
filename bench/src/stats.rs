//! What a workload measured: a rate or a latency distribution.

use std::time::Duration;

/// Items (events, messages) acknowledged over a timed window.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rate {
    /// Items counted.
    pub items: u64,
    /// How long the window lasted.
    pub elapsed: Duration,
}

impl Rate {
    /// Items per second.
    pub fn per_sec(&self) -> f64 {
        let secs = self.elapsed.as_secs_f64();
        if secs > 0.0 {
            self.items as f64 / secs
        } else {
            0.0
        }
    }
}

/// The median and 99th percentile of a set of samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Latency {
    /// 50th percentile.
    pub median: Duration,
    /// 99th percentile (nearest rank).
    pub p99: Duration,
    /// How many samples.
    pub samples: usize,
}

impl Latency {
    /// Summarises `samples`; `None` when there are none.
    pub fn of(mut samples: Vec<Duration>) -> Option<Self> {
        if samples.is_empty() {
            return None;
        }
        samples.sort_unstable();
        Some(Self {
            median: percentile(&samples, 50),
            p99: percentile(&samples, 99),
            samples: samples.len(),
        })
    }
}

/// Nearest-rank percentile of sorted, non-empty `samples`.
fn percentile(sorted: &[Duration], pct: usize) -> Duration {
    let rank = (sorted.len() * pct).div_ceil(100).max(1);
    sorted.get(rank - 1).copied().unwrap_or(Duration::ZERO)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(values: &[u64]) -> Vec<Duration> {
        values.iter().map(|&v| Duration::from_millis(v)).collect()
    }

    #[test]
    fn median_and_p99_use_nearest_rank() {
        let summary = Latency::of(ms(&(1..=100).rev().collect::<Vec<_>>()));
        assert_eq!(summary.map(|s| s.median), Some(Duration::from_millis(50)));
        assert_eq!(summary.map(|s| s.p99), Some(Duration::from_millis(99)));
        assert_eq!(
            Latency::of(ms(&[7])).map(|s| s.p99),
            Some(Duration::from_millis(7))
        );
        assert_eq!(Latency::of(Vec::new()), None);
    }

    #[test]
    fn a_rate_divides_items_by_seconds() {
        let rate = Rate {
            items: 500,
            elapsed: Duration::from_millis(250),
        };
        assert!((rate.per_sec() - 2000.0).abs() < 1e-9);
    }
}
