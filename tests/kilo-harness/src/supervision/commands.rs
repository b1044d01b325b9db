//! What the acts run: one prompt to its end through kilo's own API, and git in a folder.

use crate::{EventStream, KiloApi};
use anyhow::{Context, Result, bail};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// How long a turn may take on a busy machine.
const WITHIN: Duration = Duration::from_secs(150);

/// One prompt to its end.
pub(super) fn turn(url: &str, session: &str, prompt: &str) -> Result<()> {
    let events = EventStream::open(url)?;
    let from = events.len();
    KiloApi::new(url).prompt_async(session, prompt)?;
    events
        .wait_for_idle(session, from, WITHIN)
        .with_context(|| format!("the turn {prompt:?} did not end"))?;
    let messages = KiloApi::new(url).messages(session)?;
    if let Some(error) = messages.last().and_then(|m| m.info.error.as_ref()) {
        bail!("the turn {prompt:?} ended in an error (aborted at the turn deadline?): {error}");
    }
    Ok(())
}

/// `git ARGS` in `dir`: its output, or an error with git's own.
pub(super) fn git(dir: &Path, args: &[&str]) -> Result<String> {
    let output = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .context("running git")?;
    if !output.status.success() {
        bail!(
            "git {args:?} in {}: {}",
            dir.display(),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}
