//! The accept loop: a cap on connections served at once, and accept
//! failures that neither flood the log nor spin.
//!
//! When the process runs out of descriptors, `accept` fails until a
//! connection closes; retrying at once would spin and log millions of
//! lines. Instead each failure is followed by a pause that doubles (up to a
//! second), and the failures are logged at most every [`LOG_EVERY`] with a
//! count. Pending connections wait in the listen backlog meanwhile, and the
//! connection timeouts free descriptors.

use super::{Site, connection, log_throttle::LogThrottle};
use hyper_util::server::graceful::GracefulShutdown;
use std::{
    future::Future,
    io,
    sync::Arc,
    time::{Duration, Instant},
};
use tokio::{net::TcpListener, sync::Semaphore};

/// Connections over the cap that may be answered 503 at once; past them a
/// new connection is closed unanswered (each answer holds a descriptor
/// until the client's request head arrives).
const REFUSAL_SLOTS: usize = 64;
/// The pause after a first failed accept; it doubles with each failure in
/// a row, up to [`LONGEST_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_millis(10);
const LONGEST_PAUSE: Duration = Duration::from_secs(1);
/// A repeating accept failure or refusal is logged at most this often.
const LOG_EVERY: Duration = Duration::from_secs(10);

/// Accepts connections until `shutdown` resolves; each is served under
/// `graceful` while a slot is free, else answered 503.
pub async fn accept_until(
    listener: TcpListener,
    site: Arc<Site>,
    graceful: &GracefulShutdown,
    shutdown: impl Future<Output = ()>,
) {
    let slots = Arc::new(Semaphore::new(site.limits.max_connections));
    let refusals = Arc::new(Semaphore::new(REFUSAL_SLOTS));
    let mut failures = Failures::default();
    let mut refused = LogThrottle::new(LOG_EVERY);
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut shutdown => return,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(err) => {
                let pause = failures.failed(&err);
                tokio::select! {
                    () = tokio::time::sleep(pause) => {}
                    () = &mut shutdown => return,
                }
                continue;
            }
        };
        failures.recovered();
        if let Ok(slot) = Arc::clone(&slots).try_acquire_owned() {
            tokio::spawn(connection::serve(stream, Arc::clone(&site), graceful, slot));
            continue;
        }
        if let Some(count) = refused.occurred(Instant::now()) {
            tracing::warn!(
                refused = count,
                max_connections = site.limits.max_connections,
                "connections over the cap were answered 503 (logged at most every 10 s)"
            );
        }
        if let Ok(slot) = Arc::clone(&refusals).try_acquire_owned() {
            tokio::spawn(connection::refuse(stream, Arc::clone(&site), slot));
        }
    }
}

/// Accept failures in a row, and their log line.
struct Failures {
    in_a_row: u32,
    log: LogThrottle,
}

impl Default for Failures {
    fn default() -> Self {
        Self {
            in_a_row: 0,
            log: LogThrottle::new(LOG_EVERY),
        }
    }
}

impl Failures {
    /// Counts a failure; returns how long to wait before the next accept.
    fn failed(&mut self, err: &io::Error) -> Duration {
        if is_about_one_connection(err) {
            tracing::debug!(%err, "a connection failed before it was accepted");
            return Duration::ZERO;
        }
        self.in_a_row = self.in_a_row.saturating_add(1);
        if let Some(count) = self.log.occurred(Instant::now()) {
            tracing::warn!(
                %err,
                failures = count,
                "accepting a connection failed; pausing between attempts (logged at most every 10 s)"
            );
        }
        let doublings = self.in_a_row.saturating_sub(1).min(16);
        FIRST_PAUSE
            .saturating_mul(1 << doublings)
            .min(LONGEST_PAUSE)
    }

    /// An accept succeeded: the pause starts short again.
    fn recovered(&mut self) {
        if self.in_a_row == 0 {
            return;
        }
        self.in_a_row = 0;
        if let Some(count) = self.log.pending(Instant::now()) {
            tracing::warn!(
                failures = count,
                "accepting connections again, after more failures"
            );
        }
    }
}

/// Errors that end one pending connection, not the listener's ability to
/// accept the next: no pause is needed.
fn is_about_one_connection(err: &io::Error) -> bool {
    matches!(
        err.kind(),
        io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionRefused
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pause_doubles_to_a_second_and_resets_on_success() {
        let mut failures = Failures::default();
        let full = io::Error::from_raw_os_error(24); // EMFILE
        let pauses: Vec<u128> = (0..9).map(|_| failures.failed(&full).as_millis()).collect();
        assert_eq!(pauses, [10, 20, 40, 80, 160, 320, 640, 1000, 1000]);
        failures.recovered();
        assert_eq!(failures.failed(&full), FIRST_PAUSE);
    }

    #[test]
    fn an_aborted_connection_needs_no_pause() {
        let mut failures = Failures::default();
        let aborted = io::Error::from(io::ErrorKind::ConnectionAborted);
        assert_eq!(failures.failed(&aborted), Duration::ZERO);
    }
}
