//! The manifest routes: `PUT /workspace/manifest` under a precondition (`If-Match` of the root
//! hash last synced, or `If-None-Match: *` for a first version) and `GET /workspace/manifest`.

use serde::Deserialize;
use stasis_domain::workspace::ContentHash;
use ureq::http::Response;

use super::chunks::ChunkRoutes;
use super::wire::{StoredManifest, WorkspaceReceipt};
use crate::error::{Error, Result};
use crate::http;
use crate::retry::Attempt;

/// The code of an agent without a workspace.
pub(crate) const NO_WORKSPACE: &str = "workspace_not_found";

/// What a commit requires of the current version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Precondition {
    /// The current version has this root hash.
    IfMatch(ContentHash),
    /// There is no current version.
    NoneYet,
}

/// What a commit came to.
pub(crate) enum Committed {
    /// Stored (or the same tree was current already).
    Stored(WorkspaceReceipt),
    /// 409 `chunks_missing`: these are not held.
    Missing(Vec<ContentHash>),
    /// 412: the current version is not the one the precondition named.
    Conflict(Error),
}

#[derive(Deserialize)]
struct MissingDetail {
    missing: Vec<ContentHash>,
}

impl ChunkRoutes<'_> {
    fn manifest_path(&self) -> String {
        self.agent.path("/workspace/manifest")
    }

    /// `PUT /workspace/manifest` with `body` under `precondition`, retried.
    pub fn commit(&self, body: &[u8], precondition: Precondition) -> Result<Committed> {
        let path = self.manifest_path();
        let what = format!("PUT {path}");
        self.client.retrying(&what, self.deadline, || {
            let url = self.client.config().url(&path);
            let mut request = self
                .client
                .prepare(self.client.agent().put(url), self.deadline)?
                .header("Content-Type", "application/json");
            request = match precondition {
                Precondition::IfMatch(root) => request.header("If-Match", format!("\"{root}\"")),
                Precondition::NoneYet => request.header("If-None-Match", "*"),
            };
            let response = request.send(body).map_err(|e| http::transport(&what, e))?;
            match response.status().as_u16() {
                409 => missing_from(&what, response),
                412 => Ok(Committed::Conflict(http::api_error(&what, response))),
                _ => {
                    let response = http::check_status(&what, response)?;
                    http::read_json(&what, response).map(Committed::Stored)
                }
            }
        })
    }

    /// `GET /workspace/manifest`: the current version, or none.
    pub fn current(&self) -> Result<Option<StoredManifest>> {
        let path = self.manifest_path();
        match self.client.get_json::<StoredManifest>(&path, self.deadline) {
            Ok(manifest) => Ok(Some(manifest)),
            Err(error) if error.code() == Some(NO_WORKSPACE) => Ok(None),
            Err(error) => Err(error),
        }
    }
}

/// A 409: `chunks_missing` names what to upload; any other conflict is final.
fn missing_from(what: &str, response: Response<ureq::Body>) -> Result<Committed, Attempt> {
    let error = http::api_error(what, response);
    let missing = match &error {
        Error::Api {
            code,
            detail: Some(detail),
            ..
        } if code == "chunks_missing" => {
            serde_json::from_value::<MissingDetail>(detail.clone()).ok()
        }
        _ => None,
    };
    match missing {
        Some(found) if !found.missing.is_empty() => Ok(Committed::Missing(found.missing)),
        _ => Err(Attempt::fail(error)),
    }
}
