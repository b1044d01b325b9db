//! The `stasis` command: serve the local runtime, or mint tokens. (The
//! end-to-end demo is `stasis-demo`, in tools/demo.)

mod serve_args;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use stasis_api::auth::{Grant, Scope};
use stasis_host::config;
use std::path::PathBuf;

/// Reads and appends allocate per event on both sides of the wasm boundary;
/// mimalloc takes that load better than the system allocator.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// stasis keeps the state of agents that run in ephemeral containers.
#[derive(Parser)]
#[command(version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the HTTP API from a local data folder.
    Serve(Box<serve_args::ServeArgs>),
    /// Print a bearer token minted from the secret.
    Token(TokenArgs),
}

/// Where the token keys come from (README, "Tokens and keys").
#[derive(Args)]
pub(crate) struct SecretArgs {
    /// One token key, at least 16 characters (its key id is `default`).
    #[arg(long, env = "STASIS_SECRET", hide_env_values = true)]
    secret: Option<String>,
    /// A file holding --secret.
    #[arg(long, env = "STASIS_SECRET_FILE")]
    secret_file: Option<PathBuf>,
    /// Several keys: `id=secret` entries separated by commas, spaces or
    /// line breaks. Tokens signed by any of them verify.
    #[arg(long, env = "STASIS_KEYS", hide_env_values = true)]
    keys: Option<String>,
    /// A file holding --keys (a line starting with # is a comment).
    #[arg(long, env = "STASIS_KEYS_FILE")]
    keys_file: Option<PathBuf>,
    /// The key that signs new tokens; needed when several are configured.
    #[arg(long, env = "STASIS_SIGNING_KEY_ID")]
    signing_key_id: Option<String>,
}

impl SecretArgs {
    pub(crate) fn sources(self) -> config::KeySources {
        config::KeySources {
            secret: self.secret,
            secret_file: self.secret_file,
            keys: self.keys,
            keys_file: self.keys_file,
            signing_key_id: self.signing_key_id,
        }
    }
}

#[derive(Args)]
struct TokenArgs {
    /// A token that reaches every town (lives 30 days unless --ttl).
    #[arg(long, conflicts_with = "town", required_unless_present = "town")]
    admin: bool,
    /// A token that reaches only this town (lives 24 hours unless --ttl).
    #[arg(long)]
    town: Option<String>,
    /// Bind the town token to this container: its writes are refused once
    /// another container has heartbeat (fencing).
    #[arg(long, requires = "town", conflicts_with = "bootstrap")]
    container: Option<String>,
    /// A bootstrap token of the town, what a container is started with: it
    /// does nothing but be exchanged, once, for a container token of one
    /// container (`stasis-client boot` does it). Lives 1 hour unless --ttl.
    #[arg(long, requires = "town")]
    bootstrap: bool,
    /// How long the token lives, like `90s`, `12h` or `30days` (at most 366 days).
    #[arg(long)]
    ttl: Option<humantime::Duration>,
    /// Every write with the token is refused (403): for dashboards and people.
    #[arg(long)]
    read_only: bool,
    #[command(flatten)]
    secret: SecretArgs,
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Serve(args) => serve(*args),
        Command::Token(args) => token(args),
    }
}

fn serve(args: serve_args::ServeArgs) -> anyhow::Result<()> {
    init_log(args.log_format);
    // mimalloc asks for transparent huge pages on its arenas, so every
    // 2 MiB region a burst of chunk buffers touched stayed resident whole:
    // a 1.1 GB workspace pull peaked at 354 MiB (237 MiB of it huge pages),
    // 139 MiB without them, and no slower. Refused, it only costs THP.
    if let Err(err) = rustix::thread::disable_transparent_huge_pages(true) {
        tracing::debug!(%err, "transparent huge pages stay allowed");
    }
    let config = args.into_config()?;
    config.check()?;
    let runtime = stasis_host::runtime::async_runtime().context("starting the async runtime")?;
    let served = runtime.block_on(stasis_host::server::run(config));
    // Every acknowledged write is committed already; idle blocking threads
    // need not be waited for.
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    served
}

/// Logs to stderr, filtered by `STASIS_LOG` (default `info`), as text or
/// as one JSON object a line.
fn init_log(format: serve_args::LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("STASIS_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match format {
        serve_args::LogFormat::Json => builder.json().flatten_event(true).init(),
        serve_args::LogFormat::Text => builder
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .init(),
    }
}

/// A bootstrap token's id: 128 random bits in hex, so that no two tokens
/// ever share one (the town spends each id once).
fn fresh_token_id() -> anyhow::Result<String> {
    use std::io::Read as _;
    let mut bytes = [0_u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut random| random.read_exact(&mut bytes))
        .context("reading /dev/urandom for the token's id")?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

fn token(args: TokenArgs) -> anyhow::Result<()> {
    let keys = config::load_keys(args.secret.sources())?.context(
        "no key: set STASIS_SECRET or STASIS_KEYS (or their _FILE variants, or pass --secret / --keys)",
    )?;
    let scope = match (args.town, args.container) {
        (Some(town), None) if args.bootstrap => {
            stasis_domain::ids::check_id("town id", &town)?;
            Scope::Bootstrap {
                town,
                token_id: fresh_token_id()?,
            }
        }
        (Some(town), Some(container_id)) => {
            stasis_domain::ids::check_id("town id", &town)?;
            stasis_domain::ids::check_id("container id", &container_id)?;
            Scope::Container { town, container_id }
        }
        (Some(town), None) => {
            stasis_domain::ids::check_id("town id", &town)?;
            Scope::Town(town)
        }
        (None, _) => Scope::Admin,
    };
    let ttl = args.ttl.map_or_else(|| scope.default_ttl(), Into::into);
    let grant = Grant {
        scope,
        read_only: args.read_only,
    };
    let now = std::time::SystemTime::now();
    let now_s = now.duration_since(std::time::UNIX_EPOCH)?.as_secs();
    println!("{}", keys.mint(&grant, now_s, ttl)?);
    eprintln!(
        "{} token{}, signed with key {:?}, valid until {}",
        grant.scope.kind(),
        if grant.read_only { " (read-only)" } else { "" },
        keys.signing_key_id(),
        humantime::format_rfc3339_seconds(now + ttl)
    );
    Ok(())
}
