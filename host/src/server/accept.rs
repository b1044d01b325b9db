//! The accept loop: a cap on connections served at once (see
//! [`super::capacity`]), and accept failures that neither flood the log
//! nor spin.
//!
//! When the process runs out of descriptors, `accept` fails until a
//! connection closes; retrying at once would spin and log millions of
//! lines. Instead each failure is followed by a pause that doubles (up to a
//! second), and the failures are logged at most every [`LOG_EVERY`] with a
//! count. Pending connections wait in the listen backlog meanwhile; idle
//! objects are closed to free descriptors, and so are connections as they
//! time out.

use super::{Site, capacity::Admission, clock::Clock, connection, log_throttle::LogThrottle};
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
/// `graceful` while it has a place, else answered 503.
pub async fn accept_until(
    listener: TcpListener,
    site: Arc<Site>,
    graceful: &GracefulShutdown,
    shutdown: impl Future<Output = ()>,
) {
    let refusals = Arc::new(Semaphore::new(REFUSAL_SLOTS));
    let mut failures = Failures::default();
    let mut crowding = Crowding::default();
    let mut shutdown = std::pin::pin!(shutdown);
    let mut log_tick = tokio::time::interval(LOG_EVERY);
    'accepting: loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut shutdown => break,
            _ = log_tick.tick() => {
                crowding.log_pending(&site);
                continue;
            }
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(err) => {
                if is_out_of_descriptors(&err) {
                    site.api.objects().relieve_descriptor_pressure();
                }
                let pause = failures.failed(&err);
                tokio::select! {
                    () = tokio::time::sleep(pause) => {}
                    () = &mut shutdown => break,
                }
                continue;
            }
        };
        failures.recovered();
        // Until the connection to take is old enough (the next ones wait in
        // the listen queue meanwhile). The clock starts when a place is
        // given, so that the wait does not count toward its own age.
        let (clock, admission) = loop {
            let clock = Clock::start();
            match site.capacity.admit(&clock) {
                Admission::Wait(wait) => tokio::select! {
                    () = tokio::time::sleep(wait) => {}
                    () = &mut shutdown => break 'accepting,
                },
                admission => break (clock, admission),
            }
        };
        let place = match admission {
            Admission::Admitted(place) => place,
            Admission::Replaced(place) => {
                crowding.replaced(&site);
                // Lets the new connection read the head it may have sent
                // before the next one could replace it in turn.
                let served = connection::serve(stream, Arc::clone(&site), graceful, clock, place);
                tokio::spawn(served);
                tokio::task::yield_now().await;
                continue;
            }
            Admission::Full | Admission::Wait(_) => {
                crowding.refused(&site);
                if let Ok(slot) = Arc::clone(&refusals).try_acquire_owned() {
                    tokio::spawn(connection::refuse(stream, Arc::clone(&site), slot));
                }
                continue;
            }
        };
        tokio::spawn(connection::serve(
            stream,
            Arc::clone(&site),
            graceful,
            clock,
            place,
        ));
    }
    crowding.log_rest(&site);
}

/// Connections turned away or closed at the cap, and their log lines: each
/// kind logged at once, then at most every [`LOG_EVERY`] with how many
/// came since, so that every one is counted.
struct Crowding {
    refused: LogThrottle,
    replaced: LogThrottle,
}

impl Default for Crowding {
    fn default() -> Self {
        Self {
            refused: LogThrottle::new(LOG_EVERY),
            replaced: LogThrottle::new(LOG_EVERY),
        }
    }
}

impl Crowding {
    fn refused(&mut self, site: &Site) {
        if let Some(count) = self.refused.occurred(Instant::now()) {
            log_refused(site, count);
        }
    }

    fn replaced(&mut self, site: &Site) {
        if let Some(count) = self.replaced.occurred(Instant::now()) {
            log_replaced(site, count);
        }
    }

    /// Logs the counts not yet logged, due or not (the server is stopping).
    fn log_rest(&mut self, site: &Site) {
        if let Some(count) = self.refused.rest() {
            log_refused(site, count);
        }
        if let Some(count) = self.replaced.rest() {
            log_replaced(site, count);
        }
    }

    /// Logs the counts not yet logged, when a line is due.
    fn log_pending(&mut self, site: &Site) {
        let now = Instant::now();
        if let Some(count) = self.refused.pending(now) {
            log_refused(site, count);
        }
        if let Some(count) = self.replaced.pending(now) {
            log_replaced(site, count);
        }
    }
}

fn log_refused(site: &Site, count: u64) {
    tracing::warn!(
        refused = count,
        max_connections = site.limits.max_connections,
        "connections over the cap, every one with a request under way, were answered 503 \
         (logged at most every 10 s, with the count since the last line)"
    );
}

fn log_replaced(site: &Site, count: u64) {
    tracing::info!(
        closed = count,
        max_connections = site.limits.max_connections,
        "at the cap, connections that had sent no request head were closed for new ones \
         (logged at most every 10 s, with the count since the last line)"
    );
}

/// The process or the system has no descriptor left.
fn is_out_of_descriptors(err: &io::Error) -> bool {
    /// `EMFILE` and `ENFILE` on Linux.
    const OUT_OF_DESCRIPTORS: [i32; 2] = [24, 23];
    err.raw_os_error()
        .is_some_and(|code| OUT_OF_DESCRIPTORS.contains(&code))
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
