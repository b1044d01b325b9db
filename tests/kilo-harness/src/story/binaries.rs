//! Where the workspace's own binaries are: `stasis-client` (the container's client) and
//! `stasis` (the host, for the demo and the outage count).

use anyhow::{Result, bail};
use std::path::{Path, PathBuf};

/// The `stasis-client` binary: `$STASIS_CLIENT_BIN`, else the one cargo built beside the
/// running executable (a test's `target/<profile>/deps/..`, a binary's `target/<profile>`).
///
/// # Errors
///
/// When neither exists.
pub fn client_bin() -> Result<PathBuf> {
    workspace_bin("STASIS_CLIENT_BIN", "stasis-client", "-p stasis-client")
}

/// The `stasis` host binary: `$STASIS_BIN`, else the one cargo built beside the running
/// executable.
///
/// # Errors
///
/// When neither exists.
pub fn host_bin() -> Result<PathBuf> {
    workspace_bin("STASIS_BIN", "stasis", "-p stasis-host")
}

fn workspace_bin(variable: &str, name: &str, package: &str) -> Result<PathBuf> {
    if let Some(path) = std::env::var_os(variable).filter(|p| !p.is_empty()) {
        let path = PathBuf::from(path);
        if !path.is_file() {
            bail!("{variable}={} is not a file", path.display());
        }
        return Ok(path);
    }
    let exe = std::env::current_exe()?;
    let candidates: Vec<PathBuf> = exe
        .ancestors()
        .skip(1)
        .take(2)
        .map(|dir| dir.join(name))
        .collect();
    if let Some(found) = candidates.iter().find(|path| path.is_file()) {
        return Ok(found.clone());
    }
    bail!(
        "no {name} binary at {} (build it with `cargo build {package}`, or set {variable})",
        show(&candidates)
    )
}

fn show(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| Path::display(p).to_string())
        .collect::<Vec<_>>()
        .join(" or ")
}
