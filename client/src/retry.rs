//! When to retry, and how long to wait: exponential backoff with jitter, bounded in attempts and
//! in time, honouring the server's `Retry-After`.
//!
//! Retried: failures to connect or exchange (refused, reset, timeouts, DNS) and the statuses of
//! [`is_retryable_status`] (408, 425, 429, 500, 502, 503, 504). Everything else (the other 4xx,
//! 501, 505) fails at once: sending the same request again would get the same answer.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::error::{Error, Result};

/// The bounds of a retry loop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in all, the first included (1 means no retry).
    pub max_attempts: u32,
    /// No new attempt starts later than this after the first one started.
    pub max_elapsed: Duration,
    /// The backoff before the first retry (before jitter).
    pub initial_delay: Duration,
    /// The longest backoff between two attempts (before `Retry-After`, which may ask for more).
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    /// 10 attempts within 90 s, backoff from 250 ms doubling up to 8 s. 90 s covers the
    /// edge's KV propagation (reads may lag up to about a minute behind a write).
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 10,
            max_elapsed: Duration::from_secs(90),
            initial_delay: Duration::from_millis(250),
            max_delay: Duration::from_secs(8),
        }
    }
}

impl RetryPolicy {
    /// A policy that never retries.
    pub fn none() -> Self {
        RetryPolicy {
            max_attempts: 1,
            ..RetryPolicy::default()
        }
    }

    /// The wait before retry number `retry` (0 for the first retry): the exponential backoff
    /// `min(initial · 2^retry, max_delay)`, jittered into its upper half by `jitter` in `[0, 1)`
    /// ("equal jitter": never less than half, so clients spread out but still back off), and
    /// never shorter than the server's `Retry-After`.
    pub fn delay(&self, retry: u32, retry_after: Option<Duration>, jitter: f64) -> Duration {
        let factor = 2u32.saturating_pow(retry.min(31));
        let base = self
            .initial_delay
            .saturating_mul(factor)
            .min(self.max_delay);
        let jitter = jitter.clamp(0.0, 1.0);
        let backoff = base / 2 + base.mul_f64(jitter) / 2;
        backoff.max(retry_after.unwrap_or(Duration::ZERO))
    }
}

/// Whether an answer with this status is worth retrying unchanged.
pub fn is_retryable_status(status: u16) -> bool {
    matches!(status, 408 | 425 | 429 | 500 | 502 | 503 | 504)
}

/// Parses a `Retry-After` header given in seconds (the form stasis sends). The HTTP-date form is
/// not used by stasis and gives `None` (plain backoff then applies).
pub fn parse_retry_after(value: &str) -> Option<Duration> {
    let secs: u64 = value.trim().parse().ok()?;
    Some(Duration::from_secs(secs.min(24 * 3600)))
}

/// The attempt and time bounds of one retry loop, as it runs.
#[derive(Debug)]
pub struct Backoff<'p> {
    policy: &'p RetryPolicy,
    started: Instant,
    deadline: Option<Instant>,
    attempts: u32,
}

impl<'p> Backoff<'p> {
    /// A loop whose first attempt starts at `started`; `deadline`, when given, is a hard end
    /// (such as a drain budget) on top of the policy's own bounds.
    pub fn new(policy: &'p RetryPolicy, started: Instant, deadline: Option<Instant>) -> Self {
        Backoff {
            policy,
            started,
            deadline,
            attempts: 1,
        }
    }

    /// Attempts made so far (the first one included).
    pub fn attempts(&self) -> u32 {
        self.attempts
    }

    /// After a failed attempt at `now`: how long to wait before the next one, or `None` when
    /// the bounds allow no more (attempts used up, or the next one would start too late).
    pub fn next_delay(
        &mut self,
        retry_after: Option<Duration>,
        jitter: f64,
        now: Instant,
    ) -> Option<Duration> {
        if self.attempts >= self.policy.max_attempts {
            return None;
        }
        let delay = self.policy.delay(self.attempts - 1, retry_after, jitter);
        let resume = now.checked_add(delay)?;
        if resume > self.started.checked_add(self.policy.max_elapsed)? {
            return None;
        }
        if self.deadline.is_some_and(|deadline| resume >= deadline) {
            return None;
        }
        self.attempts += 1;
        Some(delay)
    }
}

/// How one attempt failed (the error boxed: attempts travel in `Result`s).
#[derive(Debug)]
pub enum Attempt {
    /// Worth another try, after at least `retry_after` when the server said so.
    Retry {
        /// What went wrong this time.
        error: Box<Error>,
        /// The server's `Retry-After`.
        retry_after: Option<Duration>,
    },
    /// Final: retrying would not help.
    Fail(Box<Error>),
}

impl Attempt {
    /// A failure worth another try.
    pub fn retry(error: Error, retry_after: Option<Duration>) -> Self {
        Attempt::Retry {
            error: Box::new(error),
            retry_after,
        }
    }

    /// A final failure.
    pub fn fail(error: Error) -> Self {
        Attempt::Fail(Box::new(error))
    }
}

/// Told before each retry, e.g. to log it.
#[derive(Debug)]
pub struct RetryNotice<'a> {
    /// The operation.
    pub what: &'a str,
    /// The attempt that just failed (1 for the first).
    pub attempt: u32,
    /// The wait before the next attempt.
    pub delay: Duration,
    /// Why the attempt failed.
    pub error: &'a Error,
}

