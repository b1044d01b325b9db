//! The polecat's working folder across containers (issue 24's real-agent check): container K
//! restores it from stasis (A's eviction saved it after the WIP commit), the model makes kilo
//! run `bash` to commit a new file (never pushed) and to leave an edit uncommitted, the
//! supervisor saves the folder when that turn ends, and after K is killed whole the next
//! container gets the same tree back byte for byte before its kilo starts: `git status` and
//! `git log` there show the edit and the commit.
//!
//! `STASIS_STORY_NO_WORKSPACES=1` runs `up` without `--workspaces`: the check then fails.

use super::commands::{git, turn};
use super::container::Entrypoint;
use super::log::{get_json, poll};
use super::waits::{Started, alive};
use super::{POLECAT, Stage};
use anyhow::{Context, Result, ensure};
use stasis_client::workspace::{self, ScanOptions};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The polecat's prompt that makes the model run [`WORK_COMMAND`].
pub const PROMPT_WORK: &str = "Add the entry point, commit it, and start the changelog";
/// What kilo's `bash` runs for it: a commit (not pushed) and an uncommitted edit.
pub const WORK_COMMAND: &str = "printf 'fn main() {}\\n' > main.rs && git add main.rs && \
    git commit -q -m 'unpushed: the entry point' && printf 'uncommitted: started the changelog\\n' \
    >> notes.txt";
/// The files the command writes.
const WRITTEN: [&str; 2] = ["main.rs", "notes.txt"];
/// How long a start, a turn or a save may take on a busy machine.
const WITHIN: Duration = Duration::from_secs(150);

/// The polecat's folder as K left it.
pub(super) struct WorkTree {
    root_hash: String,
    status: String,
    log: String,
    files: Vec<(&'static str, Vec<u8>)>,
}

/// The polecat's working folder in the containers' root.
fn worktree(stage: &Stage<'_>) -> PathBuf {
    stage.root.join(format!("agent-home-{POLECAT}/work"))
}

fn root_hash(dir: &Path) -> Result<String> {
    let scan = workspace::scan(dir, &ScanOptions::default())
        .with_context(|| format!("scanning {}", dir.display()))?;
    Ok(scan.summary.root_hash.to_hex())
}

/// In K: the folder came back from A's eviction save; the polecat commits and edits through
/// kilo's `bash`; stasis holds the folder as it is after that turn.
pub(super) fn act_polecat_works(
    stage: &Stage<'_>,
    k: &mut Entrypoint,
    polecat: &Started,
    session: &str,
) -> Result<WorkTree> {
    let dir = worktree(stage);
    let head = git(&dir, &["log", "-1", "--format=%s"]).unwrap_or_default();
    ensure!(
        head.trim() == "WIP: container eviction save",
        "K's polecat worktree was not restored from A's eviction save (its head: {head:?})"
    );
    stage.say("   ✓ the polecat's worktree restored before its kilo started (A's WIP commit)");
    // Its session from A (the restored kilo.db holds it): a new, empty one would get the
    // resume step's first prompt too.
    turn(&polecat.url, session, PROMPT_WORK)?;
    let expected = WorkTree {
        // Before `git status`, which rewrites the index's stat data.
        root_hash: root_hash(&dir)?,
        status: git(&dir, &["status", "--porcelain"])?,
        log: git(&dir, &["log", "--format=%H %s"])?,
        files: WRITTEN
            .iter()
            .map(|name| Ok((*name, std::fs::read(dir.join(name))?)))
            .collect::<Result<_>>()?,
    };
    ensure!(
        expected.log.contains("unpushed: the entry point")
            && expected.status.contains(" M notes.txt"),
        "kilo's bash did not commit and edit: status {:?}, log {:?}",
        expected.status,
        expected.log
    );
    let path = format!("{}/workspace/manifest", stage.agent_path(POLECAT));
    poll(
        "stasis to hold the polecat's folder as the turn left it",
        WITHIN,
        || alive(k),
        || {
            let current = get_json(&stage.api, &path).ok();
            let root = current.as_ref().and_then(|c| c.get("root_hash")?.as_str());
            Ok((root == Some(expected.root_hash.as_str())).then_some(()))
        },
    )?;
    stage.say(&format!(
        "   ✓ kilo's bash committed main.rs (unpushed) and left notes.txt edited; the \
         supervisor saved the folder when the turn ended (root {})",
        &expected.root_hash[..12]
    ));
    Ok(expected)
}

/// In the container after K: the polecat's folder is K's, byte for byte, with the same `git
/// status` and `git log`.
pub(super) fn check_restored(stage: &Stage<'_>, expected: &WorkTree) -> Result<()> {
    let dir = worktree(stage);
    // Before `git status`, which rewrites the index's stat data.
    let root = root_hash(&dir).context("the polecat's worktree did not come back")?;
    let status = git(&dir, &["status", "--porcelain"])
        .context("the polecat's worktree did not come back")?;
    let log = git(&dir, &["log", "--format=%H %s"])?;
    ensure!(
        status == expected.status && log == expected.log,
        "the polecat's worktree came back different: status {status:?} (K: {:?}), log {log:?} \
         (K: {:?})",
        expected.status,
        expected.log
    );
    for (name, bytes) in &expected.files {
        ensure!(
            std::fs::read(dir.join(name))? == *bytes,
            "{name} is not K's, byte for byte"
        );
    }
    ensure!(
        root == expected.root_hash,
        "the restored tree's root hash {root} is not K's {}",
        expected.root_hash
    );
    stage.say(&format!(
        "   ✓ the polecat's worktree is K's byte for byte (root {}): git status\n{}   git log\n{}",
        &root[..12],
        indent(&status),
        indent(&log)
    ));
    Ok(())
}

fn indent(text: &str) -> String {
    text.lines().map(|l| format!("     {l}\n")).collect()
}
