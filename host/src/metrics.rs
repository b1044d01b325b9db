//! The host's metrics, served at `GET /metrics` in the OpenMetrics text
//! format (which Prometheus scrapes) through `prometheus-client`.
//!
//! Labels are bounded: route templates (never ids), methods, statuses,
//! object kinds and a few fixed words. Nothing is labelled per town or
//! agent. README ("Operating") lists every name.

use prometheus_client::{
    encoding::EncodeLabelSet,
    metrics::{
        counter::Counter,
        family::Family,
        gauge::Gauge,
        histogram::{Histogram, exponential_buckets},
    },
    registry::Registry,
};
use stasis_domain::{DomainError, agent::AgentReply, town::TownReply};
use std::{
    collections::HashSet,
    path::{Path, PathBuf},
    sync::{Mutex, PoisonError},
    time::Duration,
};

/// The content type of [`Metrics::render`]'s text.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// One request's labels.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    /// The route template.
    pub route: &'static str,
    /// The method, bounded.
    pub method: &'static str,
    /// The response's status.
    pub status: u16,
}

/// Labels of what is counted per route template.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RouteLabels {
    /// The route template.
    pub route: &'static str,
}

/// One fixed word: an object's kind, a push's kind, a chunk's fate.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct KindLabels {
    /// The word.
    pub kind: &'static str,
}

type Histograms<L> = Family<L, Histogram, fn() -> Histogram>;

/// Every signal the host keeps.
pub struct Metrics {
    registry: Registry,
    /// Requests answered, by route template, method and status.
    pub requests: Family<RequestLabels, Counter>,
    /// Time from a request's head to its response's head.
    pub latency: Histograms<RouteLabels>,
    /// Request body bytes received.
    pub bytes_in: Family<RouteLabels, Counter>,
    /// Response body bytes sent.
    pub bytes_out: Family<RouteLabels, Counter>,
    /// Append batches committed (retries of a batch already appended not
    /// counted).
    pub appends: Counter,
    /// Events those batches appended.
    pub events_appended: Counter,
    /// Live tails (SSE) open now.
    pub tails_open: Gauge,
    /// Snapshots committed: `whole` (a whole-file upload) or `manifest`
    /// (a chunked one).
    pub snapshot_pushes: Family<KindLabels, Counter>,
    /// Chunks a `missing` call asked about: `present` (no upload needed)
    /// or `missing`.
    pub chunks_checked: Family<KindLabels, Counter>,
    /// Chunk uploads: `stored`, or `already_present` (the agent held it).
    pub chunk_uploads: Family<KindLabels, Counter>,
    /// Calls per group commit, by object kind.
    pub group_calls: Histograms<KindLabels>,
    /// How long a group's COMMIT took (the fsync), by object kind.
    pub commit_seconds: Histograms<KindLabels>,
    /// Calls waiting in an object's queue when a call joins it (that call
    /// included), by object kind.
    pub queue_depth: Histograms<KindLabels>,
    /// Writes refused by fencing, by error code.
    pub fenced: Family<KindLabels, Counter>,
    towns_draining: Gauge,
    draining: Mutex<HashSet<PathBuf>>,
}

fn latency_buckets() -> Histogram {
    Histogram::new(exponential_buckets(0.0005, 2.0, 16))
}

fn count_buckets() -> Histogram {
    Histogram::new(exponential_buckets(1.0, 2.0, 12))
}

