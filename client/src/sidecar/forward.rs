//! The forwarder thread: builds batches from the queue (a short linger, stasis's limits),
//! stamps each, writes the stamp state, and sends it until stasis stores it. It also runs the
//! resyncs queued by the reader and by gaps, in their place in the order.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::Sender;
use std::time::{Duration, Instant};

use serde::Deserialize;

use super::batch::{Batch, BatchBuilder};
use super::control::Control;
use super::event::Outgoing;
use super::queue::{Item, Queue, Resync};
use super::resync::{self, Resent};
use super::runtime::Runtime;
use super::snapshots::SnapshotCall;
use super::state::{ProducerState, StateFile};
use super::stats::{Stats, add};
use super::{Log, now_ms};
use crate::error::Error;
use crate::http::Client;
use crate::ids::{AgentRef, town_path};
use crate::retry::{self, RetryPolicy};

/// The longest one append attempt may take (a 4 MiB body on a slow link included).
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(60);
/// While stasis stays unreachable, a reminder at most this often.
const REMIND_EVERY: Duration = Duration::from_secs(30);

/// stasis's answer to an append.
#[derive(Debug, Deserialize)]
struct Ack {
    last_seq: u64,
    #[serde(default)]
    duplicate: bool,
}

/// Why forwarding ended early.
#[derive(Debug)]
pub(crate) enum Stop {
    /// A refusal that retrying cannot fix, or a local failure: the run ends.
    Fatal(Error),
    /// The shutdown budget ran out.
    OutOfTime,
}

/// What became of one send.
enum Sent {
    Stored(Ack),
    /// stasis refused this batch itself (400, 413): split it, or skip its only event.
    Refused(Error),
}

/// Everything the forwarder thread needs.
pub(crate) struct Forwarder {
    /// A client that tries once: this thread retries itself, forever.
    pub(crate) client: Client,
    pub(crate) agent: AgentRef,
    pub(crate) runtime: Runtime,
    pub(crate) queue: Arc<Queue>,
    pub(crate) control: Arc<Control>,
    pub(crate) stats: Arc<Stats>,
    pub(crate) log: Log,
    pub(crate) state: ProducerState,
    pub(crate) state_file: StateFile,
    /// The container this run belongs to (a state file from another one gets a new producer).
    pub(crate) container_id: String,
    pub(crate) linger: Duration,
    /// The newest seq stasis acknowledged (the snapshots' watermark).
    pub(crate) acked: Arc<AtomicU64>,
    pub(crate) snapshots: Sender<SnapshotCall>,
    /// Resync events waiting to go, ahead of the queue.
    pub(crate) pending: VecDeque<Outgoing>,
    /// Where a failed resync should have started (the next one starts there).
    pub(crate) missed_since: Option<u64>,
}

impl Forwarder {
    /// Forwards until the queue is closed and empty; records a fatal stop in the control.
    pub(crate) fn run(mut self) {
        match self.forward_all() {
            Ok(()) => {
                self.state.in_flight = None;
                if let Err(e) = self.state_file.save(&self.state) {
                    (self.log)(&format!("could not clear the batch in flight: {e}"));
                }
                self.control.set_flushed();
            }
            Err(Stop::Fatal(error)) => self.control.fail(error),
            Err(Stop::OutOfTime) => {}
        }
    }

    fn forward_all(&mut self) -> Result<(), Stop> {
        self.start()?;
        let mut builder = BatchBuilder::new(self.state.producer_id.len());
        loop {
            match self.fill(&mut builder) {
                Fill::Send => {}
                Fill::Resync(resync) => {
                    self.send_built(&mut builder)?;
                    self.resync(&resync);
                    continue;
                }
                Fill::Closed => return self.send_built(&mut builder),
            }
            self.send_built(&mut builder)?;
        }
    }

    /// Re-sends the batch a previous run left in flight, else checks that stasis takes the
    /// token; then starts a new producer when the state came from another container.
    fn start(&mut self) -> Result<(), Stop> {
        match self.state.in_flight.take() {
            Some(batch) => {
                (self.log)(&format!(
                    "re-sending the batch in flight before the restart: producer {} seq {}, {} events",
                    self.state.producer_id,
                    batch.seq,
                    batch.events.len()
                ));
                self.deliver(batch)?;
            }
            None => self.probe()?,
        }
        if self.state.container_id != self.container_id {
            (self.log)(&format!(
                "the state came from container {}: a new producer for container {}",
                self.state.container_id, self.container_id
            ));
            self.state.container_id.clone_from(&self.container_id);
            self.state.rotate();
        }
        Ok(())
    }

