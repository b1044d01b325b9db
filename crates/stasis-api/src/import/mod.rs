//! `PUT /import`: a manifest streamed in, parsed as it arrives
//! ([`reader`]), staged in the agent's object in batches, and swapped in by
//! one commit (`stasis_domain::agent_state::staging`). The body is never
//! held whole: one value (an event, a document) and one batch at a time,
//! and the snapshot's bytes a chunk at a time as they decode: each chunk
//! is hashed and written to KV as soon as it is full, and the import's
//! commit switches to their manifest ([`snapshot`]).
//!
//! The same path serves a whole manifest in one request and a manifest in
//! parts (`?import_id=&part=`, the last with `&commit=true`), for runtimes
//! whose platform caps a request body below what an agent can hold. Any
//! refusal (or a body that breaks off) aborts the whole import: what was
//! staged goes, and the agent keeps the state it had.

#![allow(
    clippy::disallowed_macros,
    clippy::disallowed_methods,
    reason = "the JsonSchema derive builds its schemas with json! and to_value over our own types, never stored data"
)]

pub(crate) mod batch;
mod input;
mod reader;
mod request;
mod snapshot;
mod snapshot_part;
#[cfg(test)]
mod tests;
mod workspace;

use crate::{Objects, Snapshots, error::ApiError, query::Query, reply};
pub(crate) use batch::Batch;
use bytes::Bytes;
use futures::{Stream, StreamExt};
use http::{Response, StatusCode};
use reader::{Item, ManifestReader};
use request::ImportRequest;
use snapshot_part::SnapshotHead;
use stasis_domain::{
    agent_state::{ImportBatch, ImportProgress, ImportSummary, check_format},
    ids::AgentKey,
    operation::{agent as op, town as town_op},
};
pub(crate) use workspace::stage_version as stage_workspace_version;

/// Runs `PUT /import` over `body`, chunk by chunk.
pub async fn run<O, S>(
    objects: &O,
    key: &AgentKey,
    query: &Query,
    body: S,
) -> Result<Response<Bytes>, ApiError>
where
    O: Objects + Snapshots,
    S: Stream<Item = Result<Bytes, ApiError>>,
{
    let request = ImportRequest::parse(query)?;
    let ticket = objects.agent(key, request.opening()).await?;
    let mut import = Importer {
        objects,
        key,
        ticket,
        batch: Batch::default(),
        snapshot: None,
        chunks: workspace::ChunkBatch::default(),
    };
    match import.run(&request, body).await {
        Ok(response) => Ok(response),
        Err(err) => {
            import.abort().await;
            Err(err)
        }
    }
}

/// One request's share of an import.
struct Importer<'a, O: Snapshots> {
    objects: &'a O,
    key: &'a AgentKey,
    ticket: u64,
    batch: Batch,
    /// The snapshot whose bytes are streaming in.
    snapshot: Option<snapshot::Incoming<O::Blobs>>,
    /// Workspace chunks waiting to be stored.
    chunks: workspace::ChunkBatch,
}

/// The answer to a part that does not commit.
#[derive(serde::Serialize, schemars::JsonSchema)]
pub(crate) struct PartAccepted<'a> {
    import_id: &'a str,
    part: u64,
    staged: ImportProgress,
}

