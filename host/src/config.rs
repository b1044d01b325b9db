//! Settings of `stasis serve`.

use anyhow::{Context, bail};
use stasis_api::{
    auth::{KeyRing, KeySettings},
    settings::StorageSettings,
    summariser::SummariserSettings,
};
use stasis_sqlite::Durability;
use std::{
    net::SocketAddr,
    path::{Path, PathBuf},
    time::Duration,
};

/// Everything `serve` needs.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    /// Address to listen on.
    pub listen: SocketAddr,
    /// Folder holding every object's database and the KV blobs.
    pub data_dir: PathBuf,
    /// Folder for compiled components; `None`: `cache` in `data_dir`.
    pub cache_dir: Option<PathBuf>,
    /// Whether a commit waits for fsync.
    pub durability: Durability,
    /// Retention: events kept per agent.
    pub max_events_per_agent: u64,
    /// Snapshots up to this many bytes are stored in the agent's SQL.
    pub snapshot_inline_limit: u64,
    /// The largest snapshot accepted (whole-file or manifest); larger ones
    /// are refused with 413.
    pub snapshot_limit: u64,
    /// The largest workspace accepted, in bytes of files; larger ones are
    /// refused with 413.
    pub workspace_limit: u64,
    /// How long uploaded chunks no manifest names yet are kept (an upload
    /// in progress) before they are collected.
    pub snapshot_pending_ttl: Duration,
    /// How long a superseded or deleted version's chunks stay readable.
    pub snapshot_grace: Duration,
    /// A town's current container counts as alive this many seconds after
    /// its newest heartbeat.
    pub liveness_timeout_secs: u64,
    /// How long superseded versions are kept.
    pub history_retention: stasis_domain::history::RetentionPolicy,
    /// The keys tokens are signed and verified with; `None` serves
    /// loopback only, without auth.
    pub keys: Option<KeyRing>,
    /// The model that summarises the turns a dispatch omits; `None`: they
    /// are cut.
    pub summariser: Option<SummariserSettings>,
    /// Timeouts and the connection cap.
    pub server: ServerLimits,
    /// How many objects stay open, and for how long.
    pub objects: ObjectLimits,
}

/// How the HTTP server bounds what a client may hold open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerLimits {
    /// The longest a request head may take: from the connection's start,
    /// or from the first byte after a response.
    pub header_timeout: Duration,
    /// How long a keep-alive connection may sit with no request and no
    /// traffic before it is closed.
    pub idle_timeout: Duration,
    /// The slowest a request body may arrive, in bytes per second, measured
    /// over each `body_window`; 0 lets a body stall for ever.
    pub body_min_rate: u64,
    /// The window `body_min_rate` is measured over.
    pub body_window: Duration,
    /// Request connections served at once; past it a new one takes the
    /// place of the oldest that has not sent a request head yet, or is
    /// answered 503.
    pub max_connections: usize,
    /// Live tails (event streams) open at once, apart from the request
    /// connections; one more is answered 503.
    pub max_tails: usize,
    /// The most bytes an import's body may carry (it is streamed, so this
    /// bounds transfer, not memory).
    pub max_import_bytes: u64,
    /// How long requests in flight get to finish after SIGTERM or SIGINT.
    pub shutdown_grace: Duration,
    /// Bytes kept free in the data folder, released when the disk fills so
    /// that reads and deletes go on (see `server::disk`); 0 keeps none.
    pub disk_reserve: u64,
}

impl Default for ServerLimits {
    fn default() -> Self {
        Self {
            header_timeout: Duration::from_secs(15),
            idle_timeout: Duration::from_secs(60),
            body_min_rate: 1024,
            body_window: Duration::from_secs(15),
            max_connections: 1024,
            max_tails: 1024,
            max_import_bytes: stasis_api::DEFAULT_IMPORT_LIMIT,
            shutdown_grace: Duration::from_secs(10),
            disk_reserve: 8 << 20,
        }
    }
}