    /// `GET /api/towns/{town}`: 401/403 end the run before any event is at stake.
    fn probe(&self) -> Result<(), Stop> {
        let path = town_path(self.agent.town()).map_err(Stop::Fatal)?;
        let mut failures = Failures::new();
        loop {
            let deadline = self.attempt_deadline();
            match self.client.get_json::<serde_json::Value>(&path, Some(deadline)) {
                Ok(_) => {
                    failures.recovered(&self.log);
                    (self.log)(&format!("stasis at {} takes the token", self.client.config().base_url()));
                    return Ok(());
                }
                Err(e) if retryable(&e) => self.wait_to_retry(&mut failures, &e)?,
                Err(e) => return Err(Stop::Fatal(e)),
            }
        }
    }

    /// Fills `builder`: resync events first, then the queue, lingering for more.
    fn fill(&mut self, builder: &mut BatchBuilder) -> Fill {
        self.fill_pending(builder);
        if !self.pending.is_empty() {
            return Fill::Send;
        }
        if builder.is_empty() {
            match self.queue.next() {
                None => return Fill::Closed,
                Some(Item::Resync(resync)) => return Fill::Resync(resync),
                Some(Item::Event(event)) => builder.push(event),
            }
        }
        let until = Instant::now() + self.linger;
        while !builder.is_full() {
            match self.queue.next_event_until(until, |e| builder.fits(e)) {
                Some(event) => builder.push(event),
                None => break,
            }
        }
        Fill::Send
    }

    /// Sends what `builder` holds, then every resync event still pending.
    fn send_built(&mut self, builder: &mut BatchBuilder) -> Result<(), Stop> {
        while !builder.is_empty() || !self.pending.is_empty() {
            if builder.is_empty() {
                self.fill_pending(builder);
            }
            let seq = self.state.take_seq();
            let batch = builder.take(seq);
            self.deliver(batch)?;
        }
        Ok(())
    }

    /// Moves resync events into `builder` while they fit.
    fn fill_pending(&mut self, builder: &mut BatchBuilder) {
        while let Some(event) = self.pending.front() {
            if !builder.fits(event) {
                return;
            }
            if let Some(event) = self.pending.pop_front() {
                builder.push(event);
            }
        }
    }

    /// Appends the gap event (if any) and what the runtime gives back, ahead of the queue.
    fn resync(&mut self, resync: &Resync) {
        let now = now_ms();
        if let Some(gap) = &resync.gap {
            (self.log)(&format!(
                "gap: {} events ({} bytes) read between {} and {} ms were dropped while the buffer was full",
                gap.dropped_events, gap.dropped_bytes, gap.from_ms, gap.to_ms
            ));
            match resync::gap_event(gap, now) {
                Ok(event) => self.pending.push_back(event),
                Err(e) => (self.log)(&format!("could not encode the gap event: {e}")),
            }
        }
        let since = self.missed_since.take().map_or(resync.since_ms, |m| m.min(resync.since_ms));
        let request = Resync {
            since_ms: since,
            ..resync.clone()
        };
        let Resent {
            events,
            messages,
            parts,
            error,
        } = resync::read_back(&self.runtime, &request, now);
        match error {
            Some(error) => {
                (self.log)(&format!(
                    "resync ({}) failed, retried with the next one: {error}",
                    resync.reason
                ));
                self.missed_since = Some(since);
            }
            None => (self.log)(&format!(
                "resync ({}): {messages} messages and {parts} parts changed since {since} ms re-sent",
                resync.reason
            )),
        }
        add(&self.stats.resyncs, 1);
        add(&self.stats.resent_events, events.len() as u64);
        self.pending.extend(events);
    }

    /// Sends `batch` until stored; a refused batch is split, a refused single event skipped.
    fn deliver(&mut self, batch: Batch) -> Result<(), Stop> {
        let mut work = vec![batch];
        while let Some(batch) = work.pop() {
            let count = batch.events.len();
            match self.send(batch)? {
                Sent::Stored(ack) => self.stored(&ack, count),
                Sent::Refused(error) => {
                    let Some(refused) = self.state.in_flight.take() else {
                        continue;
                    };
                    if count > 1 {
                        let (first, second) = refused.split(self.state.take_seq());
                        (self.log)(&format!("stasis refused a batch of {count} events ({error}): sending it in two"));
                        work.push(second);
                        work.push(first);
                    } else {
                        add(&self.stats.refused, 1);
                        (self.log)(&format!("stasis refused an event ({error}): skipped"));
                    }
                }
            }
        }
        Ok(())
    }