fn commit_buckets() -> Histogram {
    Histogram::new(exponential_buckets(0.0001, 2.0, 16))
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// Every metric at zero, registered.
    pub fn new() -> Self {
        let mut metrics = Self {
            registry: Registry::with_prefix("stasis"),
            requests: Family::default(),
            latency: Family::new_with_constructor(latency_buckets),
            bytes_in: Family::default(),
            bytes_out: Family::default(),
            appends: Counter::default(),
            events_appended: Counter::default(),
            tails_open: Gauge::default(),
            snapshot_pushes: Family::default(),
            chunks_checked: Family::default(),
            chunk_uploads: Family::default(),
            group_calls: Family::new_with_constructor(count_buckets),
            commit_seconds: Family::new_with_constructor(commit_buckets),
            queue_depth: Family::new_with_constructor(count_buckets),
            fenced: Family::default(),
            towns_draining: Gauge::default(),
            draining: Mutex::new(HashSet::new()),
        };
        metrics.register();
        metrics
    }

    /// Units are spelled in the names (`_seconds`, `_bytes`) rather than
    /// declared as OpenMetrics `UNIT`s, which some parsers refuse on
    /// histograms.
    fn register(&mut self) {
        let r = &mut self.registry;
        r.register(
            "http_requests",
            "Requests answered, by route template, method and status",
            self.requests.clone(),
        );
        r.register(
            "http_request_duration_seconds",
            "From a request's head to its response's head, by route template",
            self.latency.clone(),
        );
        r.register(
            "http_request_body_bytes",
            "Request body bytes received, by route template",
            self.bytes_in.clone(),
        );
        r.register(
            "http_response_body_bytes",
            "Response body bytes sent, by route template",
            self.bytes_out.clone(),
        );
        r.register(
            "appends",
            "Append batches committed (not retries of an appended batch)",
            self.appends.clone(),
        );
        r.register(
            "events_appended",
            "Events appended by those batches",
            self.events_appended.clone(),
        );
        r.register(
            "sse_tails_open",
            "Live tails (SSE) open now",
            self.tails_open.clone(),
        );
        r.register(
            "snapshot_pushes",
            "Snapshots committed: whole (one upload) or manifest (chunks)",
            self.snapshot_pushes.clone(),
        );
        r.register(
            "snapshot_chunks_checked",
            "Chunks POST /db-snapshot/missing asked about: present or missing",
            self.chunks_checked.clone(),
        );
        r.register(
            "snapshot_chunk_uploads",
            "Chunk uploads: stored, or already_present",
            self.chunk_uploads.clone(),
        );
        r.register(
            "group_commit_calls",
            "Calls per group commit, by object kind",
            self.group_calls.clone(),
        );
        r.register(
            "group_commit_duration_seconds",
            "Time of a group's COMMIT (its fsync), by object kind",
            self.commit_seconds.clone(),
        );
        r.register(
            "object_queue_depth",
            "Calls queued on an object when one joins (it included), by object kind",
            self.queue_depth.clone(),
        );
        r.register(
            "fenced_writes_refused",
            "Writes refused by fencing, by error code",
            self.fenced.clone(),
        );
        r.register("towns_draining", "Towns draining (an eviction announced, no heartbeat since), among those this process has seen", self.towns_draining.clone());
    }

    /// The metrics in the OpenMetrics text format.
    pub fn render(&self) -> Result<String, std::fmt::Error> {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &self.registry)?;
        Ok(text)
    }

    /// Records whether the town whose database is `town` is draining, as a
    /// call on it just found.
    pub fn town_draining(&self, town: &Path, draining: bool) {
        let mut set = self.draining.lock().unwrap_or_else(PoisonError::into_inner);
        let changed = if draining {
            set.insert(town.to_path_buf())
        } else {
            set.remove(town)
        };
        if changed {
            self.towns_draining
                .set(i64::try_from(set.len()).unwrap_or(i64::MAX));
        }
    }

    /// Records one group commit on an object of `object_kind`: its size
    /// and how long its COMMIT took.
    pub fn group_committed(&self, object_kind: &'static str, calls: usize, commit: Duration) {
        let label = kind(object_kind);
        self.group_calls.get_or_create(&label).observe(calls as f64);
        self.commit_seconds
            .get_or_create(&label)
            .observe(commit.as_secs_f64());
    }

    /// Records what one committed agent call answered: appends and their
    /// events.
    pub fn agent_answered(&self, answer: &Result<AgentReply, DomainError>) {
        if let Ok(AgentReply::Appended(outcome)) = answer
            && !outcome.duplicate
        {
            self.appends.inc();
            let events = outcome.last_seq.saturating_sub(outcome.first_seq) + 1;
            self.events_appended.inc_by(events);
        }
    }

    /// Records what one committed call on the town whose database is
    /// `town` answered: whether the town is draining.
    pub fn town_answered(&self, town: &Path, answer: &Result<TownReply, DomainError>) {
        let draining = match answer {
            Ok(TownReply::Evicted(outcome)) => outcome.draining,
            Ok(TownReply::Heartbeat(outcome)) => outcome.draining,
            Ok(TownReply::State(state)) => state.draining,
            _ => return,
        };
        self.town_draining(town, draining);
    }
}

/// A label of one fixed word.
pub fn kind(kind: &'static str) -> KindLabels {
    KindLabels { kind }
}
