//! `stasis-client`: the command line over the `stasis_client` library.

use std::io::Write;
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use serde_json::{Value, json};
use stasis_client::boot::{self, AgentOutcome, BootOptions, Hydration};
use stasis_client::drain::{self, DrainOptions, Flush};
use stasis_client::snapshot::{self, PullOptions, PullOutcome, PushOptions};
use stasis_client::tail::{self, TailOptions};
use stasis_client::{AgentRef, Client, Config, Error, exit, town};

const AFTER_HELP: &str = "\
Configuration:
  STASIS_URL     base URL of the stasis server, e.g. http://127.0.0.1:8787 (or --url)
  STASIS_TOKEN   bearer token: an admin token or the town's token (or --token)

Machine-readable results go to stdout (JSON); progress, per-agent reports and retries go to
stderr. Progress bars are drawn only when stderr is a terminal.

Failed exchanges (connection refused, timeouts, 5xx, 503 with Retry-After) are retried with
exponential backoff and jitter: at most 10 attempts within 90 s per request (drain: also
within its budget). Refusals (4xx) are reported with the server's error code and message.

Exit codes:
  0  done
  1  local failure (a file, a SQLite database, bad configuration)
  2  usage error
  3  snapshot pull: the server has no snapshot for this agent (nothing was written)
  4  the server refused the request (4xx: unauthorized, forbidden, 412, 413, ...);
     drain: another container has taken the town over
  5  the server was unreachable or kept failing after bounded retries
  6  integrity: bytes did not match their sha256 (a download, a receipt, or the
     server's stored copy: 500 snapshot_corrupt)
  7  boot/drain: at least one agent was not hydrated / not flushed (in time)

In a container:
  ID=$(stasis-client boot --town T 2>&1 >dispatches.json | sed -n 's/^container_id: //p')
  trap 'stasis-client drain --town T --container-id \"$ID\"' TERM";

/// The container client of stasis: kilo.db snapshots, boot, drain, and event tails.
#[derive(Debug, Parser)]
#[command(name = "stasis-client", version, after_help = AFTER_HELP)]
struct Cli {
    /// Base URL of the stasis server.
    #[arg(long, env = "STASIS_URL", global = true)]
    url: Option<String>,

    /// Bearer token (admin, or the town's).
    #[arg(long, env = "STASIS_TOKEN", global = true, hide_env_values = true)]
    token: Option<String>,

    /// Print no progress or per-agent lines on stderr (errors still print).
    #[arg(long, short, global = true)]
    quiet: bool,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Push or pull an agent's kilo.db snapshot.
    #[command(subcommand)]
    Snapshot(SnapshotCommand),

    /// Heartbeat, hydrate every registered agent's kilo.db, print the pending dispatches.
    ///
    /// Posts a heartbeat as this container (a fresh id unless --container-id; it goes to
    /// stderr as `container_id: <id>`), pulls each registered agent's snapshot into
    /// {root}/agent-home-{agent}/.local/share/kilo/kilo.db, reports each agent on stderr, and
    /// prints the pending dispatches as a JSON array on stdout. Exit code 7 if any agent
    /// failed to hydrate (the dispatches are printed regardless).
    Boot(BootArgs),

    /// On SIGTERM: post the container eviction, then flush every agent's kilo.db in time.
    ///
    /// Posts the eviction (the town starts draining), reads the container registry, and
    /// pushes each registered agent's kilo.db (the Mayor first) before the budget runs out.
    /// Refuses to evict or push (exit code 4) when another container has taken the town over
    /// (its heartbeat came after this one's).
    /// Reports each agent on stderr and a JSON report on stdout; exit code 7 if the eviction
    /// failed or any agent was not flushed (failed, or out of time).
    Drain(DrainArgs),

    /// Follow an agent's events live, one JSON line each on stdout.
    ///
    /// Reads the backlog after --after, then live events; reconnects with Last-Event-ID (and
    /// backoff) when the stream drops or stays silent for 45 s. Stops on a refusal such as
    /// 410 cursor_expired (exit code 4).
    Tail(TailArgs),
}

#[derive(Debug, Subcommand)]
enum SnapshotCommand {
    /// Copy a live SQLite database consistently and upload it.
    ///
    /// Takes the copy with SQLite's online backup API (the database may be open and written
    /// meanwhile), hashes it, streams it up with X-Stasis-Sha256, checks the server's receipt,
    /// and prints it as JSON on stdout.
    Push(PushArgs),

    /// Download the snapshot, verify it, and atomically replace --out.
    ///
    /// Streams into a temporary file beside --out, checks the sha256, fsyncs, and renames it
    /// over --out (removing the old database's -wal/-shm/-journal). A failed pull leaves
    /// --out as it was. Prints what was written as JSON on stdout; exit code 3 when the server
    /// has no snapshot.
    Pull(PullArgs),
}

#[derive(Debug, Args)]
struct AgentArgs {
    /// Town id.
    #[arg(long)]
    town: String,
    /// Rig id.
    #[arg(long)]
    rig: String,
    /// Agent id.
    #[arg(long)]
    agent: String,
}

#[derive(Debug, Args)]
struct PushArgs {
    #[command(flatten)]
    agent: AgentArgs,
    /// The SQLite database to snapshot (it may be open and written meanwhile).
    #[arg(long)]
    db: PathBuf,
    /// Event watermark to store with the snapshot (X-Stasis-Event-Seq).
    #[arg(long)]
    event_seq: Option<u64>,
    /// Store only if the current snapshot has this ETag (else 412, exit code 4).
    #[arg(long)]
    if_match: Option<String>,
}

#[derive(Debug, Args)]
struct PullArgs {
    #[command(flatten)]
    agent: AgentArgs,
    /// Where to write the database (parent directories are created). Do not pull over a
    /// database a running process has open.
    #[arg(long)]
    out: PathBuf,
}

#[derive(Debug, Args)]
struct BootArgs {
    /// Town id.
    #[arg(long)]
    town: String,
    /// This container's id (default: a fresh random one, printed).
    #[arg(long)]
    container_id: Option<String>,
    /// Directory holding the agent homes: {root}/agent-home-{agent}/.local/share/kilo/kilo.db.
    #[arg(long, default_value = "/tmp")]
    root: PathBuf,
}

#[derive(Debug, Args)]
struct DrainArgs {
    /// Town id.
    #[arg(long)]
    town: String,
    /// This container's id (the one given to or printed by `boot`).
    #[arg(long)]
    container_id: String,
    /// Time for the whole drain, e.g. 10m, 90s, 1h30m.
    #[arg(long, default_value = "10m", value_parser = parse_budget)]
    budget: Duration,
    /// Directory holding the agent homes.
    #[arg(long, default_value = "/tmp")]
    root: PathBuf,
    /// Reason recorded with the eviction.
    #[arg(long, default_value = "sigterm")]
    reason: String,
    /// Snapshots pushed at once.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u8).range(1..=16))]
    parallel: u8,
}

#[derive(Debug, Args)]
struct TailArgs {
    #[command(flatten)]
    agent: AgentArgs,
    /// Start after this seq (exclusive).
    #[arg(long, default_value_t = 0)]
    after: u64,
    /// Only this session's events.
    #[arg(long)]
    session: Option<String>,
    /// Only events of this type.
    #[arg(long = "type")]
    event_type: Option<String>,
}

fn parse_budget(text: &str) -> Result<Duration, String> {
    stasis_client::config::parse_duration(text).map_err(|e| e.to_string())
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(code) => ExitCode::from(code),
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::from(error.exit_code())
        }
    }
}

