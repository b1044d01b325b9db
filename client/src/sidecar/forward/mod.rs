//! The forwarder thread: builds batches from the queue (a short linger, stasis's limits),
//! stamps each and hands it to [`deliver`], which sends it until stasis stores it. It
//! also runs the resyncs queued by the reader and by gaps, in their place in the order.

mod deliver;

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::sync::mpsc::Sender;
use std::time::{Duration, Instant};

use deliver::{Failures, retryable};

use super::batch::BatchBuilder;
use super::control::Control;
use super::event::Outgoing;
use super::queue::{Item, Queue, Resync};
use super::resync::{self, Resent};
use super::runtime::Runtime;
use super::snapshots::SnapshotCall;
use super::state::{ProducerState, StateFile};
use super::stats::{Stats, add};
use super::stored::AgentLog;
use super::{Log, now_ms};
use crate::error::Error;
use crate::http::Client;
use crate::ids::{AgentRef, town_path};

/// Why forwarding ended early.
#[derive(Debug)]
pub(crate) enum Stop {
    /// A refusal that retrying cannot fix, or a local failure: the run ends.
    Fatal(Error),
    /// The shutdown budget ran out.
    OutOfTime,
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
            match self
                .client
                .get_json::<serde_json::Value>(&path, Some(deadline))
            {
                Ok(_) => {
                    failures.recovered(&self.log);
                    (self.log)(&format!(
                        "stasis at {} takes the token",
                        self.client.config().base_url()
                    ));
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
        let since = self
            .missed_since
            .take()
            .map_or(resync.since_ms, |m| m.min(resync.since_ms));
        let request = Resync {
            since_ms: since,
            ..resync.clone()
        };
        let Resent {
            events,
            messages,
            parts,
            error,
        } = resync::read_back(&self.runtime, &request, now, &self.stored_log());
        match error {
            Some(error) => {
                (self.log)(&format!(
                    "resync ({}) failed, retried with the next one: {error}",
                    resync.reason
                ));
                self.missed_since = Some(since);
            }
            None => (self.log)(&format!(
                "resync ({}): {messages} messages and {parts} parts changed since {since} ms and not stored yet re-sent",
                resync.reason
            )),
        }
        add(&self.stats.resyncs, 1);
        add(&self.stats.resent_events, events.len() as u64);
        self.pending.extend(events);
    }
}

impl Forwarder {
    /// The agent's log, as a resync compares with it.
    fn stored_log(&self) -> AgentLog<'_> {
        AgentLog {
            client: &self.client,
            agent: &self.agent,
        }
    }
}

enum Fill {
    Send,
    Resync(Resync),
    Closed,
}
