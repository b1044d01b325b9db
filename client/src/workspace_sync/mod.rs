//! Moving a workspace (see [`crate::workspace`]) to and from stasis over HTTP, under
//! `/api/towns/{town}/rigs/{rig}/agents/{agent}/workspace`:
//!
//! - [`push()`]: scans the folder (an index spares unchanged files a read), skips everything when
//!   the tree's root hash is the one last synced from here, else sends only the chunks and
//!   manifest pages the agent's store lacks (many per request, a few requests in flight) and commits the manifest's head under
//!   `If-Match` of the last synced root hash (`If-None-Match: *` for a first version).
//! - [`pull()`]: restores the current version into an absent or empty folder: the head, its
//!   pages, then the tree written beside the target while its chunks are fetched ahead in
//!   batches of many per request, every chunk, file and the root hash verified, and renamed into place.
//!
//! Both keep a small local state ([`StateDir`]: the last synced root hash and version, and the
//! scan's index), by default in the folder's sibling `.<name>.stasis-workspace/`.
//!
//! ```no_run
//! use std::path::Path;
//!
//! use stasis_client::workspace_sync::{self, PullOptions, PullOutcome, PushOptions};
//! use stasis_client::{AgentRef, Client, Config};
//!
//! fn main() -> Result<(), stasis_client::Error> {
//!     let client = Client::new(Config::from_env()?);
//!     let polecat = AgentRef::new("demo", "main", "polecat-1")?;
//!     let folder = Path::new("/work/polecat-1");
//!     let pushed = workspace_sync::push(&client, &polecat, folder, &PushOptions::beside(folder))?;
//!     println!("{:?}: sent {} chunks", pushed.receipt, pushed.transfer.chunks_sent);
//!
//!     let copy = Path::new("/tmp/polecat-1-copy");
//!     match workspace_sync::pull(&client, &polecat, copy, &PullOptions::beside(copy))? {
//!         PullOutcome::Restored(r) => println!("restored version {} ({} files)", r.version, r.files),
//!         PullOutcome::NoWorkspace => println!("no workspace stored"),
//!     }
//!     Ok(())
//! }
//! ```

mod batches;
mod chunks;
mod commit;
mod held;
mod prefetch;
mod pull;
mod push;
mod synced;
mod wire;

#[cfg(test)]
mod tests;

use std::path::Path;
use std::time::Instant;

pub use chunks::MISSING_BATCH;
pub use pull::{PullOutcome, Restored, pull};
pub use push::{PushTransfer, Pushed, ScanCounts, page_bytes, push};
pub use synced::{StateDir, Synced};
pub use wire::WorkspaceReceipt;

use crate::workspace::ScanOptions;

/// How a push runs.
#[derive(Debug, Clone)]
pub struct PushOptions {
    /// How the folder is scanned (its `index_path` is the state's; its chunking the last
    /// synced version's when there is one).
    pub scan: ScanOptions,
    /// Where the last synced version and the index are kept.
    pub state: StateDir,
    /// The event watermark stored with the version (else the agent's last seq).
    pub event_watermark: Option<u64>,
    /// When every request must be done.
    pub deadline: Option<Instant>,
}

impl PushOptions {
    /// The defaults for `folder`, its state beside it ([`StateDir::beside`]).
    pub fn beside(folder: &Path) -> Self {
        PushOptions {
            scan: ScanOptions::default(),
            state: StateDir::beside(folder),
            event_watermark: None,
            deadline: None,
        }
    }
}

/// How a pull runs.
#[derive(Debug, Clone)]
pub struct PullOptions {
    /// Where the restored version is recorded (the next push commits against it).
    pub state: StateDir,
    /// When every request must be done.
    pub deadline: Option<Instant>,
}

impl PullOptions {
    /// The defaults for `folder`, its state beside it ([`StateDir::beside`]).
    pub fn beside(folder: &Path) -> Self {
        PullOptions {
            state: StateDir::beside(folder),
            deadline: None,
        }
    }
}
