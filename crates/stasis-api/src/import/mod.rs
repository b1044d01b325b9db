//! `PUT /import`: a manifest streamed in, parsed as it arrives
//! ([`reader`]), staged in the agent's object in batches, and swapped in by
//! one commit (`stasis_domain::agent_state::staging`). The body is never
//! held whole: one value (an event, a document) and one batch at a time,
//! plus the decoded snapshot, which the runtime's snapshot saga stores
//! before the commit switches to it.
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

mod batch;
mod input;
mod reader;
mod request;
mod snapshot_part;
#[cfg(test)]
mod tests;

use crate::{Objects, Snapshots, error::ApiError, query::Query, reply};
use batch::Batch;
use bytes::Bytes;
use futures::{Stream, StreamExt};
use http::{Response, StatusCode};
use input::invalid;
use reader::{Item, ManifestReader};
use request::ImportRequest;
use snapshot_part::SnapshotBody;
use stasis_domain::{
    agent_state::{ImportBatch, ImportProgress, ImportSummary, check_format},
    ids::AgentKey,
    operation::{agent as op, snapshot as snapshot_op, town as town_op},
    snapshot::{self, PutRequest, saga::SHA256_MISMATCH},
};

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
struct Importer<'a, O> {
    objects: &'a O,
    key: &'a AgentKey,
    ticket: u64,
    batch: Batch,
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
            self.drain(&mut reader).await?;
        }
        reader.end();
        self.drain(&mut reader).await?;
        reader.finish()?;
        self.flush().await?;
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
    async fn drain(&mut self, reader: &mut ManifestReader) -> Result<(), ApiError> {
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
            Item::Snapshot(body) => return self.stage_snapshot(body).await,
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

    /// Stores the snapshot's bytes through the runtime's snapshot saga
    /// (which checks them against the sha256), then stages what it stored.
    async fn stage_snapshot(&mut self, body: Option<SnapshotBody>) -> Result<(), ApiError> {
        self.flush().await?;
        let Some(body) = body else {
            return self.stage(ImportBatch::Snapshot(None)).await;
        };
        let request = PutRequest {
            expected_sha256: Some(body.sha256),
            precondition: None,
            event_watermark: Some(body.event_watermark),
            inline_limit: self.objects.snapshot_inline_limit(),
            key_prefix: snapshot::key_prefix(self.key),
            limit: self.objects.snapshot_limit(),
            pending_ttl_ms: self.objects.snapshot_pending_ttl_ms(),
            clock_slack_ms: self.objects.snapshot_clock_slack_ms(),
        };
        let staged = self
            .objects
            .snapshot_stage(self.key, request, Bytes::from(body.bytes))
            .await
            .map_err(|err| {
                if err.code() == SHA256_MISMATCH {
                    invalid(
                        "snapshot.sha256",
                        "does not match the bytes of snapshot.data_base64",
                    )
                } else {
                    ApiError::from(err)
                }
            })?;
        let version = staged.version;
        let staged = self.stage(ImportBatch::Snapshot(Some(staged))).await;
        if staged.is_err() {
            // Not recorded: give the reservation up (the abort's sweep
            // then takes its KV key).
            let abandon = op::snapshot(snapshot_op::abandon(version));
            let _ = self.objects.agent(self.key, abandon).await;
        }
        staged
    }

    /// The whole manifest passed: the town's directory follows it (where
    /// the one-mayor rule may refuse), then one call swaps it in.
    async fn commit(&self) -> Result<ImportSummary, ApiError> {
        let ticket = self.ticket;
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
        let _ = self
            .objects
            .agent(self.key, op::import_abort(self.ticket))
            .await;
        let _ = self.objects.snapshot_sweep(self.key).await;
    }
}