fn run(cli: Cli) -> Result<u8, Error> {
    let url = cli.url.ok_or_else(|| {
        Error::Config("the server URL is not set: set STASIS_URL or pass --url".into())
    })?;
    let config = Config::new(&url, cli.token)?;
    let quiet = cli.quiet;
    let client = Client::new(config).on_retry(move |notice| {
        if !quiet {
            eprintln!(
                "retrying {} in {:.1?} (attempt {} failed: {})",
                notice.what, notice.delay, notice.attempt, notice.error
            );
        }
    });
    let out = Output { quiet };
    match cli.command {
        Command::Snapshot(SnapshotCommand::Push(args)) => push(&client, &out, args),
        Command::Snapshot(SnapshotCommand::Pull(args)) => pull(&client, &out, args),
        Command::Boot(args) => boot(&client, &out, args),
        Command::Drain(args) => drain(&client, &out, args),
        Command::Tail(args) => tail(&client, args),
    }
}

/// Where the CLI writes: results on stdout, reports on stderr (unless quiet).
struct Output {
    quiet: bool,
}

impl Output {
    fn note(&self, line: &str) {
        if !self.quiet {
            eprintln!("{line}");
        }
    }

    fn result(&self, value: &Value) -> Result<(), Error> {
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "{value}")
            .and_then(|()| stdout.flush())
            .map_err(|e| Error::io("writing to stdout", e))
    }
}

