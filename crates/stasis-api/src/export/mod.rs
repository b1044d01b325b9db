//! `GET /export`: the manifest written as it is read, so that memory stays
//! bounded whatever the agent holds.
//!
//! The record and checkpoint are read before the response starts (so a
//! failure there is still a JSON error); then the body follows part by
//! part: sessions and memory in pages from the agent's object, events in
//! the event log's pages (at most 8 MiB of data each) up to the newest seq
//! when the export began, and the snapshot's bytes base64-encoded as they
//! are written ([`snapshot_part`]).
//!
//! What an export shows of an agent that changes meanwhile: events up to
//! the seq that was newest when it began, as each page finds them (events
//! that retention or a session's deletion removed before the export
//! reached them are missing, the rest keep their seqs); sessions, memory
//! and the snapshot as they are when their part is written. Every such
//! manifest is one an import takes. An import or destroy of the agent while
//! it is exported is noticed by the events' part (the log's newest seq
//! falls below the export's) and cuts the export.
//!
//! A failure once the body has started can only cut it: the manifest then
//! lacks its closing brace (it is not valid JSON) and the response ends
//! without its final chunk; the runtime logs the cause with the request id.

mod render;
mod snapshot_part;
mod workspace_part;

use crate::{Objects, Snapshots, error::ApiError};
use bytes::Bytes;
use futures::{Stream, TryStreamExt as _, future::Either};
use render::{Render, events_page};
use stasis_domain::{
    DomainError,
    agent_state::ExportHead,
    chunk_store,
    event_log::{ReadPage, ReadQuery},
    ids::AgentKey,
    limits,
    operation::agent as op,
    snapshot::{chunk_saga, whole::WholeReader},
    workspace::ContentHash,
    workspace_store::{operations as workspace_op, ports::WorkspaceObject as _},
};

/// An export whose head was read; the runtime streams [`stream`] from it.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Export {
    /// The agent exported.
    pub key: AgentKey,
    /// What was read before the response started.
    pub head: ExportHead,
}

/// Reads what the export writes first; errors here are still answers.
pub async fn prepare(objects: &impl Objects, key: &AgentKey) -> Result<Export, ApiError> {
    let head = objects.agent(key, op::export_head()).await?;
    Ok(Export {
        key: key.clone(),
        head,
    })
}

/// Where the body is.
enum Part {
    Open,
    Sessions(Option<String>),
    Events(u64),
    Memory(Option<String>),
    Snapshot,
    SnapshotBytes(Box<WholeReader>),
    CloseSnapshot,
    Workspace,
    /// The next part of what the workspace names, and whether no element
    /// was written yet.
    WorkspaceNames(u64, bool),
    Done,
}

/// What the exporter hands out next: text, or the snapshot's bytes to
/// read (and encode) as they stream.
enum Step {
    Text(Bytes),
    Snapshot(Box<WholeReader>),
    /// Workspace chunks to read and encode, and whether they come first.
    Chunks(Vec<(ContentHash, u64)>, bool),
}

struct Exporter<O> {
    objects: O,
    export: Export,
    part: Part,
    render: Render,
}

/// The manifest's body, chunk by chunk; an `Err` ends (cuts) it.
pub fn stream<O>(objects: O, export: Export) -> impl Stream<Item = Result<Bytes, ApiError>>
where
    O: Objects + Snapshots + Clone + 'static,
{
    let key = export.key.clone();
    let exporter = Exporter {
        objects: objects.clone(),
        export,
        part: Part::Open,
        render: Render::default(),
    };
    futures::stream::try_unfold(exporter, |mut exporter| async move {
        let step = exporter.next_step().await?;
        Ok::<_, ApiError>(step.map(|step| (step, exporter)))
    })
    .map_ok(move |step| match step {
        Step::Text(text) => Either::Left(futures::stream::once(std::future::ready(Ok(text)))),
        Step::Snapshot(reader) => Either::Right(Either::Left(snapshot_part::encoded(
            crate::snapshot::read_rest(objects.clone(), key.clone(), None, *reader),
        ))),
        Step::Chunks(names, first) => Either::Right(Either::Right(workspace_part::elements(
            objects.clone(),
            key.clone(),
            names,
            first,
        ))),
    })
    .try_flatten()
}

