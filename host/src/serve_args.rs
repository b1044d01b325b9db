//! The flags of `stasis serve`, each with its environment variable.

use crate::SecretArgs;
use clap::{Args, ValueEnum};
use stasis_api::summariser::{self, SummariserSettings};
use stasis_host::config::{self, ObjectLimits, ServeConfig, ServerLimits};
use std::{net::SocketAddr, path::PathBuf};

#[derive(Args)]
pub struct ServeArgs {
    /// Address to listen on. Without a key, only loopback is allowed.
    #[arg(long, env = "STASIS_LISTEN", default_value = "127.0.0.1:8787")]
    listen: SocketAddr,
    /// Folder for every object's SQLite database and the KV blobs.
    #[arg(long, env = "STASIS_DATA_DIR", default_value = "./stasis-data")]
    data_dir: PathBuf,
    /// Folder for the compiled components (machine code wasmtime made from
    /// the guests, kept so that a start skips compiling them); by default
    /// `cache` in the data folder. Hosts of one build may share it.
    #[arg(long, env = "STASIS_CACHE_DIR")]
    cache_dir: Option<PathBuf>,
    /// `fsync`: an acknowledged write survives power loss (default).
    /// `os`: it survives a killed process, not a power cut; faster.
    #[arg(long, env = "STASIS_DURABILITY", default_value = "fsync", value_parser = config::parse_durability)]
    durability: stasis_sqlite::Durability,
    /// Retention: events kept per agent; the oldest go first.
    #[arg(long, env = "STASIS_MAX_EVENTS_PER_AGENT", default_value_t = stasis_domain::limits::DEFAULT_MAX_EVENTS)]
    max_events_per_agent: u64,
    /// kilo.db snapshots up to this many bytes are stored in the agent's
    /// SQL; larger ones in chunks in the KV folder.
    #[arg(long, env = "STASIS_SNAPSHOT_INLINE_LIMIT", default_value_t = stasis_domain::snapshot::DEFAULT_INLINE_LIMIT)]
    snapshot_inline_limit: u64,
    /// The largest kilo.db snapshot accepted (1 GiB); a larger one is
    /// refused with 413 and changes nothing.
    #[arg(long, env = "STASIS_MAX_SNAPSHOT_BYTES", default_value_t = stasis_domain::snapshot::DEFAULT_SNAPSHOT_LIMIT)]
    max_snapshot_bytes: u64,
    /// The largest workspace accepted, in bytes of its files (4 GiB); a
    /// larger one is refused with 413 and changes nothing.
    #[arg(long, env = "STASIS_MAX_WORKSPACE_BYTES", default_value_t = stasis_domain::workspace::DEFAULT_WORKSPACE_LIMIT)]
    max_workspace_bytes: u64,
    /// How long uploaded snapshot chunks that no manifest names yet are
    /// kept (an upload in progress) before they are collected.
    #[arg(long, env = "STASIS_SNAPSHOT_PENDING_TTL", default_value = "1h")]
    snapshot_pending_ttl: humantime::Duration,
    /// How long the chunks of a superseded or deleted snapshot version stay
    /// readable before they are collected, so that a reader of that
    /// version is not cut.
    #[arg(long, env = "STASIS_SNAPSHOT_GRACE", default_value = "5m")]
    snapshot_grace: humantime::Duration,
    /// A town's current container counts as alive this many seconds after
    /// its newest heartbeat: a message for an agent is delivered to its
    /// session only while its container is alive, else it is redispatched.
    #[arg(long, env = "STASIS_LIVENESS_TIMEOUT_SECS", default_value_t = stasis_domain::town::DEFAULT_LIVENESS_TIMEOUT_MS / 1000)]
    liveness_timeout_secs: u64,
    /// How long superseded kilo.db, workspace, checkpoint and memory
    /// versions are kept: `KEEP_ALL[,BUCKET:UNTIL[,BUCKET:UNTIL]]` in ms
    /// (everything for KEEP_ALL, then the last version of each BUCKET until
    /// UNTIL old). The default keeps everything for 24 h, then the last of
    /// each hour for 7 days, then of each day for 30 days.
    #[arg(
        long,
        env = "STASIS_HISTORY_RETENTION",
        default_value = "86400000,3600000:604800000,86400000:2592000000"
    )]
    history_retention: String,
    /// How log lines are written: `text` for people, `json` (one object
    /// a line) for a log pipeline.
    #[arg(long, env = "STASIS_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    #[command(flatten)]
    limits: LimitArgs,
    #[command(flatten)]
    summariser: SummariserArgs,
    #[command(flatten)]
    secret: SecretArgs,
}

/// The model that summarises the turns a dispatch must omit (any
/// OpenAI-compatible chat-completions server). Without one, omitted turns
/// are cut. Its API key, if it needs one, comes from the environment only
/// (`STASIS_SUMMARISER_KEY`), so it never shows in a process list.
#[derive(Args)]
struct SummariserArgs {
    /// The summariser's OpenAI base URL (`https://host/v1`, to which
    /// `/chat/completions` is added) or its full chat-completions URL.
    /// Needs --summariser-model.
    #[arg(long, env = "STASIS_SUMMARISER_URL")]
    summariser_url: Option<String>,
    /// The `model` its requests name.
    #[arg(long, env = "STASIS_SUMMARISER_MODEL")]
    summariser_model: Option<String>,
    /// How long one rebuild (a dispatch, a conversation read) waits on the
    /// summariser, all its calls together; past it the omitted turns are
    /// cut and the answer says `timeout`.
    #[arg(long, env = "STASIS_SUMMARISER_DEADLINE", default_value = "10s")]
    summariser_deadline: humantime::Duration,
}

