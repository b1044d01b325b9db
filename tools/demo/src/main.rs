//! `stasis-demo`: the spec's scenario end to end. Container A is evicted,
//! container B gets everything back, against a fresh in-process host or
//! `--url`. Its own binary, so the `stasis` product carries neither the
//! client library nor a TLS stack.

mod demo;

use clap::Parser;

/// Run the spec's scenario end to end: container A is evicted, container B
/// gets everything back. Against a fresh in-process host, or --url.
#[derive(Parser)]
#[command(version, about)]
struct Cli {
    #[command(flatten)]
    args: demo::DemoArgs,
}

fn main() -> anyhow::Result<()> {
    demo::run(Cli::parse().args)
}
