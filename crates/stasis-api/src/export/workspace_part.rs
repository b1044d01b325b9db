//! The workspace's part of an export: its head, then every page and chunk
//! of its current version as `{"sha256","data_base64"}` elements, read a
//! range at a time (where the runtime has a per-invocation budget, each
//! range in an invocation of its own), each verified against its name and
//! encoded as it goes, so that no more than one chunk is held.

use crate::{Snapshots, error::ApiError};
use base64::{Engine as _, engine::general_purpose::STANDARD};
use bytes::Bytes;
use futures::{Stream, StreamExt as _};
use serde::Serialize;
use stasis_domain::{
    ids::AgentKey,
    workspace::{ContentHash, pages::ManifestHead},
    workspace_store::WorkspaceVersion,
};

/// The head as `workspace` carries it: `PUT /workspace/manifest`'s body.
#[derive(Serialize)]
struct HeadOut<'a> {
    #[serde(flatten)]
    head: &'a ManifestHead,
    event_watermark: u64,
}

/// `,"workspace":<head or null>,"workspace_chunks":[`.
pub(super) fn open(current: Option<&WorkspaceVersion>) -> Result<String, ApiError> {
    let head = match current {
        Some(version) => serde_json::to_string(&HeadOut {
            head: &version.head,
            event_watermark: version.event_watermark,
        })
        .map_err(|err| ApiError::internal(format!("rendering the workspace head: {err}")))?,
        None => "null".to_owned(),
    };
    Ok(format!(r#","workspace":{head},"workspace_chunks":["#))
}

/// The end of `workspace_chunks` and of the manifest.
pub(super) fn close() -> String {
    "]}".to_owned()
}

/// The elements of `names` (each with its size), a comma before each but
/// the first when `first`.
pub(super) fn elements<O>(
    objects: O,
    key: AgentKey,
    names: Vec<(ContentHash, u64)>,
    first: bool,
) -> impl Stream<Item = Result<Bytes, ApiError>>
where
    O: Snapshots + 'static,
{
    let per_range = objects.snapshot_range_chunks().unwrap_or(usize::MAX).max(1);
    let ranges: Vec<Vec<String>> = names
        .chunks(per_range)
        .map(|range| range.iter().map(|(name, _)| name.to_hex()).collect())
        .collect();
    let pieces = futures::stream::iter(ranges)
        .map(move |range| objects.snapshot_range(&key, range))
        .flatten();
    let state = (Box::pin(pieces), names.into_iter(), Vec::<u8>::new(), first);
    futures::stream::try_unfold(
        state,
        |(mut pieces, mut names, mut held, first)| async move {
            let Some((name, size)) = names.next() else {
                return Ok(None);
            };
            let size = usize::try_from(size).unwrap_or(usize::MAX);
            while held.len() < size {
                match pieces.next().await {
                    Some(piece) => held.extend_from_slice(&piece.map_err(ApiError::from)?),
                    None => {
                        return Err(ApiError::internal(format!(
                            "the workspace's chunk {name} ended early"
                        )));
                    }
                }
            }
            let rest = held.split_off(size);
            if ContentHash::of(&held) != name {
                return Err(ApiError::internal(format!(
                    "the workspace's chunk {name} read back as other bytes"
                )));
            }
            let comma = if first { "" } else { "," };
            let text = format!(
                r#"{comma}{{"sha256":"{name}","data_base64":"{}"}}"#,
                STANDARD.encode(&held)
            );
            Ok(Some((Bytes::from(text), (pieces, names, rest, false))))
        },
    )
}
