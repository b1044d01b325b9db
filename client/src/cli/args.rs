//! The command line's arguments and its `--help` text.

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;
use std::time::Duration;

use super::parse_budget;
use super::sidecar_args::SidecarArgs;
use super::supervise_args::{SuperviseArgs, UpArgs};
use super::workspace_args::WorkspaceCommand;

pub const AFTER_HELP: &str = "\
Configuration:
  STASIS_URL     base URL of the stasis server, e.g. http://127.0.0.1:8787 (or --url)
  STASIS_TOKEN   bearer token: an admin token or the town's token (or --token)

Tokens: a token is refreshed by the client itself once half its lifetime has passed. boot,
sidecar and drain act as one container: they exchange the token for a container token of their
--container-id (its writes are fenced once another container takes the town over), shared
through {root}/stasis-token-{container} (0600), which boot writes and every refresh updates.

Machine-readable results go to stdout (JSON); progress, per-agent reports and retries go to
stderr. Progress bars are drawn only when stderr is a terminal.

Failed exchanges (connection refused, timeouts, 5xx, 503 with Retry-After) are retried with
exponential backoff and jitter: at most 10 attempts within 90 s per request (drain: also
within its budget; sidecar: its event batches until stasis answers). Refusals (4xx) are
reported with the server's error code and message.

