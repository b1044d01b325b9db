//! The agent comes back by itself: `stasis_client::resume` against the real Kilo CLI.
//!
//! 1. Container A holds three turns and is SIGKILLed mid-reply (the real-agent story's act A).
//! 2. While no container lives, the user sends the Mayor a message (`POST /mayor/message`).
//! 3. Container B boots on an empty folder, starts `kilo serve` on the hydrated kilo.db, and
//!    calls `resume::after_start`: the fake model gets exactly one continuation, carrying the
//!    text streamed before the kill, the session ends with a finished reply, and the Mayor's
//!    message is delivered into the restored session once. A second `after_start` (a second
//!    start of the runtime) sends nothing.
//! 4. With `resume::follow_inbox` running, Mayor messages are timed from their `POST` to their
//!    delivery into the running kilo ([`latency`]).
//! 5. Container C boots after the Mayor's snapshot was deleted (no kilo.db to restore): a new
//!    session gets the dispatch's prompt, the prior conversation and the message sent in the
//!    gap, once ([`fresh`]).

mod crashed;
mod fresh;
mod latency;

pub use latency::{Latencies, percentile as latency_percentile};

use super::checks::{self, CutReply};
use super::script::{self, MAYOR, RIG};
use super::{LeftByA, Stage, StoryOptions, act_a, container_b, poll};
use crate::{FakeModel, Kilo, KiloMessage, ModelRequest, Reply, Script};
use anyhow::{Context, Result, bail};
use stasis_client::resume::{self, DispatchPrompt, ResumeOptions, ResumeOutcome};
use stasis_client::{AgentRef, Client, Config};
use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

/// What the continuation says; the fake model answers it with [`REPLY_CONTINUED`].
pub const CONTINUATION_MARK: &str = "cut off by a restart";
/// The rest of the cut reply.
pub const REPLY_CONTINUED: &str = "and the next milestone starts on Monday morning.";
/// The message the user sends while no container lives.
pub const GAP_NOTE: &str = "Mayor, note for later: the board meets at noon.";
/// Its reply.
pub const REPLY_GAP: &str = "Noted: the board meets at noon.";
/// The message sent before container C, whose kilo.db is gone.
pub const LOST_DB_NOTE: &str = "Mayor, after the reset: what was the last thing we did?";
/// Its reply.
pub const REPLY_LOST_DB: &str = "We wrote the release summary and noted the board meeting.";
/// How long a turn may take.
const TURN: Duration = Duration::from_secs(90);

/// What happened, for the caller to print.
#[derive(Debug, Clone)]
pub struct ResumeReport {
    /// The cut reply as stasis held it.
    pub cut: CutReply,
    /// `after_start`'s outcome on B.
    pub outcome_b: String,
    /// kilo's session on B after recovery, one line per message.
    pub recovered: String,
    /// From B's start (its boot) to the continuation reaching the fake model.
    pub to_continuation: Duration,
    /// `stasis-client boot` on B.
    pub boot_b: Duration,
    /// kilo's own start on B.
    pub kilo_start_b: Duration,
    /// `after_start`'s own time on B.
    pub after_start_b: Duration,
    /// Inbox latencies, posted to delivered into the running runtime.
    pub latencies: latency::Latencies,
    /// kilo's new session on C, one line per message.
    pub fresh: String,
}

/// Plays the story; `narrate` gets one line per thing done.
///
/// # Errors
///
/// When a step cannot be done or a check fails.
pub fn play(options: &StoryOptions, narrate: &dyn Fn(&str)) -> Result<ResumeReport> {
    let temp = match &options.work {
        Some(dir) => tempfile::Builder::new().prefix("resume-").tempdir_in(dir)?,
        None => tempfile::Builder::new()
            .prefix("stasis-resume-")
            .tempdir()?,
    };
    let model = FakeModel::start(script())?;
    let stage = Stage::new(options, &model, narrate)?;
    let root = temp.path().join("tmp");
    std::fs::create_dir_all(&root)?;
    let a = act_a(&stage, &root, &temp.path().join("sidecar-a.log"))?;
    stage.say("2. No container lives: the user sends the Mayor a message");
    let note = stage.post_mayor_message(GAP_NOTE)?;
    stage.say(&format!("   POST /mayor/message answered {note}"));
    empty(&root)?;
    let mut report = act_b(&stage, &root, &a)?;
    empty(&root)?;
    report.fresh = fresh::act_c(&stage, &root)?;
    Ok(report)
}

fn empty(root: &Path) -> Result<()> {
    std::fs::remove_dir_all(root).context("emptying the container's root")?;
    std::fs::create_dir_all(root)?;
    Ok(())
}