fn agent_ref(args: &AgentArgs) -> Result<AgentRef, Error> {
    AgentRef::new(&args.town, &args.rig, &args.agent)
}

fn push(client: &Client, out: &Output, args: PushArgs) -> Result<u8, Error> {
    let agent = agent_ref(&args.agent)?;
    let options = PushOptions {
        event_seq: args.event_seq,
        if_match: args.if_match,
        progress: !out.quiet,
        ..PushOptions::default()
    };
    let receipt = snapshot::push(client, &agent, &args.db, &options)?;
    out.note(&format!(
        "pushed {agent}: version {}, {} bytes, stored {}, sha256 {}",
        receipt.version,
        receipt.size,
        receipt.storage.as_deref().unwrap_or("(as before)"),
        receipt.sha256
    ));
    out.result(&json!(receipt))?;
    Ok(exit::OK)
}

fn pull(client: &Client, out: &Output, args: PullArgs) -> Result<u8, Error> {
    let agent = agent_ref(&args.agent)?;
    let options = PullOptions {
        progress: !out.quiet,
        deadline: None,
    };
    match snapshot::pull(client, &agent, &args.out, &options)? {
        PullOutcome::Pulled(pulled) => {
            let verb = if pulled.unchanged {
                "already current"
            } else {
                "pulled"
            };
            out.note(&format!(
                "{verb} {agent} -> {}: version {}, {} bytes, sha256 {}",
                args.out.display(),
                show_version(pulled.version),
                pulled.size,
                pulled.sha256
            ));
            let mut value = json!(pulled);
            value["path"] = json!(args.out);
            out.result(&value)?;
            Ok(exit::OK)
        }
        PullOutcome::NoSnapshot => {
            eprintln!(
                "no snapshot stored for {agent}; {} left as it was",
                args.out.display()
            );
            Ok(exit::NO_SNAPSHOT)
        }
    }
}

fn boot(client: &Client, out: &Output, args: BootArgs) -> Result<u8, Error> {
    let container_id = args.container_id.unwrap_or_else(town::new_container_id);
    eprintln!("container_id: {container_id}");
    let options = BootOptions {
        container_id,
        root: args.root,
        progress: !out.quiet,
    };
    let report = boot::boot(client, &args.town, &options, &mut |outcome| {
        out.note(&describe_hydration(outcome));
    })?;
    out.note(&format!(
        "heartbeat: draining {}, cleared a drain {}, {} agent(s), {} pending dispatch(es)",
        report.draining,
        report.cleared_drain,
        report.agents.len(),
        report.pending_dispatches.len()
    ));
    out.result(&Value::Array(report.pending_dispatches.clone()))?;
    Ok(if report.complete() {
        exit::OK
    } else {
        exit::PARTIAL
    })
}

fn describe_hydration(outcome: &AgentOutcome<Hydration>) -> String {
    let who = who(outcome);
    match &outcome.result {
        Hydration::Pulled(s) => format!(
            "hydrated {who} -> {}: version {}, {} bytes{}",
            outcome.path.display(),
            show_version(s.version),
            s.size,
            if s.unchanged {
                " (already current)"
            } else {
                ""
            }
        ),
        Hydration::NoSnapshot => format!("no snapshot for {who}: it starts fresh"),
        Hydration::Failed(e) => format!("FAILED to hydrate {who}: {e}"),
    }
}

