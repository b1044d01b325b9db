//! The agent object's operations: each call and the reply it reads.

use crate::{
    agent::{AgentCall, AgentReply},
    agent_state::{
        AgentRecord, AgentSummary, Checkpoint, CheckpointStored, DestroyOutcome, ExportHead,
        ExportPage, ImportBatch, ImportCall, ImportChecked, ImportProgress, ImportReply,
        ImportSummary, ManifestMemory, ManifestSession, MemoryEntry, SessionDeleted, SessionRecord,
        StateCall, StateReply,
    },
    conversation::{Budget, PriorConversation, Recalled, StoredSummary, SummaryKey},
    event_log::{AppendBatch, AppendOutcome, ReadPage, ReadQuery},
    fork::{ForkCall as F, ForkReply as FR, Lineage},
    history::{HistoryCall as H, HistoryPage, HistoryReply as HR, Kind, Pin, PointBody, StateAt},
    recall::DispatchContext,
    restore::{RestoreCall, Restored},
    snapshot::{SnapshotCall, SnapshotReply, operations::SnapshotOperation},
    typed_operation::{Operation, operations},
    workspace_store::{WorkspaceCall, WorkspaceReply, operations::WorkspaceOperation},
};

/// An operation on an agent's object that reads as an `R`.
pub type AgentOperation<R> = Operation<AgentCall, AgentReply, R>;

/// A snapshot step, as the agent call that carries it.
pub fn snapshot<R: 'static>(step: SnapshotOperation<R>) -> AgentOperation<R> {
    step.within(snapshot_call, snapshot_reply)
}

/// A snapshot call inside an agent call.
pub fn snapshot_call(call: SnapshotCall) -> AgentCall {
    AgentCall::Snapshot(call)
}

/// The snapshot reply inside an agent reply, if that is what it is.
pub fn snapshot_reply(reply: AgentReply) -> Option<SnapshotReply> {
    match reply {
        AgentReply::Snapshot(reply) => Some(reply),
        _ => None,
    }
}

/// A workspace step, as the agent call that carries it.
pub fn workspace<R: 'static>(step: WorkspaceOperation<R>) -> AgentOperation<R> {
    step.within(workspace_call, workspace_reply)
}

fn workspace_call(call: WorkspaceCall) -> AgentCall {
    AgentCall::Workspace(call)
}

fn workspace_reply(reply: AgentReply) -> Option<WorkspaceReply> {
    match reply {
        AgentReply::Workspace(reply) => Some(reply),
        _ => None,
    }
}

use AgentCall as C;
use AgentReply as A;
use ImportCall as I;
use ImportReply as IR;
use StateCall as S;
use StateReply as SR;

