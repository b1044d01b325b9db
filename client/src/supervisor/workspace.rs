//! The agent's workspace under supervision: restored before the runtime first starts on a
//! container whose folder is missing or empty (no version in stasis: an empty folder), saved
//! when a turn ends (`session.idle` on the runtime's stream), at most every interval while a
//! turn runs (a save of an unchanged tree sends nothing), and at the eviction after the save
//! command. Each save that stores a version is an event `stasis.workspace.saved` in the agent's
//! log; a restore is `stasis.workspace.restored`; a failed save `stasis.workspace.save_failed`
//! (once per distinct error; the next trigger tries again).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde_json::json;

use super::SuperviseOptions;
use super::journal::Journal;
use super::status::Status;
use crate::error::{Error, Result};
use crate::http::Client;
use crate::ids::AgentRef;
use crate::sidecar::Log;
use crate::workspace_sync::{self, PullOptions, PullOutcome, PushOptions, Pushed, StateDir};

/// How often the follower looks at the runtime's status.
const TICK: Duration = Duration::from_millis(250);
/// The longest a save outside the eviction may take, retries included.
const SAVE_TIMEOUT: Duration = Duration::from_secs(120);
/// The longest the restore before the first start may take.
const RESTORE_TIMEOUT: Duration = Duration::from_secs(15 * 60);

/// Which folder is kept, and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkspaceKeeping {
    /// The folder (`--workspace`); `None` keeps none.
    pub dir: Option<PathBuf>,
    /// Saves while a turn runs are at least this far apart.
    pub interval: Duration,
    /// More to leave out, in gitignore syntax (git's ignores are always left out).
    pub excludes: Vec<String>,
    /// What to keep although git ignores it.
    pub includes: Vec<String>,
}

impl Default for WorkspaceKeeping {
    fn default() -> Self {
        WorkspaceKeeping {
            dir: None,
            interval: Duration::from_secs(5),
            excludes: Vec::new(),
            includes: Vec::new(),
        }
    }
}

/// Keeps one agent's workspace.
pub(super) struct Keeper {
    client: Client,
    agent: AgentRef,
    dir: PathBuf,
    interval: Duration,
    push: PushOptions,
    journal: Arc<Journal>,
    log: Log,
    /// One save at a time; the last failure logged, so a lasting one is logged once.
    saving: Mutex<Option<String>>,
    /// Set by the eviction's save, the last one: a later save's event would land after the
    /// last snapshot's watermark.
    closed: AtomicBool,
}

impl Keeper {
    /// The keeper of `options`' workspace, when it names one.
    pub(super) fn new(
        options: &SuperviseOptions,
        client: &Client,
        journal: &Arc<Journal>,
        log: &Log,
    ) -> Option<Arc<Keeper>> {
        let keeping = &options.workspace;
        let dir = keeping.dir.clone()?;
        let agent = options.agent.agent();
        let mut push = PushOptions::beside(&dir);
        push.state = StateDir::new(options.root.join(format!("stasis-workspace-{agent}")));
        push.scan.excludes = keeping.excludes.clone();
        push.scan.includes = keeping.includes.clone();
        Some(Arc::new(Keeper {
            client: client.clone(),
            agent: options.agent.clone(),
            dir,
            interval: keeping.interval,
            push,
            journal: Arc::clone(journal),
            log: Arc::clone(log),
            saving: Mutex::new(None),
            closed: AtomicBool::new(false),
        }))
    }

    /// Before the first start: a missing or empty folder gets the stored version (or stays
    /// empty when there is none); a folder holding files is kept as it is.
    pub(super) fn restore_if_empty(&self) -> Result<()> {
        if !is_missing_or_empty(&self.dir)? {
            (self.log)(&format!(
                "workspace {} holds files: kept as it is",
                self.dir.display()
            ));
            return Ok(());
        }
        let options = PullOptions {
            state: self.push.state.clone(),
            deadline: Some(Instant::now() + RESTORE_TIMEOUT),
        };
        match workspace_sync::pull(&self.client, &self.agent, &self.dir, &options)? {
            PullOutcome::Restored(restored) => {
                let data = json!({ "version": restored.version, "root_hash": restored.root_hash,
                    "files": restored.files, "bytes": restored.bytes,
                    "chunks_fetched": restored.chunks_fetched,
                    "bytes_fetched": restored.bytes_fetched, "took_ms": restored.took_ms,
                    "dir": self.dir });
                self.journal
                    .record("stasis.workspace.restored", None, data)?;
            }
            PullOutcome::NoWorkspace => {
                std::fs::create_dir_all(&self.dir)
                    .map_err(|e| Error::io(format!("creating {}", self.dir.display()), e))?;
                (self.log)(&format!(
                    "no workspace in stasis: {} starts empty",
                    self.dir.display()
                ));
            }
        }
        Ok(())
    }