    /// Writes the state with `batch` in flight, then posts it until stasis answers for good.
    fn send(&mut self, batch: Batch) -> Result<Sent, Stop> {
        self.state.covered_until_ms = self.state.covered_until_ms.max(batch.newest_received_ms);
        self.state.in_flight = Some(batch);
        self.save()?;
        let path = self.agent.path("/events");
        let mut failures = Failures::new();
        loop {
            let Some(batch) = &self.state.in_flight else {
                return Err(Stop::Fatal(Error::Config("no batch in flight".into())));
            };
            let body = batch
                .body(&self.state.producer_id)
                .map_err(|e| Stop::Fatal(Error::Config(format!("encoding a batch: {e}"))))?;
            let deadline = self.attempt_deadline();
            let error = match self.client.post_json::<Ack>(&path, &body, Some(deadline)) {
                Ok(ack) => {
                    failures.recovered(&self.log);
                    return Ok(Sent::Stored(ack));
                }
                Err(error) => error,
            };
            match (error.status(), error.code()) {
                (Some(409), Some("producer_seq_stale")) => self.restamp()?,
                (Some(400 | 413), _) => return Ok(Sent::Refused(error)),
                _ if retryable(&error) => self.wait_to_retry(&mut failures, &error)?,
                _ => return Err(Stop::Fatal(error)),
            }
        }
    }

    /// stasis forgot this producer's window: the batch goes again under a new producer.
    fn restamp(&mut self) -> Result<(), Stop> {
        let old = self.state.producer_id.clone();
        self.state.rotate();
        let seq = self.state.take_seq();
        if let Some(batch) = &mut self.state.in_flight {
            batch.seq = seq;
        }
        (self.log)(&format!(
            "stasis no longer remembers producer {old}: continuing as {}",
            self.state.producer_id
        ));
        self.save()
    }

    fn save(&self) -> Result<(), Stop> {
        self.state_file.save(&self.state).map_err(Stop::Fatal)
    }

    fn stored(&mut self, ack: &Ack, count: usize) {
        add(&self.stats.batches, 1);
        if ack.duplicate {
            add(&self.stats.duplicates, 1);
        } else {
            add(&self.stats.events_forwarded, count as u64);
        }
        self.acked.fetch_max(ack.last_seq, Ordering::SeqCst);
        if self.state.in_flight.as_ref().is_some_and(|b| b.ends_turn) {
            // The channel only closes when the snapshot thread is gone: nothing to tell then.
            let _ = self.snapshots.send(SnapshotCall::TurnEnded);
        }
        if self.queue.reopen_if_room() {
            (self.log)("the buffer has room again: queuing events (a gap event and a resync follow)");
        }
    }

    /// An attempt ends within [`ATTEMPT_TIMEOUT`], and never past the shutdown deadline.
    fn attempt_deadline(&self) -> Instant {
        let normal = Instant::now() + ATTEMPT_TIMEOUT;
        self.control
            .stop_deadline()
            .map_or(normal, |stop| stop.min(normal))
    }

    /// Sleeps before the next attempt, or gives up when the shutdown deadline is past.
    fn wait_to_retry(&self, failures: &mut Failures, error: &Error) -> Result<(), Stop> {
        let delay = failures.next(error, &self.log);
        let resume = Instant::now() + delay;
        if self.control.stop_deadline().is_some_and(|stop| resume >= stop) {
            return Err(Stop::OutOfTime);
        }
        std::thread::sleep(delay);
        Ok(())
    }
}

enum Fill {
    Send,
    Resync(Resync),
    Closed,
}

/// Whether retrying the same request may succeed: stasis unreachable, 5xx, 503, 429.
fn retryable(error: &Error) -> bool {
    match error.root() {
        Error::Api { status, .. } => retry::is_retryable_status(*status) && !error.is_permanent(),
        Error::Transport { .. } | Error::Protocol { .. } | Error::OutOfTime { .. } => true,
        _ => false,
    }
}

/// Consecutive failures of one request: the backoff and what gets logged.
struct Failures {
    count: u32,
    since: Option<Instant>,
    reminded: Option<Instant>,
}

impl Failures {
    fn new() -> Self {
        Failures {
            count: 0,
            since: None,
            reminded: None,
        }
    }

    /// The wait before the next attempt (250 ms doubling up to 5 s, jittered); logs the first
    /// failure and then a reminder every 30 s.
    fn next(&mut self, error: &Error, log: &Log) -> Duration {
        let policy = RetryPolicy {
            initial_delay: Duration::from_millis(250),
            max_delay: Duration::from_secs(5),
            ..RetryPolicy::default()
        };
        let delay = policy.delay(self.count, None, retry::jitter());
        let now = Instant::now();
        let since = *self.since.get_or_insert(now);
        if self.reminded.is_none_or(|at| now.duration_since(at) >= REMIND_EVERY) {
            log(&format!(
                "stasis unreachable for {:.1?} ({} attempts; last: {error}); retrying until it answers",
                now.duration_since(since),
                self.count + 1
            ));
            self.reminded = Some(now);
        }
        self.count = self.count.saturating_add(1);
        delay
    }

    fn recovered(&self, log: &Log) {
        if let Some(since) = self.since {
            log(&format!("stasis answered again after {:.1?}", since.elapsed()));
        }
    }
}