fn drain(client: &Client, out: &Output, args: DrainArgs) -> Result<u8, Error> {
    let options = DrainOptions {
        container_id: args.container_id,
        root: args.root,
        budget: args.budget,
        reason: args.reason,
        parallel: usize::from(args.parallel),
    };
    let report = drain::drain(client, &args.town, &options, &|outcome| {
        out.note(&describe_flush(outcome));
    })?;
    if let Some(e) = &report.eviction_error {
        eprintln!("the eviction notice failed (snapshots were flushed regardless): {e}");
    }
    let agents: Vec<Value> = report.agents.iter().map(flush_json).collect();
    out.note(&format!("drain finished in {:.1?}", report.elapsed));
    out.result(&json!({
        "eviction_recorded": report.eviction_error.is_none(),
        "eviction_error": report.eviction_error.as_ref().map(ToString::to_string),
        "elapsed_ms": u64::try_from(report.elapsed.as_millis()).unwrap_or(u64::MAX),
        "agents": agents,
    }))?;
    Ok(if report.complete() {
        exit::OK
    } else {
        exit::PARTIAL
    })
}

fn describe_flush(outcome: &AgentOutcome<Flush>) -> String {
    let who = who(outcome);
    match &outcome.result {
        Flush::Flushed(r) => format!(
            "flushed {who}: version {}, {} bytes, stored {}",
            r.version,
            r.size,
            r.storage.as_deref().unwrap_or("(as before)")
        ),
        Flush::NoLocalDb => format!("nothing to flush for {who}: no {}", outcome.path.display()),
        Flush::OutOfTime => format!("NOT FLUSHED {who}: the budget ran out"),
        Flush::Failed(e) => format!("FAILED to flush {who}: {e}"),
    }
}

fn flush_json(outcome: &AgentOutcome<Flush>) -> Value {
    let mut value = json!({
        "agent_id": outcome.agent.agent_id,
        "rig_id": outcome.agent.rig_id,
        "role": outcome.agent.role,
        "path": outcome.path,
    });
    let (status, extra) = match &outcome.result {
        Flush::Flushed(receipt) => ("flushed", json!({ "receipt": receipt })),
        Flush::NoLocalDb => ("no_local_db", json!({})),
        Flush::OutOfTime => ("out_of_time", json!({})),
        Flush::Failed(e) => ("failed", json!({ "error": e.to_string() })),
    };
    value["status"] = json!(status);
    if let (Some(map), Value::Object(extra)) = (value.as_object_mut(), extra) {
        map.extend(extra);
    }
    value
}

fn tail(client: &Client, args: TailArgs) -> Result<u8, Error> {
    let agent = agent_ref(&args.agent)?;
    let options = TailOptions {
        after: args.after,
        session_id: args.session,
        event_type: args.event_type,
        ..TailOptions::default()
    };
    let mut stdout = std::io::stdout().lock();
    let mut write_error = None;
    tail::tail(client, &agent, &options, &mut |event| {
        // One line per event: re-encode the JSON compactly (data may span lines).
        let line = serde_json::from_str::<Value>(&event.json)
            .map_or_else(|_| event.json.replace('\n', " "), |v| v.to_string());
        match writeln!(stdout, "{line}").and_then(|()| stdout.flush()) {
            Ok(()) => ControlFlow::Continue(()),
            Err(e) => {
                write_error = Some(e);
                ControlFlow::Break(())
            }
        }
    })?;
    match write_error {
        // A closed pipe (`| head`) is a normal way to stop following.
        Some(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(exit::OK),
        Some(e) => Err(Error::io("writing to stdout", e)),
        None => Ok(exit::OK),
    }
}

fn who<R>(outcome: &AgentOutcome<R>) -> String {
    let agent = &outcome.agent;
    if agent.role.is_empty() {
        format!("{} (rig {})", agent.agent_id, agent.rig_id)
    } else {
        format!("{} ({}, rig {})", agent.agent_id, agent.role, agent.rig_id)
    }
}

fn show_version(version: Option<u64>) -> String {
    version.map_or_else(|| "?".to_owned(), |v| v.to_string())
}
