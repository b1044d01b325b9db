//! `record-fixtures`: drives the real Kilo CLI through scripted
//! conversations against the fake model and writes, per conversation,
//! kilo's raw `GET /event` stream (`events.sse`, every line as received,
//! `sync` twins included), kilo's own `GET /session/{id}/message` answer at
//! the end (`messages.json`) and what happened (`notes.md`), into
//! `<out>/kilo-<version>/<name>/`.

mod record;
mod scenarios;

use anyhow::{Context, Result};
use clap::Parser;
use stasis_kilo_harness::{kilo_bin, kilo_version};
use std::path::PathBuf;

#[derive(Parser)]
#[command(about = "Record kilo's event streams into fixture folders")]
struct Args {
    /// Where the `kilo-<version>` folder goes.
    #[arg(long, default_value = concat!(env!("CARGO_MANIFEST_DIR"), "/../../crates/stasis-domain/tests/fixtures"))]
    out: PathBuf,
    /// Where kilo's homes go while recording (emptied first, removed after).
    #[arg(long, default_value = "/tmp/stasis-kilo-fixtures")]
    work: PathBuf,
    /// Record only these scenarios (plain, tool, cut, revert).
    #[arg(long)]
    only: Vec<String>,
}

fn main() -> Result<()> {
    let args = Args::parse();
    let bin = kilo_bin()?;
    let version = kilo_version(&bin)?;
    std::fs::create_dir_all(&args.out)?;
    let out = std::fs::canonicalize(&args.out)?.join(format!("kilo-{version}"));
    for scenario in scenarios::all() {
        if !args.only.is_empty() && !args.only.iter().any(|name| name == scenario.name) {
            continue;
        }
        let folder = out.join(scenario.name);
        let home = args.work.join(scenario.name);
        let recorded = record::record(&scenario, &home)
            .with_context(|| format!("recording {}", scenario.name))?;
        recorded
            .write(&folder, &version, &scenario)
            .with_context(|| format!("writing {}", folder.display()))?;
        eprintln!(
            "{}: {} events, {} messages -> {}",
            scenario.name,
            recorded.event_count,
            recorded.message_count,
            folder.display()
        );
    }
    let _ = std::fs::remove_dir_all(&args.work);
    Ok(())
}
