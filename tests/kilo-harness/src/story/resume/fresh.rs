//! Container C: the Mayor's kilo.db cannot be restored (its snapshot was deleted), so
//! `after_start` creates a session and sends it the dispatch's prompt: the prior conversation,
//! then the message sent while no container lived. Once: a second start sends nothing.

use super::super::script::{MAYOR, RIG};
use super::super::{Stage, container_b};
use super::{LOST_DB_NOTE, REPLY_LOST_DB, asking, dispatch_prompt, show_messages, wait_settled};
use crate::Kilo;
use anyhow::{Context, Result, bail};
use stasis_client::AgentRef;
use stasis_client::resume::{self, ResumeOptions, SessionOrigin};
use std::path::Path;

/// Answers kilo's new session, one line per message.
pub(super) fn act_c(stage: &Stage<'_>, root: &Path) -> Result<String> {
    stage.say("5. The Mayor's snapshot is deleted; a message is sent; container C boots");
    stage.delete_snapshot()?;
    stage.post_mayor_message(LOST_DB_NOTE)?;
    let booted = container_b::boot(stage, root, None)?;
    let dispatch = booted.mayor().ok().map(dispatch_prompt);
    let home = root.join(format!("agent-home-{MAYOR}"));
    if home.join(".local/share/kilo/kilo.db").exists() {
        bail!("boot hydrated a kilo.db although the snapshot was deleted");
    }
    let kilo = Kilo::start(&stage.kilo_options(&home))?;
    let before = stage.model.requests().len();
    let client = stage.client()?;
    let agent = AgentRef::new(&stage.town, RIG, MAYOR)?;
    let options = ResumeOptions {
        dispatch,
        ..ResumeOptions::default()
    };
    let outcome = resume::after_start(&client, &agent, kilo.url(), &options, &|l| {
        stage.say(&format!("   {l}"));
    })?;
    if outcome.origin != SessionOrigin::Created {
        bail!("after_start did not create a session: {outcome:#?}");
    }
    let messages = wait_settled(&kilo, &outcome.session_id, REPLY_LOST_DB)?;
    let (prompt, _) = outcome
        .first_prompt
        .as_ref()
        .context("the new session got no first prompt")?;
    let first = messages
        .iter()
        .find(|m| m.info.role == "user")
        .context("the new session has no user message")?;
    let text = first.text();
    let carried = text.starts_with("<prior-conversation>")
        && text.contains(&format!("</prior-conversation>\n\n{LOST_DB_NOTE}"));
    if first.info.id != prompt.message_id || !carried {
        bail!(
            "the new session's first message is not the dispatch's prompt with the prior \
             conversation and the message:\n{}",
            show_messages(&messages)
        );
    }
    let requests = stage.model.requests();
    let asked = asking(&requests[before..], "<prior-conversation>").count();
    let delivered = outcome.delivered.iter().filter(|d| d.sent).count();
    if asked != 1 || delivered != 0 {
        bail!("the model was asked {asked} time(s), {delivered} message(s) sent apart from it");
    }
    stage.say("   ✓ a new session got the prior conversation and the message, in one prompt");
    let again = resume::after_start(&client, &agent, kilo.url(), &options, &|_| {})?;
    let sent_again = again.first_prompt.as_ref().is_some_and(|(_, sent)| *sent)
        || again.delivered.iter().any(|d| d.sent)
        || again.cut_reply.is_some();
    if sent_again || again.session_id != outcome.session_id {
        bail!("a second start on C did something again: {again:#?}");
    }
    stage.say("   ✓ a second start on C sends nothing");
    kilo.stop();
    Ok(show_messages(&messages))
}

impl Stage<'_> {
    /// `DELETE {agent}/db-snapshot`.
    fn delete_snapshot(&self) -> Result<()> {
        let url = format!("{}{}/db-snapshot", self.api.base(), self.agent_path);
        let response = ureq::delete(&url)
            .header("Authorization", format!("Bearer {}", self.api.token()))
            .config()
            .http_status_as_error(false)
            .build()
            .call()
            .with_context(|| format!("DELETE {url}"))?;
        if response.status().as_u16() != 204 {
            bail!("DELETE {url}: {}", response.status());
        }
        Ok(())
    }
}
