//! The JSON of the workspace routes: the manifest as committed and as read back, and the
//! commit's receipt.

use serde::{Deserialize, Serialize};
use stasis_domain::workspace::ContentHash;
use stasis_domain::workspace::pages::ManifestHead;

/// The body of `PUT /workspace/manifest`: the head, and the watermark when the caller has one
/// (else the server takes `X-Stasis-Event-Seq`, else the agent's last seq).
#[derive(Debug, Serialize)]
pub(crate) struct ManifestUpload<'a> {
    #[serde(flatten)]
    pub head: &'a ManifestHead,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event_watermark: Option<u64>,
}

/// `GET /workspace/manifest`: the head and what the server says of its version.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct StoredManifest {
    #[serde(flatten)]
    pub head: ManifestHead,
    pub version: u64,
    #[serde(default)]
    pub files: Option<u64>,
    #[serde(default)]
    pub event_watermark: Option<u64>,
}

/// A stored workspace version, as a commit answers it (201 new, 200 the same tree again).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkspaceReceipt {
    /// The version's number.
    pub version: u64,
    /// Its tree's root hash.
    pub root_hash: ContentHash,
    /// Entries of every kind.
    #[serde(default)]
    pub entries: u64,
    /// Regular files.
    #[serde(default)]
    pub files: u64,
    /// Bytes in all files.
    #[serde(default)]
    pub total_size: u64,
    /// Distinct file chunks.
    #[serde(default)]
    pub chunk_count: u64,
    /// Manifest pages.
    #[serde(default)]
    pub page_count: u64,
    /// The newest event seq the version covers.
    #[serde(default)]
    pub event_watermark: Option<u64>,
    /// When it was stored (as the server gives it).
    #[serde(default)]
    pub created_at: Option<serde_json::Value>,
}

impl StoredManifest {
    /// The receipt a commit of this same tree would have answered.
    pub fn receipt(&self) -> WorkspaceReceipt {
        WorkspaceReceipt {
            version: self.version,
            root_hash: self.head.root_hash,
            entries: self.head.entries,
            files: self.files.unwrap_or_default(),
            total_size: self.head.total_size,
            chunk_count: 0,
            page_count: self.head.pages.len() as u64,
            event_watermark: self.event_watermark,
            created_at: None,
        }
    }
}