Exit codes:
  0  done
  1  local failure (a file, a SQLite database, bad configuration; workspace: a folder
     that cannot be read, a restore into a folder that is not empty)
  2  usage error
  3  snapshot pull: the server has no snapshot for this agent (nothing was written);
     workspace pull: the agent has no workspace (nothing was written)
  4  the server refused the request (4xx: unauthorized, forbidden, 412, 413, ...)
  5  the server was unreachable or kept failing after bounded retries;
     sidecar: the agent runtime did not answer within --start-timeout
  6  integrity: bytes did not match their sha256 (a download, a receipt, or the
     server's stored copy: 500 snapshot_corrupt)
  7  boot: at least one agent was not hydrated, or its dispatch could not be requested;
     drain: at least one agent was not flushed (in time)
  8  sidecar: the shutdown budget ran out before every event was forwarded and the
     last snapshot pushed
  9  fenced: another container has taken the town over from this one (boot, sidecar,
     drain: it stopped writing at once; the message names the container holding the
     town), or this container has not heartbeat yet; supervise: its runtime was killed
 10  supervise: the runtime crashed more often than --start-limit-burst within
     --start-limit-interval

In a container:
  ID=$(stasis-client boot --town T 2>&1 >dispatches.json | sed -n 's/^container_id: //p')
  stasis-client sidecar --town T --rig R --agent mayor --container-id \"$ID\" \\
      --runtime-url http://127.0.0.1:4096 &     # one per agent, beside its kilo serve
  trap 'stasis-client drain --town T --container-id \"$ID\"' TERM";

/// The container client of stasis: kilo.db snapshots, workspaces, boot, drain, and event tails.
#[derive(Debug, Parser)]
#[command(name = "stasis-client", version, after_help = AFTER_HELP)]
pub struct Cli {
    /// Base URL of the stasis server.
    #[arg(long, env = "STASIS_URL", global = true)]
    pub url: Option<String>,

    /// Bearer token (admin, or the town's).
    #[arg(long, env = "STASIS_TOKEN", global = true, hide_env_values = true)]
    pub token: Option<String>,

    /// Print no progress or per-agent lines on stderr (errors still print).
    #[arg(long, short, global = true)]
    pub quiet: bool,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Push or pull an agent's kilo.db snapshot.
    #[command(subcommand)]
    Snapshot(SnapshotCommand),

    /// Push or pull an agent's workspace: its working folder, in content-defined chunks.
    #[command(subcommand)]
    Workspace(WorkspaceCommand),

    /// Heartbeat, hydrate every registered agent's kilo.db, print the pending dispatches.
    ///
    /// Takes a container token for this container (a fresh id unless --container-id; it goes
    /// to stderr as `container_id: <id>`) and writes it to {root}/stasis-token-{id}, posts a
    /// heartbeat as this container (exit code 9 if another container superseded it), pulls each
    /// registered agent's snapshot into {root}/agent-home-{agent}/.local/share/kilo/kilo.db,
    /// and reports each agent on stderr. The heartbeat hands over only the dispatches deferred
    /// while the town drained; after a crash (kill -9, no drain) there are none, so boot also
    /// requests one (POST .../rigs/{rig}/agents/{agent}/dispatch) for every registered agent
    /// that ran in another container and has no pending dispatch. Prints the pending
    /// dispatches, then the requested ones, as one JSON array on stdout. Exit code 7 if any
    /// agent failed to hydrate or its dispatch could not be requested (the dispatches are
    /// printed regardless).
    Boot(BootArgs),

    /// On SIGTERM: post the container eviction, then flush every agent's kilo.db in time.
    ///
    /// Posts the eviction (the town starts draining), reads the container registry, and
    /// pushes each registered agent's kilo.db (the Mayor first) before the budget runs out.
    /// Refuses to evict or push (exit code 9) when another container has taken the town over
    /// (its heartbeat came after this one's); a push fenced midway stops every other push.
    /// Reports each agent on stderr and a JSON report on stdout; exit code 7 if the eviction
    /// failed or any agent was not flushed (failed, or out of time).
    Drain(DrainArgs),

    /// Follow an agent's events live, one JSON line each on stdout.
    ///
    /// Reads the backlog after --after, then live events; reconnects with Last-Event-ID (and
    /// backoff) when the stream drops or stays silent for 45 s. Stops on a refusal such as
    /// 410 cursor_expired (exit code 4).
    Tail(TailArgs),

    /// Restore an agent in place to a point: its kilo.db, workspace, checkpoint and memory.
    ///
    /// Exactly one of --seq, --at, --kind with --version, or --pin. Prints the answer as JSON
    /// on stdout; its `undo.pin` undoes the restore (`restore --pin <it>`). A live container
    /// holding the agent refuses it (409 agent_live) unless --fence. Sent once, never retried.
    Restore(super::restore_args::RestoreArgs),

    /// Run beside one agent runtime (kilo serve): forward its events, keep its kilo.db pushed.
    ///
    /// Follows the runtime's GET /event stream for the agent's whole life and appends every
    /// event to the agent's log as {type, session_id: properties.sessionID, data: properties},
    /// in stamped batches, exactly once: the stamp state in --state-dir survives a restart of
    /// the sidecar, which re-sends its batch in flight under the same stamp. Not forwarded:
    /// kilo's sync twins ({"type":"sync"}, the same event again), server.connected and
    /// server.heartbeat (they say the stream is alive, nothing about the agent), and repeated
    /// event ids. A data over stasis's 1 MiB event limit has its largest strings cut, each
    /// ending in "…[cut by stasis sidecar: kept K of N bytes]" (or, when strings cannot make it
    /// fit, is replaced by {"sessionID", "stasis_cut": {"original_bytes", "reason"}}).
    ///
    /// While stasis is unreachable (or answers 5xx) batches are retried forever; events wait
    /// in a buffer of --buffer-events / --buffer-bytes. Past it, events are dropped and
    /// counted; once stasis has stored enough, a stasis.sidecar.gap event records the counts
    /// and the time range. Wherever events went missing (a full buffer, a lost stream, the
    /// sidecar's own start or restart) a stasis.sidecar.resync event follows, then the runtime's
    /// own GET /session/{id}/message states of every message created, completed or unfinished
    /// since then (message.updated and message.part.updated, as kilo sends them), so the
    /// rebuilt conversation is whole again. Not recovered that way: a reply's text still
    /// streaming at that moment (its final update follows on the stream), session status,
    /// todos, diffs and removals.
    ///
    /// Pushes kilo.db (an online-backup copy) when a turn's session.idle is stored and every
    /// --snapshot-interval while the database changes, with X-Stasis-Event-Seq the newest seq
    /// stored before the copy. On SIGTERM/SIGINT: stops reading, forwards what it holds,
    /// pushes a last snapshot, exits 0, all within --shutdown-budget (else exit code 8; a
    /// second signal ends the budget at once). Exits 4 when stasis refuses the token (401/403),
    /// 9 at once when it fences the container (another container took the town over: the
    /// message names it), 5 when the runtime does not answer within --start-timeout,
    /// 1 when kilo.db or the state directory is unusable. Prints a JSON summary on stdout.
    Sidecar(SidecarArgs),

    /// Own one agent's runtime for its whole life: start, follow, restart, evict.
    ///
    /// Sets the agent's home environment (HOME, KILO_TEST_HOME, XDG_DATA/STATE/CONFIG/CACHE_HOME,
    /// TMPDIR under {root}/agent-home-{agent}; STASIS_* variables removed), pulls its kilo.db when
    /// the home has none, starts COMMAND in a process group of its own in the working folder,
    /// reads its URL from the line it prints (`... listening on http://127.0.0.1:PORT`), runs the
    /// sidecar beside it (see `sidecar --help`), and records the agent's session and port in the
    /// town's registry.
    ///
    /// A runtime that exits or dies is started again on the same home after --restart-delay,
    /// doubling up to --restart-delay-max; more than --start-limit-burst crashes within
    /// --start-limit-interval end the supervisor (exit 10). A turn busy longer than
    /// --turn-deadline is aborted. Every start, exit, restart, give-up and abort is an event
    /// (stasis.runtime.started/exited/restarting/gave_up, stasis.turn.aborted).
    ///
    /// On SIGTERM/SIGINT, the eviction, each phase an event stasis.eviction.<phase>: notice (POST
    /// /container-eviction), nudge (the role's message as a prompt), wait (until the turn ends or
    /// --nudge-window), abort, save (--save-command), stop (the runtime), flush (events and a
    /// last snapshot); exit 0 within --eviction-budget (else 8). A second signal closes the nudge
    /// window. Once another container took the town over, the runtime is killed at once (exit 9).
    Supervise(SuperviseArgs),

    /// A container's entrypoint: boot, then a supervisor per agent; reaps every child.
    ///
    /// Boots like `boot` (heartbeat, every agent of the registry hydrated, dispatches taken: each
    /// written to {root}/stasis-dispatch-{agent}.json), then starts `stasis-client supervise` for
    /// every agent of the registry and every --agent, each in a process of its own with the same
    /// tuning and COMMAND. May run as PID 1: it reaps every child and orphan (a child subreaper
    /// otherwise) and forwards SIGTERM/SIGINT to the supervisors. Exits when the last supervisor
    /// has: 9 if any was fenced, else the first non-zero code, else 0.
    Up(UpArgs),

    /// Fork an agent at a point into a new agent of the same town (any rig).
    ///
    /// POST .../agents/{agent}/fork: the new agent gets the events up to the point and the
    /// kilo.db, workspace, checkpoint and memory of that point, and `forked_from` in its record.
    /// No chunk is copied: the fork names the source's chunks, which the source keeps while the
    /// fork lives (even once the source is deleted). The point is one of --seq, --at (ms since
    /// the epoch) or --kind with --version. Prints the fork's record as JSON; 409 agent_exists
    /// when the new id is taken (also on a retry whose first attempt had succeeded).
    Fork(ForkArgs),
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("point").required(true).args(["seq", "at", "version"])))]
pub struct ForkArgs {
    /// The agent to fork.
    #[command(flatten)]
    pub agent: AgentArgs,
    /// The point: a seq of its log.
    #[arg(long)]
    pub seq: Option<u64>,
    /// The point: a time, ms since the epoch.
    #[arg(long)]
    pub at: Option<i64>,
    /// The point: the moment a version of this kind was written (db_snapshot, workspace,
    /// checkpoint, memory); with --version.
    #[arg(long, requires = "version")]
    pub kind: Option<String>,
    /// The version of --kind.
    #[arg(long, requires = "kind")]
    pub version: Option<u64>,
    /// The new agent's id.
    #[arg(long = "to-agent")]
    pub to_agent: String,
    /// The new agent's rig (the source's when absent).
    #[arg(long = "to-rig")]
    pub to_rig: Option<String>,
    /// The new agent's role (the source's; a mayor's fork is `mayor-fork`).
    #[arg(long)]
    pub role: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum SnapshotCommand {
    /// Copy a live SQLite database consistently and upload what the server lacks.
    ///
    /// Takes the copy with SQLite's online backup API (the database may be open and written
    /// meanwhile; the copy is held in memory up to 256 MiB, else in a temp file), splits it into fixed chunks (32 KiB up to 1 GiB, larger beyond so that there
    /// are at most 32,768) and hashes each, asks the server which chunks it lacks, uploads
    /// those (8 at a time), and commits the manifest (with If-Match when given). A snapshot of
    /// at most 1 MiB, a server without the chunk routes, or --whole-file: the whole file in one
    /// PUT with X-Stasis-Sha256. Checks the server's receipt and prints it as JSON on stdout, with what
    /// was sent ("transfer": chunks sent of the total, bytes sent).
    Push(PushArgs),

    /// Download the snapshot, verify it, check it with SQLite, and atomically replace --out.
    ///
    /// Reads the manifest, takes each chunk from the local chunk cache when it holds it
    /// (re-hashed) and fetches the rest (8 at a time), each checked against its sha256, into a
    /// temporary file beside --out; then checks the whole file's sha256 and PRAGMA
    /// quick_check, fsyncs, and renames it over --out (removing the old database's
    /// -wal/-shm/-journal). A server without the chunk routes (or --whole-file) sends the
    /// whole file in one GET. A failed pull leaves --out as it was. Prints what was written as
    /// JSON on stdout; exit code 3 when the server has no snapshot.
    Pull(PullArgs),
}

#[derive(Debug, Args)]
pub struct AgentArgs {
    /// Town id.
    #[arg(long)]
    pub town: String,
    /// Rig id.
    #[arg(long)]
    pub rig: String,
    /// Agent id.
    #[arg(long)]
    pub agent: String,
}

#[derive(Debug, Args)]
pub struct PushArgs {
    #[command(flatten)]
    pub agent: AgentArgs,
    /// The SQLite database to snapshot (it may be open and written meanwhile).
    #[arg(long)]
    pub db: PathBuf,
    /// Event watermark to store with the snapshot (X-Stasis-Event-Seq).
    #[arg(long)]
    pub event_seq: Option<u64>,
    /// Store only if the current snapshot has this ETag (else 412, exit code 4).
    #[arg(long)]
    pub if_match: Option<String>,
    /// Send the whole file in one PUT instead of only the chunks the server lacks.
    #[arg(long)]
    pub whole_file: bool,
    #[command(flatten)]
    pub cache: CacheArgs,
}

/// Where the local chunk cache lives and how large it may grow.
#[derive(Debug, Args)]
pub struct CacheArgs {
    /// The local chunk cache (default: $STASIS_CHUNK_CACHE, else $XDG_CACHE_HOME/stasis/chunks,
    /// else ~/.cache/stasis/chunks). Pushes fill it; pulls take chunks from it (each re-hashed)
    /// instead of fetching them.
    #[arg(long, value_name = "DIR")]
    pub chunk_cache: Option<PathBuf>,
    /// The most bytes the chunk cache keeps (the entries used longest ago are evicted).
    #[arg(long, value_name = "BYTES", default_value_t = stasis_client::snapshot::DEFAULT_CACHE_BYTES)]
    pub chunk_cache_bytes: u64,
    /// Use no chunk cache.
    #[arg(long, conflicts_with = "chunk_cache")]
    pub no_chunk_cache: bool,
}

#[derive(Debug, Args)]
pub struct PullArgs {
    #[command(flatten)]
    pub agent: AgentArgs,
    /// Where to write the database (parent directories are created). Do not pull over a
    /// database a running process has open.
    #[arg(long)]
    pub out: PathBuf,
    /// Download the whole file in one GET instead of by chunks.
    #[arg(long)]
    pub whole_file: bool,
    #[command(flatten)]
    pub cache: CacheArgs,
}

#[derive(Debug, Args)]
pub struct BootArgs {
    /// Town id.
    #[arg(long)]
    pub town: String,
    /// This container's id (default: a fresh random one, printed).
    #[arg(long)]
    pub container_id: Option<String>,
    /// Directory holding the agent homes: {root}/agent-home-{agent}/.local/share/kilo/kilo.db.
    #[arg(long, default_value = "/tmp")]
    pub root: PathBuf,
    #[command(flatten)]
    pub cache: CacheArgs,
}

#[derive(Debug, Args)]
pub struct DrainArgs {
    /// Town id.
    #[arg(long)]
    pub town: String,
    /// This container's id (the one given to or printed by `boot`).
    #[arg(long)]
    pub container_id: String,
    /// Time for the whole drain, e.g. 10m, 90s, 1h30m.
    #[arg(long, default_value = "10m", value_parser = parse_budget)]
    pub budget: Duration,
    /// Directory holding the agent homes.
    #[arg(long, default_value = "/tmp")]
    pub root: PathBuf,
    /// Reason recorded with the eviction.
    #[arg(long, default_value = "sigterm")]
    pub reason: String,
    /// Snapshots pushed at once.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u8).range(1..=16))]
    pub parallel: u8,
}

#[derive(Debug, Args)]
pub struct TailArgs {
    #[command(flatten)]
    pub agent: AgentArgs,
    /// Start after this seq (exclusive).
    #[arg(long, default_value_t = 0)]
    pub after: u64,
    /// Only this session's events.
    #[arg(long)]
    pub session: Option<String>,
    /// Only events of this type.
    #[arg(long = "type")]
    pub event_type: Option<String>,
}
