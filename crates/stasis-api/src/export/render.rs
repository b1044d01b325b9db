//! The manifest's JSON text, piece by piece, in the field order of the
//! `stasis.agent.v1` format: `format`, `agent`, `sessions`, `events`,
//! `checkpoint`, `memory`, `snapshot` (then `workspace` and
//! `workspace_chunks`, [`super::workspace_part`]). Documents are written from their
//! stored text as is.

use crate::{body::raw, error::ApiError, events::write_event};
use serde::Serialize;
use stasis_domain::{
    agent_state::{ExportHead, MANIFEST_FORMAT},
    event_log::ReadPage,
    snapshot::SnapshotMeta,
};

/// Writes the manifest, remembering whether the array being written has an
/// element yet (for the commas).
#[derive(Default)]
pub(super) struct Render {
    has_element: bool,
}

impl Render {
    /// Up to the opening of `sessions`.
    pub fn open(&mut self, head: &ExportHead) -> Result<String, ApiError> {
        let agent = serde_json::to_string(&head.agent).map_err(rendering)?;
        self.has_element = false;
        Ok(format!(
            r#"{{"format":"{MANIFEST_FORMAT}","agent":{agent},"sessions":["#
        ))
    }

    /// Elements of the array being written.
    pub fn items<T: Serialize>(&mut self, items: &[T]) -> Result<String, ApiError> {
        let mut out = String::new();
        for item in items {
            self.comma(&mut out);
            out.push_str(&serde_json::to_string(item).map_err(rendering)?);
        }
        Ok(out)
    }

    /// Ends `sessions` and opens `events`.
    pub fn close_sessions(&mut self) -> String {
        self.has_element = false;
        r#"],"events":["#.to_owned()
    }

    /// Ends `events`, writes `checkpoint` and opens `memory`.
    pub fn close_events(&mut self, head: &ExportHead) -> Result<String, ApiError> {
        let checkpoint = match &head.checkpoint {
            Some(text) => raw(text.clone()).get().to_owned(),
            None => "null".to_owned(),
        };
        self.has_element = false;
        Ok(format!(r#"],"checkpoint":{checkpoint},"memory":["#))
    }

    /// Ends `memory` and names `snapshot`.
    pub fn close_memory(&mut self) -> String {
        r#"],"snapshot":"#.to_owned()
    }

    /// A snapshot's fields, up to the opening quote of its base64.
    pub fn open_snapshot(meta: &SnapshotMeta) -> String {
        format!(
            r#"{{"sha256":"{}","size":{},"event_watermark":{},"data_base64":""#,
            meta.sha256, meta.size, meta.event_watermark
        )
    }

    /// Closes the base64 and the snapshot.
    pub fn close_snapshot() -> String {
        r#""}"#.to_owned()
    }

    /// No snapshot.
    pub fn no_snapshot() -> String {
        "null".to_owned()
    }

    fn comma(&mut self, out: &mut String) {
        if std::mem::replace(&mut self.has_element, true) {
            out.push(',');
        }
    }
}

/// The page's events up to seq `upto`, in the read page's own shape.
pub(super) fn events_page(render: &mut Render, page: &ReadPage, upto: u64) -> String {
    let size = page.events.iter().map(|e| e.data.len() + 128).sum();
    let mut out = String::with_capacity(size);
    for event in page.events.iter().take_while(|e| e.seq <= upto) {
        render.comma(&mut out);
        write_event(&mut out, event);
    }
    out
}

fn rendering(err: serde_json::Error) -> ApiError {
    ApiError::internal(format!("rendering the manifest: {err}"))
}
