//! `kilo serve`: where the binary is, starting and stopping it, its HTTP
//! API and its event stream.

mod api;
mod config;
mod events;
mod launch;
mod messages;

pub use api::KiloApi;
pub use events::{EventStream, KiloEvent};
pub use launch::{Kilo, KiloOptions};
pub use messages::{KiloMessage, MessageInfo, Part, SessionInfo};

use anyhow::{Context, Result, bail};
use std::path::PathBuf;
use std::process::Command;

/// The Kilo CLI: `$STASIS_KILO_BIN`, else the one npm installs under the
/// repository root (`node_modules/@kilocode/cli-linux-x64/bin/kilo`).
///
/// # Errors
///
/// When neither exists.
pub fn kilo_bin() -> Result<PathBuf> {
    let path = match std::env::var_os("STASIS_KILO_BIN") {
        Some(path) if !path.is_empty() => PathBuf::from(path),
        _ => PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../node_modules/@kilocode/cli-linux-x64/bin/kilo"),
    };
    if !path.is_file() {
        bail!(
            "no Kilo CLI at {} (run `source scripts/setup.sh && stasis_kilo`, or set STASIS_KILO_BIN)",
            path.display()
        );
    }
    Ok(path)
}

/// What `kilo --version` prints, e.g. `7.7.9`.
///
/// # Errors
///
/// When the binary cannot run or prints nothing.
pub fn kilo_version(bin: &std::path::Path) -> Result<String> {
    let output = Command::new(bin)
        .arg("--version")
        .envs(config::OFFLINE_ENV.iter().copied())
        .output()
        .with_context(|| format!("running {} --version", bin.display()))?;
    let version = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    if !output.status.success() || version.is_empty() {
        bail!("{} --version failed: {}", bin.display(), output.status);
    }
    Ok(version)
}

/// The environment `kilo serve` runs with offline against the fake model at `model_url` (what
/// [`Kilo::start`] sets besides the home), for callers that start kilo themselves, such as a
/// supervisor.
///
/// # Errors
///
/// When the config cannot be encoded.
pub fn kilo_env(model_url: &str) -> Result<Vec<(String, String)>> {
    let mut env: Vec<(String, String)> = config::OFFLINE_ENV
        .iter()
        .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
        .collect();
    env.push((
        "KILO_CONFIG_CONTENT".into(),
        config::config_content(model_url)?,
    ));
    Ok(env)
}
