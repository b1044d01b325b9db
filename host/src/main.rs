//! The `stasis` command: serve the local runtime, mint tokens, or run the
//! end-to-end demo.

mod demo;
mod serve_args;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use stasis_api::auth::{self, Scope};
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
    Serve(serve_args::ServeArgs),
    /// Print a bearer token minted from the secret.
    Token(TokenArgs),
    /// Run the spec's scenario end to end: container A is evicted, container
    /// B gets everything back. Against a fresh in-process host, or --url.
    Demo(demo::DemoArgs),
}

#[derive(Args)]
pub(crate) struct SecretArgs {
    /// The token secret (at least 16 characters).
    #[arg(long, env = "STASIS_SECRET", hide_env_values = true)]
    pub(crate) secret: Option<String>,
    /// A file holding the token secret.
    #[arg(long, env = "STASIS_SECRET_FILE")]
    pub(crate) secret_file: Option<PathBuf>,
}

#[derive(Args)]
struct TokenArgs {
    /// A token that reaches every town.
    #[arg(long, conflicts_with = "town", required_unless_present = "town")]
    admin: bool,
    /// A token that reaches only this town.
    #[arg(long)]
    town: Option<String>,
    #[command(flatten)]
    secret: SecretArgs,
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Serve(args) => serve(args),
        Command::Token(args) => token(args),
        Command::Demo(args) => demo::run(args),
    }
}

fn serve(args: serve_args::ServeArgs) -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("STASIS_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let config = args.into_config()?;
    config.check()?;
    let runtime = stasis_host::runtime::async_runtime().context("starting the async runtime")?;
    let served = runtime.block_on(stasis_host::server::run(config));
    // Every acknowledged write is committed already; idle blocking threads
    // need not be waited for.
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    served
}

fn token(args: TokenArgs) -> anyhow::Result<()> {
    let secret = config::load_secret(args.secret.secret, args.secret.secret_file)?.context(
        "no secret: set STASIS_SECRET or STASIS_SECRET_FILE (or pass --secret / --secret-file)",
    )?;
    let scope = match args.town {
        Some(town) => {
            stasis_domain::ids::check_id("town id", &town)?;
            Scope::Town(town)
        }
        None => Scope::Admin,
    };
    println!("{}", auth::mint(&secret, &scope));
    Ok(())
}