/// Runs `op` until it succeeds, fails for good, or the bounds end the loop
/// (then [`Error::GaveUp`] carries the last error).
pub fn run<T>(
    policy: &RetryPolicy,
    deadline: Option<Instant>,
    what: &str,
    notify: &dyn Fn(&RetryNotice<'_>),
    mut op: impl FnMut() -> Result<T, Attempt>,
) -> Result<T> {
    let started = Instant::now();
    let mut backoff = Backoff::new(policy, started, deadline);
    loop {
        match op() {
            Ok(value) => return Ok(value),
            Err(Attempt::Fail(error)) => return Err(*error),
            Err(Attempt::Retry { error, retry_after }) => {
                let attempt = backoff.attempts();
                match backoff.next_delay(retry_after, jitter(), Instant::now()) {
                    Some(delay) => {
                        notify(&RetryNotice {
                            what,
                            attempt,
                            delay,
                            error: &error,
                        });
                        std::thread::sleep(delay);
                    }
                    None => {
                        return Err(Error::GaveUp {
                            what: what.to_owned(),
                            attempts: attempt,
                            elapsed: started.elapsed(),
                            last: error,
                        });
                    }
                }
            }
        }
    }
}

/// A number in `[0, 1)` that differs between calls and between processes.
pub fn jitter() -> f64 {
    // RandomState is seeded from the OS once per process and varies per instance; hashing the
    // clock too makes every call differ. This is for spreading retries, not for secrets.
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let bits = RandomState::new().hash_one(nanos) >> 11;
    // 53 random bits over 2^53: exactly representable, below 1.
    bits as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> RetryPolicy {
        RetryPolicy {
            max_attempts: 5,
            max_elapsed: Duration::from_secs(20),
            initial_delay: Duration::from_millis(100),
            max_delay: Duration::from_secs(1),
        }
    }

    #[test]
    fn server_failures_and_throttling_retry_but_refusals_do_not() {
        for status in [408, 425, 429, 500, 502, 503, 504] {
            assert!(is_retryable_status(status), "{status}");
        }
        for status in [
            200, 201, 304, 400, 401, 403, 404, 405, 409, 410, 412, 413, 415, 501, 505,
        ] {
            assert!(!is_retryable_status(status), "{status}");
        }
    }

    #[test]
    fn backoff_doubles_up_to_its_cap() {
        let p = policy();
        let full: Vec<_> = (0..6).map(|n| p.delay(n, None, 0.999_999)).collect();
        let millis: Vec<_> = full.iter().map(|d| d.as_millis()).collect();
        assert_eq!(millis, [99, 199, 399, 799, 999, 999]);
        assert_eq!(p.delay(40, None, 0.0), Duration::from_millis(500));
    }

    #[test]
    fn jitter_keeps_the_wait_between_half_and_all_of_the_backoff() {
        let p = policy();
        for _ in 0..1000 {
            let d = p.delay(2, None, jitter());
            assert!(
                d >= Duration::from_millis(200) && d < Duration::from_millis(400),
                "{d:?}"
            );
        }
    }

    #[test]
    fn retry_after_is_a_floor() {
        let p = policy();
        let wait = Duration::from_secs(3);
        assert_eq!(p.delay(0, Some(wait), 0.5), wait);
        assert_eq!(
            p.delay(5, Some(Duration::ZERO), 0.0),
            Duration::from_millis(500)
        );
    }

    #[test]
    fn attempts_are_bounded() {
        let p = policy();
        let start = Instant::now();
        let mut backoff = Backoff::new(&p, start, None);
        let mut retries = 0;
        while backoff.next_delay(None, 0.0, start).is_some() {
            retries += 1;
        }
        assert_eq!(retries, 4);
        assert_eq!(backoff.attempts(), 5);
    }

    #[test]
    fn no_attempt_starts_after_the_time_bound_or_the_deadline() {
        let p = policy();
        let start = Instant::now();
        let mut backoff = Backoff::new(&p, start, None);
        let late = start + Duration::from_secs(20) - Duration::from_millis(10);
        assert_eq!(backoff.next_delay(None, 0.0, late), None);

        let mut backoff = Backoff::new(&p, start, Some(start + Duration::from_secs(2)));
        assert_eq!(
            backoff.next_delay(Some(Duration::from_secs(5)), 0.0, start),
            None
        );
        assert!(backoff.next_delay(None, 0.0, start).is_some());
    }

    #[test]
    fn retry_after_parses_seconds_only() {
        assert_eq!(parse_retry_after(" 2 "), Some(Duration::from_secs(2)));
        assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), None);
        assert_eq!(parse_retry_after("-1"), None);
    }

    #[test]
    fn a_loop_gives_up_with_the_last_error_once_attempts_run_out() {
        let p = RetryPolicy {
            initial_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(2),
            ..policy()
        };
        let mut calls = 0;
        let result: Result<()> = run(&p, None, "op", &|_| {}, || {
            calls += 1;
            Err(Attempt::retry(Error::Config(format!("try {calls}")), None))
        });
        assert_eq!(calls, 5);
        match result {
            Err(Error::GaveUp { attempts, last, .. }) => {
                assert_eq!(attempts, 5);
                assert_eq!(last.to_string(), "configuration: try 5");
            }
            other => panic!("expected GaveUp, got {other:?}"),
        }
    }

    #[test]
    fn a_final_failure_is_not_retried() {
        let mut calls = 0;
        let result: Result<()> = run(&policy(), None, "op", &|_| {}, || {
            calls += 1;
            Err(Attempt::fail(Error::Config("no".into())))
        });
        assert_eq!(calls, 1);
        assert!(matches!(result, Err(Error::Config(_))));
    }
}