    /// Saves the folder (nothing is sent when it did not change); answers whether it is
    /// stored. Fails only when stasis fenced this container. Saves nothing once the eviction
    /// saved.
    pub(super) fn save(&self, why: &str) -> Result<bool> {
        let last_error = self.saving.lock().unwrap_or_else(|p| p.into_inner());
        if self.closed.load(Ordering::SeqCst) {
            return Ok(false);
        }
        self.push(last_error, why, None)
    }

    /// The eviction's save, the last: a save under way finishes first, none starts after.
    pub(super) fn save_last(&self, deadline: Instant) -> Result<bool> {
        self.closed.store(true, Ordering::SeqCst);
        let last_error = self.saving.lock().unwrap_or_else(|p| p.into_inner());
        self.push(last_error, "eviction", Some(deadline))
    }

    fn push(
        &self,
        mut last_error: MutexGuard<'_, Option<String>>,
        why: &str,
        deadline: Option<Instant>,
    ) -> Result<bool> {
        let mut options = self.push.clone();
        options.deadline = Some(deadline.unwrap_or_else(|| Instant::now() + SAVE_TIMEOUT));
        match workspace_sync::push(&self.client, &self.agent, &self.dir, &options) {
            Ok(pushed) => {
                *last_error = None;
                if !pushed.skipped() {
                    self.journal.record(
                        "stasis.workspace.saved",
                        None,
                        saved_json(&pushed, why),
                    )?;
                }
                Ok(true)
            }
            Err(error) if error.is_fenced() => Err(error),
            Err(error) => {
                let text = error.to_string();
                if last_error.as_deref() != Some(text.as_str()) {
                    let data = json!({ "why": why, "error": text });
                    self.journal
                        .record("stasis.workspace.save_failed", None, data)?;
                    *last_error = Some(text);
                }
                Ok(false)
            }
        }
    }

    /// While `alive`: a save when a turn ends, and while a turn runs at most every interval.
    pub(super) fn follow(&self, status: &Status, alive: &AtomicBool) {
        let mut turns = status.turns_ended();
        let mut last_save = Instant::now();
        while alive.load(Ordering::SeqCst) {
            std::thread::sleep(TICK);
            let now = status.turns_ended();
            let why = if now != turns {
                turns = now;
                "a turn ended"
            } else if !status.busy_sessions().is_empty() && last_save.elapsed() >= self.interval {
                "a turn is running"
            } else {
                continue;
            };
            if !alive.load(Ordering::SeqCst) {
                return;
            }
            last_save = Instant::now();
            if let Err(error) = self.save(why) {
                (self.log)(&format!("workspace save: {error}"));
                return;
            }
        }
    }
}

fn saved_json(pushed: &Pushed, why: &str) -> serde_json::Value {
    let version = pushed.receipt.as_ref().map(|r| r.version);
    let sent = &pushed.transfer;
    json!({ "version": version, "root_hash": pushed.root_hash, "files": pushed.files,
        "total_size": pushed.total_size, "chunks_total": sent.chunks_total,
        "chunks_sent": sent.chunks_sent, "pages_sent": sent.pages_sent,
        "bytes_sent": sent.bytes_sent, "files_read": pushed.scan.files_read,
        "took_ms": pushed.took_ms, "why": why })
}

/// Whether `dir` is absent or an empty folder (anything else in its place is kept).
fn is_missing_or_empty(dir: &Path) -> Result<bool> {
    match std::fs::read_dir(dir) {
        Ok(mut names) => Ok(names.next().is_none()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(true),
        Err(e) => Err(Error::io(format!("reading {}", dir.display()), e)),
    }
}
