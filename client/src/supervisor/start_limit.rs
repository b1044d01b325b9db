//! When a crashed runtime starts again, and when the supervisor stops trying: at once after the
//! first crash in a row (a run that crashed once is most likely to start cleanly, and each
//! second of delay is a second the agent is gone), then after a delay that doubles from
//! `initial` to `max` (the count resets once a run lived `healthy_after`), and systemd's
//! `StartLimitBurst`/`StartLimitIntervalSec`: more than `burst` crashes within `interval` is
//! a crash loop, and the supervisor gives up.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// The restart policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RestartPolicy {
    /// The delay before the second restart in a row (the first is immediate).
    pub initial: Duration,
    /// The longest delay.
    pub max: Duration,
    /// A run that lived this long was healthy: the next crash starts the delays over.
    pub healthy_after: Duration,
    /// Crashes allowed within `interval`; one more gives up.
    pub burst: u32,
    /// The window `burst` counts in.
    pub interval: Duration,
}

impl Default for RestartPolicy {
    /// At once, then 0.5 s doubling to 30 s, healthy after 60 s, give up after 5 crashes within 120 s
    /// (systemd's own defaults are 5 starts in 10 s, too short for a runtime that takes seconds to
    /// start).
    fn default() -> Self {
        RestartPolicy {
            initial: Duration::from_millis(500),
            max: Duration::from_secs(30),
            healthy_after: Duration::from_secs(60),
            burst: 5,
            interval: Duration::from_secs(120),
        }
    }
}

/// What to do after a crash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Start again after this delay; `attempt` counts the restarts since the last healthy run.
    Restart {
        /// The wait before the start.
        delay: Duration,
        /// 1 for the first restart in a row.
        attempt: u32,
    },
    /// Too many crashes within the window.
    GiveUp {
        /// Crashes counted in the window.
        crashes: u32,
        /// The window.
        within: Duration,
    },
}

/// The crashes seen so far.
#[derive(Debug)]
pub struct StartLimit {
    policy: RestartPolicy,
    crashes: VecDeque<Instant>,
    in_a_row: u32,
}

impl StartLimit {
    /// No crash yet.
    pub fn new(policy: RestartPolicy) -> Self {
        StartLimit {
            policy,
            crashes: VecDeque::new(),
            in_a_row: 0,
        }
    }

    /// A run that started at `started` crashed at `now`: restart (after how long) or give up.
    pub fn crashed(&mut self, started: Instant, now: Instant) -> Verdict {
        if now.saturating_duration_since(started) >= self.policy.healthy_after {
            self.in_a_row = 0;
        }
        self.crashes.push_back(now);
        while let Some(&oldest) = self.crashes.front() {
            if now.saturating_duration_since(oldest) > self.policy.interval {
                self.crashes.pop_front();
            } else {
                break;
            }
        }
        let crashes = u32::try_from(self.crashes.len()).unwrap_or(u32::MAX);
        if crashes > self.policy.burst {
            return Verdict::GiveUp {
                crashes,
                within: self.policy.interval,
            };
        }
        let delay = match self.in_a_row.checked_sub(1) {
            None => Duration::ZERO,
            Some(doublings) => self
                .policy
                .initial
                .saturating_mul(1u32.checked_shl(doublings).unwrap_or(u32::MAX))
                .min(self.policy.max),
        };
        self.in_a_row = self.in_a_row.saturating_add(1);
        Verdict::Restart {
            delay,
            attempt: self.in_a_row,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> RestartPolicy {
        RestartPolicy {
            initial: Duration::from_millis(500),
            max: Duration::from_secs(30),
            healthy_after: Duration::from_secs(60),
            burst: 100,
            interval: Duration::from_secs(10),
        }
    }

    fn delay(verdict: Verdict) -> Option<Duration> {
        match verdict {
            Verdict::Restart { delay, .. } => Some(delay),
            Verdict::GiveUp { .. } => None,
        }
    }

    #[test]
    fn the_first_restart_is_immediate_then_the_delay_doubles_from_half_a_second_to_its_cap() {
        let mut limit = StartLimit::new(policy());
        let t0 = Instant::now();
        let delays: Vec<Option<Duration>> = (0..10u64)
            // Crashes 11 s apart: none is counted with another, none ran long enough to be healthy.
            .map(|i| {
                let at = t0 + Duration::from_secs(11 * i);
                delay(limit.crashed(at, at + Duration::from_secs(1)))
            })
            .collect();
        let ms: Vec<u128> = delays.iter().flatten().map(Duration::as_millis).collect();
        assert_eq!(
            ms,
            [0, 500, 1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000]
        );
    }

    #[test]
    fn a_run_that_lived_long_enough_starts_the_delays_over() {
        let mut limit = StartLimit::new(policy());
        let t0 = Instant::now();
        for i in 0..4u64 {
            let at = t0 + Duration::from_secs(11 * i);
            limit.crashed(at, at);
        }
        let started = t0 + Duration::from_secs(100);
        let verdict = limit.crashed(started, started + Duration::from_secs(61));
        assert_eq!(
            verdict,
            Verdict::Restart {
                delay: Duration::ZERO,
                attempt: 1
            }
        );
    }

    #[test]
    fn more_crashes_than_the_burst_within_the_interval_give_up() {
        let mut limit = StartLimit::new(RestartPolicy {
            burst: 3,
            ..policy()
        });
        let t0 = Instant::now();
        for i in 0..3u64 {
            let at = t0 + Duration::from_secs(i);
            assert!(matches!(limit.crashed(at, at), Verdict::Restart { .. }));
        }
        let fourth = t0 + Duration::from_secs(3);
        assert_eq!(
            limit.crashed(fourth, fourth),
            Verdict::GiveUp {
                crashes: 4,
                within: Duration::from_secs(10)
            }
        );
    }

    #[test]
    fn crashes_older_than_the_interval_no_longer_count() {
        let mut limit = StartLimit::new(RestartPolicy {
            burst: 2,
            ..policy()
        });
        let t0 = Instant::now();
        for i in [0u64, 1, 12, 13, 24, 25] {
            let at = t0 + Duration::from_secs(i);
            assert!(
                matches!(limit.crashed(at, at), Verdict::Restart { .. }),
                "crash at {i} s: at most 2 in any 10 s"
            );
        }
    }
}