impl<O: Objects + Snapshots> Exporter<O> {
    /// The next piece of the body; `None` once it is whole.
    async fn next_step(&mut self) -> Result<Option<Step>, ApiError> {
        let part = std::mem::replace(&mut self.part, Part::Done);
        let (chunk, next) = match part {
            Part::Open => (self.render.open(&self.export.head)?, Part::Sessions(None)),
            Part::Sessions(after) => self.sessions(after).await?,
            Part::Events(after) => self.events(after).await?,
            Part::Memory(after) => self.memory(after).await?,
            Part::Snapshot => self.snapshot().await?,
            Part::SnapshotBytes(reader) => {
                self.part = Part::CloseSnapshot;
                return Ok(Some(Step::Snapshot(reader)));
            }
            Part::CloseSnapshot => (Render::close_snapshot(), Part::Workspace),
            Part::Workspace => self.workspace().await?,
            Part::WorkspaceNames(part, first) => {
                let read = workspace_op::export_part(part);
                let object = self.objects.snapshot_object(&self.export.key);
                match object.run_workspace(read).await? {
                    Some(names) if !names.is_empty() => {
                        self.part = Part::WorkspaceNames(part + 1, false);
                        return Ok(Some(Step::Chunks(names, first)));
                    }
                    Some(_) => {
                        self.part = Part::WorkspaceNames(part + 1, first);
                        return Ok(Some(Step::Chunks(Vec::new(), first)));
                    }
                    None => (workspace_part::close(), Part::Done),
                }
            }
            Part::Done => return Ok(None),
        };
        self.part = next;
        Ok(Some(Step::Text(Bytes::from(chunk))))
    }

    async fn sessions(&mut self, after: Option<String>) -> Result<(String, Part), ApiError> {
        let read = op::export_sessions(after);
        let page = self.objects.agent(&self.export.key, read).await?;
        let mut chunk = self.render.items(&page.items)?;
        let next = match page.next {
            Some(next) => Part::Sessions(Some(next)),
            None => {
                chunk.push_str(&self.render.close_sessions());
                Part::Events(0)
            }
        };
        Ok((chunk, next))
    }

    /// One page of events after `after`, up to the export's last seq.
    async fn events(&mut self, after: u64) -> Result<(String, Part), ApiError> {
        let upto = self.export.head.last_seq;
        if after >= upto {
            return Ok((
                self.render.close_events(&self.export.head)?,
                Part::Memory(None),
            ));
        }
        let page = self.read_events(after).await?;
        if page.last_seq < upto {
            return Err(ApiError::internal(format!(
                "the agent's log was replaced while it was exported (its newest seq went from \
                 {upto} to {})",
                page.last_seq
            )));
        }
        let chunk = events_page(&mut self.render, &page, upto);
        let done = !page.has_more || page.next_after >= upto;
        let next = if done {
            Part::Events(upto)
        } else {
            Part::Events(page.next_after)
        };
        Ok((chunk, next))
    }

    /// A page of events; a cursor that retention passed meanwhile goes on
    /// from the oldest event kept.
    async fn read_events(&self, after: u64) -> Result<ReadPage, ApiError> {
        let mut query = ReadQuery::after(after);
        query.limit = limits::MAX_READ_LIMIT;
        for _ in 0..2 {
            let read = op::read_events(query.clone());
            match self.objects.agent(&self.export.key, read).await {
                Ok(page) => return Ok(page),
                Err(DomainError::CursorExpired { first_seq }) => {
                    query.after = first_seq.saturating_sub(1);
                }
                Err(err) => return Err(err.into()),
            }
        }
        Err(ApiError::internal(
            "retention kept passing the export's cursor",
        ))
    }

    async fn memory(&mut self, after: Option<String>) -> Result<(String, Part), ApiError> {
        let read = op::export_memory(after);
        let page = self.objects.agent(&self.export.key, read).await?;
        let mut chunk = self.render.items(&page.items)?;
        let next = match page.next {
            Some(next) => Part::Memory(Some(next)),
            None => {
                chunk.push_str(&self.render.close_memory());
                Part::Snapshot
            }
        };
        Ok((chunk, next))
    }

    async fn snapshot(&mut self) -> Result<(String, Part), ApiError> {
        let key = &self.export.key;
        let object = self.objects.snapshot_object(key);
        match chunk_saga::plan(&object, true).await? {
            Some(plan) => Ok((
                Render::open_snapshot(&plan.meta),
                Part::SnapshotBytes(Box::new(WholeReader::new(
                    plan,
                    chunk_store::key_prefix(key),
                ))),
            )),
            None => Ok((Render::no_snapshot(), Part::Workspace)),
        }
    }

    async fn workspace(&mut self) -> Result<(String, Part), ApiError> {
        let object = self.objects.snapshot_object(&self.export.key);
        let current = object.run_workspace(workspace_op::current()).await?;
        let text = workspace_part::open(current.as_ref())?;
        Ok(match current {
            Some(_) => (text, Part::WorkspaceNames(0, true)),
            None => (text + &workspace_part::close(), Part::Done),
        })
    }
}