/// The fake model's script: the story's, after the rules of this one (first match wins, and
/// a new session's prompt quotes the whole earlier conversation).
fn script() -> Script {
    let script = Script::new()
        .when(LOST_DB_NOTE, Reply::text(REPLY_LOST_DB))
        .when(CONTINUATION_MARK, Reply::text(REPLY_CONTINUED))
        .when(GAP_NOTE, Reply::text(REPLY_GAP))
        .when(script::PROMPT_PLAN, Reply::text(script::REPLY_PLAN))
        .when(
            script::PROMPT_TOOL,
            Reply::bash(script::TOOL_COMMAND, script::TOOL_TITLE),
        )
        .when(script::PROMPT_LEFT, Reply::text(script::REPLY_LEFT))
        .when(
            script::PROMPT_LONG,
            Reply::paced_text(&script::long_reply(), script::LONG_REPLY_PACE),
        );
    script
        .after_tool(Reply::text(script::REPLY_AFTER_TOOL))
        .title(script::TITLE)
}

fn act_b(stage: &Stage<'_>, root: &Path, a: &LeftByA) -> Result<ResumeReport> {
    stage.say("3. Container B boots on an empty folder, starts kilo, and resumes");
    let started = Instant::now();
    let booted = container_b::boot(stage, root, None)?;
    let dispatch = dispatch_prompt(booted.mayor()?);
    let home = root.join(format!("agent-home-{MAYOR}"));
    let restored = container_b::start_kilo(stage, &home, &a.session)?;
    let unsent = crashed::decide_unsent(stage, &a.session)?;
    stage.say(&format!(
        "   a container that died before sending it had recorded the gap's message (seq {}) as \
         {}",
        unsent.seq, unsent.message_id
    ));
    let before = stage.model.requests().len();
    let client = stage.client()?;
    let agent = AgentRef::new(&stage.town, RIG, MAYOR)?;
    let options = ResumeOptions {
        dispatch: Some(dispatch),
        ..ResumeOptions::default()
    };
    let resumed = Instant::now();
    // The model's requests are watched beside after_start, which waits for the
    // continuation's turn to end before it delivers the inbox.
    let model = stage.model;
    let (outcome, to_continuation) = std::thread::scope(|scope| {
        let watcher = scope.spawn(move || {
            poll("the continuation to reach the model", TURN, || {
                let requests = model.requests();
                let found = continuations(&requests[before..]).next().is_some();
                Ok(found.then(|| started.elapsed()))
            })
        });
        let outcome = resume::after_start(&client, &agent, restored.kilo.url(), &options, &|l| {
            stage.say(&format!("   {l}"));
        });
        let seen = watcher
            .join()
            .unwrap_or_else(|_| Err(anyhow::anyhow!("the watcher panicked")));
        (outcome, seen)
    });
    let after_start_b = resumed.elapsed();
    let (outcome, to_continuation) = (outcome?, to_continuation?);
    stage.say(&format!(
        "   the continuation reached the model {to_continuation:.0?} after B's boot began (kilo's \
         own start {:.0?}, after_start {after_start_b:.0?})",
        restored.started_in
    ));
    let messages = wait_settled(&restored.kilo, &a.session, REPLY_GAP)?;
    check_recovered(stage, &outcome, &messages, &a.cut, before)?;
    check_unsent_sent_once(&outcome, &messages, &unsent)?;
    stage.say("   ✓ one continuation carried the streamed text; its reply finished the cut turn");
    stage.say("   ✓ the message sent in the gap went into the restored session once, answered");
    let again = resume::after_start(&client, &agent, restored.kilo.url(), &options, &|_| {})?;
    check_nothing_again(stage, &restored.kilo, &a.session, &again, &messages)?;
    stage.say("   ✓ a second start sends nothing again");
    let latencies = latency::measure(stage, &client, &agent, &restored.kilo, &outcome)?;
    restored.kilo.stop();
    Ok(ResumeReport {
        cut: a.cut.clone(),
        outcome_b: format!("{outcome:#?}"),
        recovered: show_messages(&messages),
        to_continuation,
        boot_b: booted.took,
        kilo_start_b: restored.started_in,
        after_start_b,
        latencies,
        fresh: String::new(),
    })
}

/// What `after_start` reads of a dispatch `boot` handed over.
fn dispatch_prompt(dispatch: &super::Dispatch) -> DispatchPrompt {
    DispatchPrompt {
        prompt: dispatch.prompt.clone(),
        event_watermark: dispatch.event_watermark,
    }
}

/// The chat requests whose last user message is a continuation.
fn continuations(requests: &[ModelRequest]) -> impl Iterator<Item = &ModelRequest> {
    requests.iter().filter(|r| {
        !r.is_title_request()
            && r.last_user_text()
                .is_some_and(|t| t.contains(CONTINUATION_MARK))
    })
}

/// The chat requests whose last user message starts with `text`.
fn asking<'r>(
    requests: &'r [ModelRequest],
    text: &'r str,
) -> impl Iterator<Item = &'r ModelRequest> {
    requests.iter().filter(move |r| {
        !r.is_title_request() && r.last_user_text().is_some_and(|t| t.starts_with(text))
    })
}

/// Waits until the session's last message is a finished assistant reply saying `last`.
fn wait_settled(kilo: &Kilo, session: &str, last: &str) -> Result<Vec<KiloMessage>> {
    let api = kilo.api();
    poll(
        &format!("the session to end with the reply {last:?}"),
        TURN,
        || {
            let messages = api.messages(session)?;
            let done = messages.last().is_some_and(|m| {
                checks::is_finished(m) && m.info.role == "assistant" && m.text() == last
            });
            Ok(done.then_some(messages))
        },
    )
}

