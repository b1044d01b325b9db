//! A dispatch: what a container needs to start an agent again where it
//! stopped.

#![allow(
    clippy::disallowed_macros,
    clippy::disallowed_methods,
    reason = "the JsonSchema derive builds its schemas with json! and to_value over our own types, never stored data"
)]

use crate::{Objects, body::raw, error::ApiError, summariser};
use serde::Serialize;
use serde_json::value::RawValue;
use stasis_domain::{
    conversation::{self, Budget, PriorConversation},
    ids::AgentKey,
    operation::agent as op,
    snapshot::SnapshotMeta,
    town::TownAgent,
};

/// The dispatch as the API sends it.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct Dispatch {
    agent_id: String,
    rig_id: String,
    role: String,
    /// The stored checkpoint; never null when one exists.
    checkpoint: Option<Box<RawValue>>,
    prior_conversation: PriorConversation,
    /// The prior conversation wrapped in `<prior-conversation>` (a summary of
    /// omitted turns first, when one was made), then the newest user text.
    prompt: String,
    /// What the container needs to hydrate kilo.db.
    snapshot: Option<SnapshotMeta>,
    event_watermark: u64,
}

/// Builds the dispatch of `agent` in `town`; `text` is a newest user text
/// not (yet) in the agent's log.
pub async fn build(
    objects: &impl Objects,
    town: &str,
    agent: &TownAgent,
    text: Option<&str>,
) -> Result<Dispatch, ApiError> {
    let key = AgentKey::new(town, &agent.rig_id, &agent.agent_id)?;
    let summarise = objects.summariser().is_some();
    let context = objects
        .agent(&key, op::dispatch_context(Budget::default(), summarise))
        .await?;
    let conversation =
        summariser::settle(objects, &key, context.conversation, context.summary_work).await;
    let prompt = conversation::dispatch_prompt(&conversation, text);
    Ok(Dispatch {
        agent_id: agent.agent_id.clone(),
        rig_id: agent.rig_id.clone(),
        role: agent.role.clone(),
        checkpoint: context.checkpoint.map(raw),
        prior_conversation: conversation,
        prompt,
        snapshot: context.snapshot,
        event_watermark: context.event_watermark,
    })
}