operations! {
    AgentOperation<AgentCall, AgentReply>;
    /// The agent's versions at a point (a fork's source).
    fork_resolve(point: PointBody) -> StateAt
        = C::Fork(F::Resolve { point }), A::Fork(FR::Resolved(state)) => state;
    /// The agent's lineage, if it is a fork.
    fork_lineage() -> Option<Lineage>
        = C::Fork(F::Lineage), A::Fork(FR::Lineage(lineage)) => lineage;
    /// Commits a fork's import with its lineage and current versions.
    fork_commit(ticket: u64, lineage: Lineage, state: StateAt) -> ImportSummary
        = C::Fork(F::Commit { ticket, lineage, state }), A::Fork(FR::Committed(summary)) => summary;
    /// Forgets a fork's lineage; answers what it was.
    fork_clear_lineage() -> Option<Lineage>
        = C::Fork(F::ClearLineage), A::Fork(FR::Lineage(lineage)) => lineage;
    /// Appends a batch of events.
    append_events(batch: AppendBatch) -> AppendOutcome
        = C::AppendEvents(batch), A::Appended(outcome) => outcome;
    /// Reads a page of events.
    read_events(query: ReadQuery) -> ReadPage
        = C::ReadEvents(query), A::Events(page) => page;
    /// The conversation rebuilt from the log.
    conversation(budget: Budget, session_id: Option<String>) -> PriorConversation
        = C::Conversation { budget, session_id }, A::Conversation(prior) => prior;
    /// The conversation with its omitted turns summarised, or the
    /// summariser's work.
    summarised_conversation(budget: Budget, session_id: Option<String>) -> Recalled
        = C::SummarisedConversation { budget, session_id }, A::Recalled(recalled) => recalled;
    /// What a dispatch of this agent carries (`summarise`: a summariser is
    /// configured).
    dispatch_context(budget: Budget, summarise: bool) -> DispatchContext
        = C::DispatchContext { budget, summarise }, A::DispatchContext(context) => context;
    /// Caches a summary.
    store_summary(key: SummaryKey, summary: StoredSummary) -> ()
        = C::StoreSummary { key, summary }, A::SummaryStored => ();
    /// Registers the agent or updates it (`metadata: None` keeps it).
    put_agent(role: String, metadata: Option<String>) -> AgentRecord
        = C::State(S::PutAgent { role, metadata }), A::State(SR::Agent(record)) => record;
    /// The registered agent.
    get_agent() -> AgentSummary
        = C::State(S::GetAgent), A::State(SR::AgentSummary(summary)) => summary;
    /// Removes everything but the snapshot.
    destroy_agent() -> DestroyOutcome
        = C::State(S::DestroyAgent), A::State(SR::Destroyed(outcome)) => outcome;
    /// Creates or updates a session (`None` keeps a field).
    put_session(session_id: String, status: Option<String>, metadata: Option<String>) -> SessionRecord
        = C::State(S::PutSession { session_id, status, metadata }),
          A::State(SR::Session(session)) => session;
    /// A session.
    get_session(session_id: String) -> SessionRecord
        = C::State(S::GetSession { session_id }), A::State(SR::Session(session)) => session;
    /// Removes a session and its events.
    delete_session(session_id: String) -> SessionDeleted
        = C::State(S::DeleteSession { session_id }), A::State(SR::SessionDeleted(gone)) => gone;
    /// Every session with its metadata, oldest first.
    list_sessions() -> Vec<SessionRecord>
        = C::State(S::ListSessions), A::State(SR::Sessions(sessions)) => sessions;
    /// Stores the checkpoint.
    put_checkpoint(document: String) -> CheckpointStored
        = C::State(S::PutCheckpoint { document }), A::State(SR::CheckpointStored(stored)) => stored;
    /// The checkpoint.
    get_checkpoint() -> Checkpoint
        = C::State(S::GetCheckpoint), A::State(SR::Checkpoint(checkpoint)) => checkpoint;
    /// A version of the checkpoint.
    get_checkpoint_version(version: u64) -> Checkpoint
        = C::State(S::GetCheckpointVersion { version }), A::State(SR::Checkpoint(checkpoint)) => checkpoint;
    /// Removes the checkpoint.
    delete_checkpoint() -> ()
        = C::State(S::DeleteCheckpoint), A::State(SR::Deleted) => ();
    /// Writes a memory entry.
    put_memory(key: String, value: String) -> MemoryEntry
        = C::State(S::PutMemory { key, value }), A::State(SR::Memory(entry)) => entry;
    /// A memory entry.
    get_memory(key: String) -> MemoryEntry
        = C::State(S::GetMemory { key }), A::State(SR::Memory(entry)) => entry;
    /// A version of a memory entry.
    get_memory_version(key: String, version: u64) -> MemoryEntry
        = C::State(S::GetMemoryVersion { key, version }), A::State(SR::Memory(entry)) => entry;
    /// A page of a kind's versions.
    history(kind: Kind, key: Option<String>, after: u64, limit: Option<u32>) -> HistoryPage
        = C::History(H::List { kind, key, after, limit }), A::History(HR::Versions(page)) => page;
    /// Sets a pin; answers it and whether it is new.
    put_pin(name: String, seq: Option<u64>) -> (Pin, bool)
        = C::History(H::PutPin { name, seq }), A::History(HR::Pin(pin, created)) => (pin, created);
    /// One pin.
    get_pin(name: String) -> Pin
        = C::History(H::GetPin { name }), A::History(HR::Pin(pin, _)) => pin;
    /// Every pin.
    list_pins() -> Vec<Pin>
        = C::History(H::ListPins), A::History(HR::Pins(pins)) => pins;
    /// Removes a pin.
    delete_pin(name: String) -> ()
        = C::History(H::DeletePin { name }), A::History(HR::Deleted) => ();
    /// Restores the agent in place.
    restore(call: RestoreCall) -> Restored
        = C::Restore(call), A::Restored(restored) => restored;
    /// Removes a memory entry.
    delete_memory(key: String) -> ()
        = C::State(S::DeleteMemory { key }), A::State(SR::Deleted) => ();
    /// Memory entries by key.
    list_memory(prefix: Option<String>, query: Option<String>, limit: Option<u32>) -> Vec<MemoryEntry>
        = C::State(S::ListMemory { prefix, query, limit }), A::State(SR::MemoryList(entries)) => entries;
    /// What an export writes first.
    export_head() -> ExportHead
        = C::State(S::ExportHead), A::State(SR::ExportHead(head)) => head;
    /// A page of sessions by id, after `after`.
    export_sessions(after: Option<String>) -> ExportPage<ManifestSession>
        = C::State(S::ExportSessions { after }), A::State(SR::SessionPage(page)) => page;
    /// A page of memory by key, after `after`.
    export_memory(after: Option<String>) -> ExportPage<ManifestMemory>
        = C::State(S::ExportMemory { after }), A::State(SR::MemoryPage(page)) => page;
    /// Starts an import; its ticket.
    import_begin(import_id: Option<String>) -> u64
        = C::State(S::Import(I::Begin { import_id })), A::State(SR::Import(IR::Ticket(t))) => t;
    /// Continues a multi-part import with its next part; its ticket.
    import_resume(import_id: String, part: u64) -> u64
        = C::State(S::Import(I::Resume { import_id, part })),
          A::State(SR::Import(IR::Ticket(t))) => t;
    /// Checks and stages a batch.
    import_stage(ticket: u64, batch: ImportBatch) -> ImportProgress
        = C::State(S::Import(I::Stage { ticket, batch })),
          A::State(SR::Import(IR::Staged(progress))) => progress;
    /// A part of a multi-part import arrived whole.
    import_end_part(ticket: u64) -> ImportProgress
        = C::State(S::Import(I::EndPart { ticket })),
          A::State(SR::Import(IR::Staged(progress))) => progress;
    /// Applies the rules that need the whole manifest.
    import_check(ticket: u64) -> ImportChecked
        = C::State(S::Import(I::Check { ticket })),
          A::State(SR::Import(IR::Checked(checked))) => checked;
    /// Replaces the agent's state with what is staged.
    import_commit(ticket: u64) -> ImportSummary
        = C::State(S::Import(I::Commit { ticket })),
          A::State(SR::Import(IR::Committed(summary))) => summary;
    /// Drops what is staged.
    import_abort(ticket: u64) -> ()
        = C::State(S::Import(I::Abort { ticket })), A::State(SR::Import(IR::Aborted)) => ();
}