impl SummariserArgs {
    fn settings(self) -> anyhow::Result<Option<SummariserSettings>> {
        let key = std::env::var(summariser::KEY_VAR).ok();
        let deadline: std::time::Duration = self.summariser_deadline.into();
        Ok(SummariserSettings::new(
            self.summariser_url.as_deref(),
            self.summariser_model.as_deref(),
            key.as_deref(),
            u64::try_from(deadline.as_millis()).unwrap_or(u64::MAX),
        )?)
    }
}

/// How log lines are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// `tracing`'s readable lines.
    Text,
    /// One JSON object a line, the event's fields at its top level.
    Json,
}

/// Timeouts and caps; durations are written like `15s`, `500ms` or `2m`.
#[derive(Args)]
struct LimitArgs {
    /// The longest a request head may take to arrive, from the connection's
    /// start or the first byte after a response.
    #[arg(long, env = "STASIS_HEADER_TIMEOUT", default_value_t = ServerLimits::default().header_timeout.into())]
    header_timeout: humantime::Duration,
    /// How long a keep-alive connection may sit idle between requests.
    #[arg(long, env = "STASIS_IDLE_TIMEOUT", default_value_t = ServerLimits::default().idle_timeout.into())]
    idle_timeout: humantime::Duration,
    /// The slowest a request body may arrive, in bytes per second over each
    /// --body-rate-window (0: no minimum).
    #[arg(long, env = "STASIS_BODY_MIN_RATE", default_value_t = ServerLimits::default().body_min_rate)]
    body_min_rate: u64,
    /// The window --body-min-rate is measured over.
    #[arg(long, env = "STASIS_BODY_RATE_WINDOW", default_value_t = ServerLimits::default().body_window.into())]
    body_rate_window: humantime::Duration,
    /// Request connections served at once; past it a new one takes the
    /// place of the oldest that has sent no request head, or is answered
    /// 503. Unset: fits the open-file limit (see `open_files`).
    #[arg(long, env = "STASIS_MAX_CONNECTIONS")]
    max_connections: Option<usize>,
    /// Live tails (event streams) open at once, counted apart from the
    /// request connections; one more is answered 503. Unset: fits the
    /// open-file limit.
    #[arg(long, env = "STASIS_MAX_TAILS")]
    max_tails: Option<usize>,
    /// The most bytes an import's body may carry (16 GiB: any agent the
    /// contract allows fits); the body is streamed, so memory stays small.
    #[arg(long, env = "STASIS_MAX_IMPORT_BYTES", default_value_t = ServerLimits::default().max_import_bytes)]
    max_import_bytes: u64,
    /// After SIGTERM or SIGINT, how long requests in flight get to finish
    /// (live tails end at once) before the process exits.
    #[arg(long, env = "STASIS_SHUTDOWN_GRACE", default_value_t = ServerLimits::default().shutdown_grace.into())]
    shutdown_grace: humantime::Duration,
    /// Bytes kept free in the data folder (a reserve file): when the disk
    /// fills, the reserve is released so that reads and deletes go on, and
    /// writes are answered 507 until space is freed. 0 keeps none.
    #[arg(long, env = "STASIS_DISK_RESERVE", default_value_t = ServerLimits::default().disk_reserve)]
    disk_reserve: u64,
    /// Objects (agents and towns) kept open at once; past it the least
    /// recently used idle ones are closed. Unset: fits the open-file limit.
    #[arg(long, env = "STASIS_MAX_OPEN_OBJECTS")]
    max_open_objects: Option<usize>,
    /// An object unused this long is closed (and reopened on its next call).
    #[arg(long, env = "STASIS_OBJECT_IDLE_TIMEOUT", default_value_t = ObjectLimits::default().idle_timeout.into())]
    object_idle_timeout: humantime::Duration,
}

impl ServeArgs {
    /// The settings these flags describe (not yet checked).
    pub fn into_config(self) -> anyhow::Result<ServeConfig> {
        let limits = self.limits;
        // Caps left unset fit the open-file limit once it is raised.
        let fitted = stasis_host::server::fit_caps(stasis_host::server::raise_open_file_limit());
        Ok(ServeConfig {
            listen: self.listen,
            data_dir: self.data_dir,
            cache_dir: self.cache_dir,
            durability: self.durability,
            max_events_per_agent: self.max_events_per_agent,
            snapshot_inline_limit: self.snapshot_inline_limit,
            snapshot_limit: self.max_snapshot_bytes,
            workspace_limit: self.max_workspace_bytes,
            snapshot_pending_ttl: self.snapshot_pending_ttl.into(),
            snapshot_grace: self.snapshot_grace.into(),
            liveness_timeout_secs: self.liveness_timeout_secs,
            history_retention: stasis_api::settings::parse_retention(&self.history_retention)?,
            keys: config::load_keys(self.secret.sources())?,
            summariser: self.summariser.settings()?,
            server: ServerLimits {
                header_timeout: limits.header_timeout.into(),
                idle_timeout: limits.idle_timeout.into(),
                body_min_rate: limits.body_min_rate,
                body_window: limits.body_rate_window.into(),
                max_connections: limits.max_connections.unwrap_or(fitted.connections),
                max_tails: limits.max_tails.unwrap_or(fitted.tails),
                max_import_bytes: limits.max_import_bytes,
                shutdown_grace: limits.shutdown_grace.into(),
                disk_reserve: limits.disk_reserve,
            },
            objects: ObjectLimits {
                max_open: limits.max_open_objects.unwrap_or(fitted.objects),
                idle_timeout: limits.object_idle_timeout.into(),
            },
        })
    }
}