impl<O: Objects + Snapshots> Importer<'_, O> {
    async fn run<S>(
        &mut self,
        request: &ImportRequest,
        body: S,
    ) -> Result<Response<Bytes>, ApiError>
    where
        S: Stream<Item = Result<Bytes, ApiError>>,
    {
        let mut reader = ManifestReader::new();
        let mut body = std::pin::pin!(body);
        while let Some(chunk) = body.next().await {
            reader.push(&chunk?);
            self.take_ready(&mut reader).await?;
        }
        reader.end();
        self.take_ready(&mut reader).await?;
        reader.finish()?;
        self.flush().await?;
        self.chunks.store(self.objects, self.key).await?;
        match request.part_only() {
            Some((import_id, part)) => {
                let end = op::import_end_part(self.ticket);
                let staged = self.objects.agent(self.key, end).await?;
                let accepted = PartAccepted {
                    import_id,
                    part,
                    staged,
                };
                Ok(reply::json(StatusCode::ACCEPTED, &accepted))
            }
            None => {
                let summary = self.commit().await?;
                Ok(reply::json(StatusCode::OK, &summary))
            }
        }
    }

    /// Hands every piece the reader has to the stages.
    async fn take_ready(&mut self, reader: &mut ManifestReader) -> Result<(), ApiError> {
        while let Some(item) = reader.next()? {
            self.take(item).await?;
        }
        Ok(())
    }

    async fn take(&mut self, item: Item) -> Result<(), ApiError> {
        let full = match item {
            Item::Format(format) => {
                check_format(&format)?;
                return Ok(());
            }
            Item::Agent(agent) => return self.stage_alone(ImportBatch::Agent(agent)).await,
            Item::Checkpoint(document) => {
                return self.stage_alone(ImportBatch::Checkpoint(document)).await;
            }
            Item::SnapshotBegin(size) => {
                self.flush().await?;
                self.snapshot = Some(snapshot::Incoming::begin(self.objects, self.key, size)?);
                return Ok(());
            }
            Item::SnapshotData(bytes) => return self.snapshot_data(&bytes).await,
            Item::Snapshot(head) => return self.stage_snapshot(head).await,
            Item::Workspace(head) => {
                return workspace::stage_head(self.objects, self.key, *head).await;
            }
            Item::WorkspaceChunk(chunk, index) => {
                return self.chunks.add(self.objects, self.key, chunk, index).await;
            }
            Item::Event(event, len) => self.batch.add_event(event, len),
            Item::Session(session, len) => self.batch.add_session(session, len),
            Item::Memory(entry, len) => self.batch.add_memory(entry, len),
        };
        if let Some(batch) = full {
            self.stage(batch).await?;
        }
        Ok(())
    }

    /// Stages what the batch holds.
    async fn flush(&mut self) -> Result<(), ApiError> {
        match self.batch.take() {
            Some(batch) => self.stage(batch).await,
            None => Ok(()),
        }
    }

    /// Stages a piece that is not batched, after what is batched before it.
    async fn stage_alone(&mut self, batch: ImportBatch) -> Result<(), ApiError> {
        self.flush().await?;
        self.stage(batch).await
    }

    async fn stage(&self, batch: ImportBatch) -> Result<(), ApiError> {
        let call = op::import_stage(self.ticket, batch);
        self.objects.agent(self.key, call).await?;
        Ok(())
    }

    /// Writes the snapshot's next bytes.
    async fn snapshot_data(&mut self, bytes: &[u8]) -> Result<(), ApiError> {
        let Some(incoming) = self.snapshot.as_mut() else {
            return Err(ApiError::internal("snapshot bytes came before their start"));
        };
        incoming.write(self.objects, self.key, bytes).await
    }

    /// Stages the snapshot whose bytes all came (or its absence).
    async fn stage_snapshot(&mut self, head: Option<SnapshotHead>) -> Result<(), ApiError> {
        self.flush().await?;
        let Some(head) = head else {
            return self.stage(ImportBatch::Snapshot(None)).await;
        };
        let Some(mut incoming) = self.snapshot.take() else {
            return Err(ApiError::internal("a snapshot ended that never began"));
        };
        let staged = match incoming.finish(self.objects, self.key, &head).await {
            Ok(staged) => staged,
            Err(err) => {
                incoming.abandon(self.objects, self.key).await;
                return Err(err);
            }
        };
        let version = staged.version;
        let staged = self.stage(ImportBatch::Snapshot(Some(staged))).await;
        if staged.is_err() {
            // Not recorded: give the reservation (and the chunks' manifest)
            // up; the abort's sweep then collects its chunks.
            snapshot::abandon(self.objects, self.key, version).await;
        }
        staged
    }

    /// The whole manifest passed: the town's directory follows it (where
    /// the one-mayor rule may refuse), then one call swaps it in.
    async fn commit(&self) -> Result<ImportSummary, ApiError> {
        let ticket = self.ticket;
        workspace::stage_version(self.objects, self.key).await?;
        let checked = self
            .objects
            .agent(self.key, op::import_check(ticket))
            .await?;
        let (rig_id, agent_id) = (self.key.rig.clone(), self.key.agent.clone());
        let town = &self.key.town;
        match checked.role {
            Some(role) => {
                let register = town_op::register_agent(rig_id, agent_id, role);
                self.objects.town(town, register).await?;
            }
            None => {
                let forget = town_op::forget_agent(rig_id, agent_id);
                self.objects.town(town, forget).await?;
            }
        }
        let summary = self
            .objects
            .agent(self.key, op::import_commit(ticket))
            .await?;
        // The superseded snapshot's KV key; a failure leaves it to a later
        // sweep.
        let _ = self.objects.snapshot_sweep(self.key).await;
        Ok(summary)
    }

    /// Drops everything this import staged; best effort, since the next
    /// import clears it anyway.
    async fn abort(&self) {
        if let Some(incoming) = &self.snapshot {
            incoming.abandon(self.objects, self.key).await;
        }
        let _ = self
            .objects
            .agent(self.key, op::import_abort(self.ticket))
            .await;
        let _ = self.objects.snapshot_sweep(self.key).await;
    }
}
