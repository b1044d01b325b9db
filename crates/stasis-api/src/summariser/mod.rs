//! Omitted turns summarised by a configured model, behind a port each
//! runtime implements (the host with a blocking HTTP client on a worker
//! thread, the edge with the Worker's `fetch`).
//!
//! A rebuild that wants summaries asks the agent's object for them; the
//! object places a current cached summary itself, or hands back the cut
//! conversation and the [`SummaryWork`] (`stasis_domain::conversation::plan`).
//! [`settle`] then calls the summariser here, in the request that needs it:
//! one call per chunk of newly omitted turns (at most
//! [`MAX_SUMMARISER_CALLS`]), each extending the summary of the one before
//! and cached at once, all within the configured deadline. Whatever goes
//! wrong (no summariser, an error, the deadline) leaves the cut
//! conversation with a note saying why; nothing fails the request.

pub mod chat;
mod settings;

pub use chat::ChatAnswer;
pub use settings::{
    DEADLINE_MS_VAR, DEFAULT_SUMMARISER_DEADLINE_MS, KEY_VAR, MODEL_VAR, SummariserSettings,
    SummariserSettingsError, URL_VAR,
};

use crate::Objects;
use stasis_domain::{
    conversation::{
        self, PriorConversation, StoredSummary, SummaryNote, SummaryStatus, SummaryWork,
    },
    ids::AgentKey,
    operation::agent as op,
};
use std::{future::Future, time::Duration};

/// Summariser calls one rebuild makes at most (each up to
/// `conversation::PROMPT_CHUNK_MAX_CHARS` of turns): a Worker's request has
/// a budget of subrequests, and a dispatch should not wait on many. More
/// newly omitted turns than that are summarised over later rebuilds.
pub const MAX_SUMMARISER_CALLS: usize = 4;

/// Why a `POST` to the summariser brought no answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PostFailure {
    /// Nothing came back within the time given.
    Timeout,
    /// The connection failed (refused, reset, a TLS or DNS error).
    Transport(String),
}

/// The runtime's side of the summariser. The defaults: none configured.
pub trait Summariser {
    /// The configured summariser, if any.
    fn summariser(&self) -> Option<&SummariserSettings> {
        None
    }

    /// `POST`s `body` (JSON) to `settings.endpoint`, with `Authorization:
    /// Bearer <key>` when a key is set, and gives up after `timeout`.
    fn summariser_post(
        &self,
        settings: &SummariserSettings,
        body: Vec<u8>,
        timeout: Duration,
    ) -> impl Future<Output = Result<ChatAnswer, PostFailure>> {
        let _ = (settings, body, timeout);
        std::future::ready(Err(PostFailure::Transport(
            "this runtime has no summariser".into(),
        )))
    }
}

/// `conversation` as a rebuild that wanted summaries hands it out: with
/// `work`, the summariser is called and the summary placed (or the cut kept,
/// with the reason); without, it is returned as the object made it, noted
/// `not_configured` when no summariser is and turns were omitted.
pub async fn settle(
    objects: &impl Objects,
    key: &AgentKey,
    conversation: PriorConversation,
    work: Option<SummaryWork>,
) -> PriorConversation {
    let settings = objects.summariser();
    match (work, settings) {
        (Some(work), Some(settings)) => summarise(objects, key, settings, conversation, work).await,
        (_, None) => not_configured(conversation),
        (None, Some(_)) => conversation,
    }
}

/// The cut `conversation`, noted `not_configured` when turns were omitted.
pub fn not_configured(mut conversation: PriorConversation) -> PriorConversation {
    if conversation.omitted_turns > 0 && conversation.summary.is_none() {
        conversation.summary = Some(SummaryNote::status(SummaryStatus::NotConfigured));
    }
    conversation
}

async fn summarise(
    objects: &impl Objects,
    key: &AgentKey,
    settings: &SummariserSettings,
    cut: PriorConversation,
    work: SummaryWork,
) -> PriorConversation {
    let started = objects.now_ms();
    let mut summary = work.previous.as_ref().map(|p| p.text.clone());
    let chunks = conversation::chunks(&work.turns);
    for chunk in chunks.iter().take(MAX_SUMMARISER_CALLS) {
        let elapsed = u64::try_from(objects.now_ms().saturating_sub(started)).unwrap_or(0);
        let Some(left) = settings
            .deadline_ms
            .checked_sub(elapsed)
            .filter(|ms| *ms > 0)
        else {
            return cut_with(cut, SummaryStatus::Timeout, missed(settings));
        };
        let prompt = conversation::summary_prompt(summary.as_deref(), chunk, work.max_tokens);
        let body = chat::request_body(settings, &prompt, work.max_tokens);
        let posted = objects
            .summariser_post(settings, body, Duration::from_millis(left))
            .await;
        let text = match posted.map_err(|failure| match failure {
            PostFailure::Timeout => (SummaryStatus::Timeout, missed(settings)),
            PostFailure::Transport(detail) => (SummaryStatus::Failed, detail),
        }) {
            Ok(answer) => match chat::read_answer(&answer) {
                Ok(text) => conversation::fit_summary(&text, work.max_tokens),
                Err(detail) => return cut_with(cut, SummaryStatus::Failed, detail),
            },
            Err((status, detail)) => return cut_with(cut, status, detail),
        };
        let through_seq = chunk.last().map_or(work.through_seq, |t| t.first_seq);
        let stored = StoredSummary {
            text: text.clone(),
            through_seq,
        };
        // A cache: a write that fails costs a later call, never this answer.
        let _ = objects
            .agent(key, op::store_summary(work.key.clone(), stored))
            .await;
        summary = Some(text);
    }
    if chunks.len() > MAX_SUMMARISER_CALLS {
        let detail = format!(
            "{} turns were newly omitted, more than {MAX_SUMMARISER_CALLS} summariser calls \
             take at once; what was summarised is cached and the next rebuild goes on",
            work.turns.len()
        );
        return cut_with(cut, SummaryStatus::Partial, detail);
    }
    let Some(summary) = summary else {
        return cut_with(
            cut,
            SummaryStatus::Failed,
            "nothing to summarise".to_owned(),
        );
    };
    let note = SummaryNote {
        status: SummaryStatus::Made,
        through_seq: Some(work.through_seq),
        detail: None,
    };
    conversation::place_summary(cut, work.kept_turns, &summary, work.max_tokens, note)
}

fn missed(settings: &SummariserSettings) -> String {
    format!(
        "the summariser did not answer within the {} ms deadline",
        settings.deadline_ms
    )
}

fn cut_with(
    mut cut: PriorConversation,
    status: SummaryStatus,
    detail: String,
) -> PriorConversation {
    cut.summary = Some(SummaryNote::cut(status, detail));
    cut
}
