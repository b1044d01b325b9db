//! What this machine last pushed or pulled of a workspace, kept beside it: the root hash a
//! commit's `If-Match` names (and a push of the same tree skips), the version, and the chunking
//! the next scan must cut with. With it, in the same folder, the scan's index.
//!
//! By default the state lives in the folder's sibling `.<name>.stasis-workspace/` (the parent
//! must be writable anyway: a restore writes its tree beside the target), never inside the
//! folder, where `git status` would see it.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use stasis_domain::workspace::{ChunkParams, ContentHash};

use crate::atomic_write::AtomicFile;
use crate::error::{Error, Result};
use crate::ids::AgentRef;

/// The state file's name in the state folder.
const SYNCED_FILE: &str = "synced.json";
/// The scan index's name in the state folder.
const INDEX_FILE: &str = "index";

/// The last version this machine pushed or pulled.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Synced {
    /// `town/rig/agent`: a record of another agent is not used.
    pub agent: String,
    /// The tree's root hash.
    pub root_hash: ContentHash,
    /// The version stored under it.
    pub version: u64,
    /// How its files were cut.
    pub chunking: ChunkParams,
}

/// A workspace's local state folder.
#[derive(Debug, Clone)]
pub struct StateDir {
    dir: PathBuf,
}

impl StateDir {
    /// The state in `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        StateDir { dir: dir.into() }
    }

    /// The default for the workspace `folder`: its sibling `.<name>.stasis-workspace`.
    pub fn beside(folder: &Path) -> Self {
        let name = folder
            .file_name()
            .map_or_else(|| "workspace".into(), |n| n.to_string_lossy().into_owned());
        let parent = match folder.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent.to_owned(),
            _ => PathBuf::from("."),
        };
        StateDir::new(parent.join(format!(".{name}.stasis-workspace")))
    }

    /// The folder.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// The scan's index.
    pub fn index_path(&self) -> PathBuf {
        self.dir.join(INDEX_FILE)
    }

    /// The record for `agent`; none when absent, unreadable, or another agent's.
    pub fn load(&self, agent: &AgentRef) -> Option<Synced> {
        let bytes = std::fs::read(self.dir.join(SYNCED_FILE)).ok()?;
        let synced: Synced = serde_json::from_slice(&bytes).ok()?;
        (synced.agent == agent_key(agent)).then_some(synced)
    }

    /// Records `synced` (atomically: a crash leaves the old record or the new one).
    pub fn save(&self, synced: &Synced) -> Result<()> {
        std::fs::create_dir_all(&self.dir)
            .map_err(|e| Error::io(format!("creating {}", self.dir.display()), e))?;
        let path = self.dir.join(SYNCED_FILE);
        let bytes = serde_json::to_vec_pretty(synced).map_err(|e| Error::Protocol {
            what: format!("writing {}", path.display()),
            detail: e.to_string(),
        })?;
        let mut file = AtomicFile::create(&path)?;
        file.file()
            .write_all(&bytes)
            .map_err(|e| Error::io(format!("writing {}", path.display()), e))?;
        file.commit()
    }

    /// Forgets the index (a restore wrote new files: no record of it vouches for them).
    pub fn drop_index(&self) {
        let _ = std::fs::remove_file(self.index_path());
    }
}

/// How a record names its agent.
pub(crate) fn agent_key(agent: &AgentRef) -> String {
    format!("{}/{}/{}", agent.town(), agent.rig(), agent.agent())
}