/// Open objects (an agent's or a town's SQLite connection and its queue).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectLimits {
    /// The most objects kept open; past it, the least recently used idle
    /// ones are closed.
    pub max_open: usize,
    /// An object unused this long is closed.
    pub idle_timeout: Duration,
}

impl Default for ObjectLimits {
    fn default() -> Self {
        Self {
            max_open: 1024,
            idle_timeout: Duration::from_secs(60),
        }
    }
}

impl ServeConfig {
    /// Refuses settings that would be unsafe or meaningless.
    pub fn check(&self) -> anyhow::Result<()> {
        if self.keys.is_none() && !self.listen.ip().is_loopback() {
            bail!(
                "no key is configured (STASIS_SECRET, STASIS_KEYS or their files), so stasis \
                 serves only on loopback; {} is not a loopback address",
                self.listen
            );
        }
        // The rules the edge applies to the same settings.
        StorageSettings {
            max_events_per_agent: self.max_events_per_agent,
            snapshot_inline_limit: self.snapshot_inline_limit,
            snapshot_limit: self.snapshot_limit,
            workspace_limit: self.workspace_limit,
            snapshot_grace_ms: u64::try_from(self.snapshot_grace.as_millis()).unwrap_or(u64::MAX),
            liveness_timeout_secs: self.liveness_timeout_secs,
            history_retention: self.history_retention,
        }
        .check()?;
        self.check_limits()
    }

    fn check_limits(&self) -> anyhow::Result<()> {
        let durations = [
            ("--header-timeout", self.server.header_timeout),
            ("--idle-timeout", self.server.idle_timeout),
            ("--body-rate-window", self.server.body_window),
            ("--object-idle-timeout", self.objects.idle_timeout),
        ];
        if let Some((flag, _)) = durations.iter().find(|(_, d)| d.is_zero()) {
            bail!("{flag} must be longer than zero");
        }
        if self.server.max_connections == 0 {
            bail!("--max-connections must be at least 1");
        }
        if self.server.max_tails == 0 {
            bail!("--max-tails must be at least 1");
        }
        if self.objects.max_open == 0 {
            bail!("--max-open-objects must be at least 1");
        }
        Ok(())
    }
}

/// Where the keys come from: each setting as text, or a file holding it.
#[derive(Debug, Clone, Default)]
pub struct KeySources {
    /// `STASIS_SECRET`.
    pub secret: Option<String>,
    /// `STASIS_SECRET_FILE`.
    pub secret_file: Option<PathBuf>,
    /// `STASIS_KEYS`.
    pub keys: Option<String>,
    /// `STASIS_KEYS_FILE`.
    pub keys_file: Option<PathBuf>,
    /// `STASIS_SIGNING_KEY_ID`.
    pub signing_key_id: Option<String>,
}

/// Reads the keys (`None` when none is configured), refusing what
/// `stasis_api::auth::KeyRing::from_settings` refuses.
pub fn load_keys(sources: KeySources) -> anyhow::Result<Option<KeyRing>> {
    let secret = value_or_file(sources.secret, sources.secret_file.as_deref())?;
    let keys = value_or_file(sources.keys, sources.keys_file.as_deref())?;
    let settings = KeySettings {
        secret: secret.as_deref(),
        keys: keys.as_deref(),
        signing_key_id: sources.signing_key_id.as_deref(),
    };
    Ok(KeyRing::from_settings(&settings)?)
}

/// A setting's value, or else the content of its file.
fn value_or_file(value: Option<String>, file: Option<&Path>) -> anyhow::Result<Option<String>> {
    match (value, file) {
        (Some(value), _) => Ok(Some(value)),
        (None, Some(path)) => std::fs::read_to_string(path)
            .map(Some)
            .with_context(|| format!("reading {}", path.display())),
        (None, None) => Ok(None),
    }
}

/// Parses `fsync` or `os`.
pub fn parse_durability(value: &str) -> Result<Durability, String> {
    match value {
        "fsync" => Ok(Durability::Fsync),
        "os" => Ok(Durability::Os),
        other => Err(format!("durability is 'fsync' or 'os', not {other:?}")),
    }
}
