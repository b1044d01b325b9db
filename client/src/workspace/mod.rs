//! A workspace: an agent's working folder (a git worktree with uncommitted edits and
//! unpushed commits), scanned into a tree manifest of content-defined chunks, and restored
//! from one.
//!
//! - [`scan()`]: walks the folder ([`ScanOptions`]: git's ignores by default, extra excludes and
//!   includes), reads each file consistently (a file that changes while it is read is read
//!   again, never stored torn), cuts it with FastCDC and names each chunk by its sha256; a local
//!   index (path → stamp → chunks) spares unchanged files a read. The [`Scan`] holds the
//!   checked manifest and what a push needs: [`Scan::new_chunks`] against the chunks a store
//!   holds, and [`Scan::read_chunk`] to read one from the files when it is sent.
//! - [`restore()`]: writes a manifest's tree into a sibling folder, verifying every chunk, every
//!   file and the root hash, then renames it into place; never into a non-empty folder.
//!
//! The manifest's types and rules are the domain's ([`stasis_domain::workspace`]); moving
//! manifests and chunks to and from a server is not this module's concern.
//!
//! ```no_run
//! use std::collections::HashSet;
//! use std::path::Path;
//!
//! use stasis_client::workspace::{self, ScanOptions};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let options = ScanOptions {
//!     index_path: Some("/tmp/agent-home-mayor/.stasis/workspace.index".into()),
//!     ..ScanOptions::default()
//! };
//! let scan = workspace::scan(Path::new("/work/polecat"), &options)?;
//! let known = HashSet::new(); // what the server says it holds
//! for hash in scan.new_chunks(&known) {
//!     let bytes = scan.read_chunk(&hash)?; // upload it
//!     # drop(bytes);
//! }
//! let root = scan.summary.root_hash;
//! let mut fetch = |chunk: &stasis_domain::workspace::ChunkRef| scan
//!     .read_chunk(&chunk.sha256)
//!     .map_err(|e| stasis_client::Error::Config(e.to_string()));
//! workspace::restore(&scan.manifest, &root, Path::new("/tmp/copy"), &mut fetch)?;
//! # Ok(()) }
//! ```

mod chunk_locations;
mod chunker;
mod consistent_read;
mod error;
mod index;
mod restore;
mod scan;
mod stamp;
mod stat_ahead;
mod walk;

#[cfg(test)]
mod tests;

pub use chunk_locations::ChunkLocations;
pub use chunker::{ChunkedContent, Chunker};
pub use consistent_read::ReadHook;
pub use error::{WorkspaceError, WorkspaceResult};
pub use index::{Index, IndexRecord};
pub use restore::{ChunkFetcher, RESTORE_SUFFIX, RestoreStats, restore};
pub use scan::{Scan, ScanOptions, ScanStats, scan};
pub use stamp::FileStamp;