fn check_recovered(
    stage: &Stage<'_>,
    outcome: &ResumeOutcome,
    messages: &[KiloMessage],
    cut: &CutReply,
    before: usize,
) -> Result<()> {
    let requests = stage.model.requests();
    let sent: Vec<&ModelRequest> = continuations(&requests[before..]).collect();
    let [continuation] = sent.as_slice() else {
        bail!("the model got {} continuations, not one", sent.len());
    };
    let text = continuation.last_user_text().unwrap_or_default();
    if !text.contains(&cut.text) {
        bail!(
            "the continuation lacks the streamed text {:?}: {text:?}",
            cut.text
        );
    }
    let decision = outcome
        .cut_reply
        .as_ref()
        .context("after_start saw no cut reply")?;
    let id = decision.decision.message_id.as_deref().unwrap_or_default();
    let position = messages.iter().position(|m| m.info.id == id);
    let Some(position) = position else {
        bail!("kilo holds no message {id} (the continuation)");
    };
    let reply = messages[position + 1..]
        .iter()
        .find(|m| m.info.role == "assistant" && checks::is_finished(m) && !m.text().is_empty());
    if reply.map(KiloMessage::text).as_deref() != Some(REPLY_CONTINUED) {
        bail!(
            "the continuation got no finished reply:\n{}",
            show_messages(messages)
        );
    }
    let gap: Vec<&KiloMessage> = messages
        .iter()
        .filter(|m| m.info.role == "user" && m.text().starts_with(GAP_NOTE))
        .collect();
    let asked = asking(&requests[before..], GAP_NOTE).count();
    if gap.len() != 1 || asked != 1 {
        bail!(
            "the gap's message should be in the session once and asked once; it is there {} \
             time(s) and was asked {asked} time(s):\n{}",
            gap.len(),
            show_messages(messages)
        );
    }
    Ok(())
}

/// The delivery a dead container had decided went in once, under a fresh id (the old one no
/// longer sorted last), and was answered.
fn check_unsent_sent_once(
    outcome: &ResumeOutcome,
    messages: &[KiloMessage],
    unsent: &crashed::Unsent,
) -> Result<()> {
    let gap = messages
        .iter()
        .position(|m| m.info.role == "user" && m.text().starts_with(GAP_NOTE));
    let delivered = outcome.delivered.iter().find(|d| d.seq == unsent.seq);
    let fits = match (gap, delivered) {
        (Some(at), Some(d)) => {
            let message = &messages[at];
            let answered = messages[at + 1..]
                .iter()
                .any(|m| m.info.role == "assistant" && m.text() == REPLY_GAP);
            d.sent
                && message.info.id == d.message_id
                && d.message_id != unsent.message_id
                && answered
        }
        _ => false,
    };
    if !fits {
        bail!(
            "the delivery recorded as {} was not sent once under a fresh id and answered: \
             {delivered:?}\n{}",
            unsent.message_id,
            show_messages(messages)
        );
    }
    Ok(())
}

fn check_nothing_again(
    stage: &Stage<'_>,
    kilo: &Kilo,
    session: &str,
    again: &ResumeOutcome,
    messages: &[KiloMessage],
) -> Result<()> {
    let requests = stage.model.requests().len();
    std::thread::sleep(Duration::from_secs(1));
    let now = kilo.api().messages(session)?;
    let sent_again = again.delivered.iter().any(|d| d.sent)
        || again.cut_reply.as_ref().is_some_and(|c| c.sent)
        || again.first_prompt.as_ref().is_some_and(|(_, sent)| *sent);
    if sent_again || now.len() != messages.len() || stage.model.requests().len() != requests {
        bail!(
            "a second start sent something again: {again:#?}\n{}",
            show_messages(&now)
        );
    }
    Ok(())
}

/// One line per message: role, id, finished or not, text.
pub fn show_messages(messages: &[KiloMessage]) -> String {
    let mut out = String::new();
    for m in messages {
        let state = if checks::is_finished(m) {
            ""
        } else {
            " (unfinished)"
        };
        let turn = checks::turn_of(m).map(|t| t.content).unwrap_or_default();
        let short: String = turn.chars().take(160).collect();
        let _ = writeln!(
            out,
            "    {:<9} {}{state}: {short:?}",
            m.info.role, m.info.id
        );
    }
    out
}

impl Stage<'_> {
    /// A stasis client on the story's town token.
    fn client(&self) -> Result<Client> {
        let config = Config::new(self.api.base(), Some(self.api.token().to_owned()))?;
        Ok(Client::new(config))
    }

    /// `POST /api/towns/{town}/mayor/message {text}`: the answer's body.
    fn post_mayor_message(&self, text: &str) -> Result<String> {
        self.api.post_mayor_message(&self.town, text)
    }

    /// `POST path` with a JSON body: the answer's body.
    fn post_json(&self, path: &str, body: &serde_json::Value) -> Result<String> {
        self.api.post_json(path, body)
    }
}
