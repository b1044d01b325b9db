//! A connection's clock: which phase it is in and when that phase must end.
//!
//! hyper 1.x offers one timer, `header_read_timeout`, which starts whenever
//! hyper waits for a request head, so it cannot tell a client that is slow
//! to send its head from a keep-alive connection resting between requests.
//! This clock tells them apart:
//!
//! - a new connection must deliver a whole head within the header timeout;
//! - after a response, a connection may rest for the idle timeout (measured
//!   from its last response byte written), and once the next head's first
//!   byte arrives, the head must be whole within the header timeout;
//! - while a request is in flight (from its head to its response's last
//!   body frame) nothing expires: bodies have their own rate check, and a
//!   live tail streams for as long as its client listens.

use crate::config::ServerLimits;
use std::{
    io,
    pin::Pin,
    sync::{Arc, Mutex, MutexGuard, PoisonError},
    task::{Context, Poll},
    time::Instant,
};
use tokio::{
    io::{AsyncRead, AsyncWrite, ReadBuf},
    sync::Notify,
};

/// Why a connection was closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expiry {
    /// Its request head did not arrive whole in time.
    Head,
    /// It rested between requests for too long.
    Idle,
    /// It had sent no request head and a new connection took its place.
    Evicted,
}

/// The phase state of one connection.
#[derive(Debug)]
struct Phase {
    started: Instant,
    served_any: bool,
    in_flight: usize,
    idle_since: Instant,
    head_started: Option<Instant>,
    last_write: Instant,
    evicted: bool,
}

/// Shared by the connection's IO, its requests and its watchdog.
#[derive(Debug)]
pub struct Clock {
    phase: Mutex<Phase>,
    /// Wakes the watchdog when a deadline may have come closer.
    changed: Notify,
}

impl Clock {
    /// A clock for a connection accepted now.
    pub fn start() -> Arc<Self> {
        let now = Instant::now();
        Arc::new(Self {
            phase: Mutex::new(Phase {
                started: now,
                served_any: false,
                in_flight: 0,
                idle_since: now,
                head_started: None,
                last_write: now,
                evicted: false,
            }),
            changed: Notify::new(),
        })
    }

    /// Resolves when the connection's current phase has run out of time.
    pub async fn expired(&self, limits: &ServerLimits) -> Expiry {
        loop {
            // `notify_one` keeps a permit, so a change made between reading
            // the deadline and waiting is not missed.
            let changed = self.changed.notified();
            match self.deadline(limits) {
                None => changed.await,
                Some((at, why)) if at <= Instant::now() => return why,
                Some((at, _)) => {
                    tokio::select! {
                        () = changed => {}
                        () = tokio::time::sleep_until(at.into()) => {}
                    }
                }
            }
        }
    }

    /// A request head arrived and its handler starts; see [`InFlight`].
    pub fn begin(self: &Arc<Self>) -> InFlight {
        let mut phase = self.lock();
        phase.in_flight += 1;
        phase.served_any = true;
        phase.head_started = None;
        InFlight {
            clock: Arc::clone(self),
        }
    }

    /// If the connection has sent no whole request head yet (and so may be
    /// evicted for a new connection): whether any byte of one came, and
    /// when the connection started.
    pub fn waiting_for_first_head(&self) -> Option<(bool, Instant)> {
        let phase = self.lock();
        (!phase.served_any && phase.in_flight == 0 && !phase.evicted)
            .then_some((phase.head_started.is_some(), phase.started))
    }

    /// Closes the connection now, unless a request head has arrived.
    pub fn evict(&self) -> bool {
        let mut phase = self.lock();
        if phase.served_any || phase.in_flight > 0 {
            return false;
        }
        phase.evicted = true;
        self.changed.notify_one();
        true
    }

    fn deadline(&self, limits: &ServerLimits) -> Option<(Instant, Expiry)> {
        let phase = self.lock();
        if phase.evicted {
            return Some((phase.started, Expiry::Evicted));
        }
        if phase.in_flight > 0 {
            return None;
        }
        if !phase.served_any {
            return Some((phase.started + limits.header_timeout, Expiry::Head));
        }
        if let Some(head) = phase.head_started {
            return Some((head + limits.header_timeout, Expiry::Head));
        }
        let resting_since = phase.idle_since.max(phase.last_write);
        Some((resting_since + limits.idle_timeout, Expiry::Idle))
    }

    fn read(&self, bytes: usize) {
        if bytes == 0 {
            return;
        }
        let mut phase = self.lock();
        if phase.in_flight == 0 && phase.head_started.is_none() {
            phase.head_started = Some(Instant::now());
            self.changed.notify_one();
        }
    }

    fn wrote(&self, bytes: usize) {
        if bytes > 0 {
            self.lock().last_write = Instant::now();
        }
    }

    fn lock(&self) -> MutexGuard<'_, Phase> {
        self.phase.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A request in flight; dropped with its response's body (after the last
/// frame, or when the connection goes).
#[derive(Debug)]
pub struct InFlight {
    clock: Arc<Clock>,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let mut phase = self.clock.lock();
        phase.in_flight = phase.in_flight.saturating_sub(1);
        if phase.in_flight == 0 {
            phase.idle_since = Instant::now();
            self.clock.changed.notify_one();
        }
    }
}

/// A connection's socket, telling its clock about every read and write.
pub struct Clocked<S> {
    inner: S,
    clock: Arc<Clock>,
}

impl<S> Clocked<S> {
    /// `inner`, reporting to `clock`.
    pub fn new(inner: S, clock: Arc<Clock>) -> Self {
        Self { inner, clock }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Clocked<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = polled {
            this.clock.read(buf.filled().len().saturating_sub(before));
        }
        polled
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Clocked<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_write(cx, buf);
        if let Poll::Ready(Ok(written)) = polled {
            this.clock.wrote(written);
        }
        polled
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        if let Poll::Ready(Ok(written)) = polled {
            this.clock.wrote(written);
        }
        polled
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn limits() -> ServerLimits {
        ServerLimits {
            header_timeout: Duration::from_secs(5),
            idle_timeout: Duration::from_secs(60),
            ..ServerLimits::default()
        }
    }

    fn deadline(clock: &Clock) -> Option<(Duration, Expiry)> {
        let started = clock.lock().started;
        clock
            .deadline(&limits())
            .map(|(at, why)| (at.saturating_duration_since(started), why))
    }

    #[test]
    fn phases_move_from_head_to_in_flight_to_idle_to_head() {
        let clock = Clock::start();
        assert_eq!(
            deadline(&clock),
            Some((Duration::from_secs(5), Expiry::Head))
        );
        let request = clock.begin();
        assert_eq!(deadline(&clock), None, "nothing expires in flight");
        drop(request);
        let Some((rest, Expiry::Idle)) = deadline(&clock) else {
            panic!("resting after a response");
        };
        assert!(rest >= Duration::from_secs(60));
        clock.read(1);
        let Some((head, Expiry::Head)) = deadline(&clock) else {
            panic!("the next head has started");
        };
        assert!(head < rest, "the head timeout replaces the idle one");
    }
}
