//! Running one scenario against the real kilo, and writing what it showed.

use crate::scenarios::{Scenario, Step};
use anyhow::{Context, Result, bail};
use stasis_kilo_harness::{EventStream, FakeModel, Kilo, KiloApi, KiloMessage, KiloOptions};
use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

/// How long a turn may take (a first one starts kilo's machinery).
const TURN: Duration = Duration::from_secs(60);
/// How long kilo's event stream may stay open once kilo stops.
const STREAM_END: Duration = Duration::from_secs(15);

/// What a scenario produced.
pub struct Recorded {
    events_sse: String,
    messages_json: Option<String>,
    notes: Vec<String>,
    pub event_count: usize,
    pub message_count: usize,
}

/// Plays `scenario` with kilo's home under `work` (emptied first).
pub fn record(scenario: &Scenario, work: &Path) -> Result<Recorded> {
    if work.exists() {
        std::fs::remove_dir_all(work).with_context(|| format!("emptying {}", work.display()))?;
    }
    let home = work.join("agent-home");
    let model = FakeModel::start(scenario.script.clone())?;
    let kilo = Kilo::start(&KiloOptions::new(&home, &model.base_url()))?;
    let events = kilo.events()?;
    let api = kilo.api();
    let session = api.create_session()?;
    let mut notes = Vec::new();
    let mut kilo = Some(kilo);
    for step in &scenario.steps {
        match step {
            Step::Prompt(prompt) => turn(&api, &events, &session, prompt)?,
            Step::PromptThenKill {
                prompt,
                after_deltas,
            } => {
                kill_mid_reply(&api, &events, &session, prompt, *after_deltas, &mut kilo)?;
                notes.push(format!(
                    "kilo was SIGKILLed (its whole process group) after {after_deltas} \
                     `message.part.delta` events of the reply to {prompt:?}, while the fake \
                     model was still streaming."
                ));
            }
            Step::RevertThenPrompt { nth, then } => {
                let reverted = revert(&api, &session, *nth)?;
                notes.push(format!("Reverted to before user message {reverted}."));
                turn(&api, &events, &session, then)?;
            }
        }
    }
    let messages_json = match kilo.take() {
        Some(kilo) => {
            let messages = api.messages_raw(&session)?;
            kilo.stop();
            Some(messages)
        }
        None => restored_messages(&home, &model, &session, &mut notes)?,
    };
    events.wait_until_ended(STREAM_END)?;
    let requests = model.requests();
    notes.push(format!(
        "The fake model got {} requests ({} of them for a title).",
        requests.len(),
        requests.iter().filter(|r| r.is_title_request()).count()
    ));
    let message_count = match &messages_json {
        Some(json) => serde_json::from_str::<Vec<serde_json::Value>>(json)?.len(),
        None => 0,
    };
    Ok(Recorded {
        events_sse: events.raw(),
        messages_json,
        notes,
        event_count: events.len(),
        message_count,
    })
}

fn turn(api: &KiloApi, events: &EventStream, session: &str, prompt: &str) -> Result<()> {
    let mark = events.len();
    api.prompt_async(session, prompt)?;
    events.wait_for_idle(session, mark, TURN)?;
    Ok(())
}

fn kill_mid_reply(
    api: &KiloApi,
    events: &EventStream,
    session: &str,
    prompt: &str,
    after_deltas: usize,
    kilo: &mut Option<Kilo>,
) -> Result<()> {
    let mut from = events.len();
    api.prompt_async(session, prompt)?;
    for _ in 0..after_deltas {
        let (index, _) = events.wait_for(from, |e| e.kind() == "message.part.delta", TURN)?;
        from = index + 1;
    }
    match kilo.take() {
        Some(kilo) => kilo.kill(),
        None => bail!("kilo was already gone"),
    }
    Ok(())
}

/// Reverts `session` to before its `nth` user message; returns its id.
fn revert(api: &KiloApi, session: &str, nth: usize) -> Result<String> {
    let messages = api.messages(session)?;
    let Some(user) = messages.iter().filter(|m| m.info.role == "user").nth(nth) else {
        bail!("the session has no user message {nth}");
    };
    api.revert(session, &user.info.id)?;
    Ok(user.info.id.clone())
}

/// kilo's messages after a kill, from a second kilo started on a copy of
/// the first one's database (`kilo.db` and its `-wal`) in a fresh home at
/// the same path, as stasis would hydrate it.
fn restored_messages(
    home: &Path,
    model: &FakeModel,
    session: &str,
    notes: &mut Vec<String>,
) -> Result<Option<String>> {
    let killed = home.with_file_name("agent-home-killed");
    std::fs::rename(home, &killed)?;
    let data = Path::new(".local/share/kilo");
    std::fs::create_dir_all(home.join(data))?;
    for file in ["kilo.db", "kilo.db-wal"] {
        let from = killed.join(data).join(file);
        if from.exists() {
            std::fs::copy(&from, home.join(data).join(file))
                .with_context(|| format!("copying {}", from.display()))?;
        }
    }
    let kilo = Kilo::start(&KiloOptions::new(home, &model.base_url()))?;
    let messages = kilo.api().messages_raw(session);
    kilo.stop();
    match messages {
        Ok(messages) => {
            notes.push(
                "messages.json is kilo's own GET /session/{id}/message from a second kilo \
                 started on a copy of the killed one's kilo.db and kilo.db-wal (in a fresh home \
                 at the same path)."
                    .to_owned(),
            );
            notes.extend(describe_last(&messages));
            Ok(Some(messages))
        }
        Err(error) => {
            notes.push(format!(
                "A second kilo on a copy of the killed one's database could not show the \
                 messages: {error:#}"
            ));
            Ok(None)
        }
    }
}

/// What the restored kilo shows of the cut reply.
fn describe_last(messages: &str) -> Option<String> {
    let messages: Vec<KiloMessage> = serde_json::from_str(messages).ok()?;
    let last = messages.last()?;
    let completed = last
        .info
        .time
        .get("completed")
        .is_some_and(|c| !c.is_null());
    Some(format!(
        "There the last message is the cut reply: role {}, {}, text {:?} (kilo never persists \
         deltas; only the event stream had them).",
        last.info.role,
        if completed {
            "completed"
        } else {
            "never completed"
        },
        last.text()
    ))
}

impl Recorded {
    /// Writes `events.sse`, `messages.json` (when there is one) and
    /// `notes.md` into `folder`, replacing what was there.
    pub fn write(&self, folder: &Path, version: &str, scenario: &Scenario) -> Result<()> {
        if folder.exists() {
            std::fs::remove_dir_all(folder)?;
        }
        std::fs::create_dir_all(folder)?;
        std::fs::write(folder.join("events.sse"), &self.events_sse)?;
        if let Some(messages) = &self.messages_json {
            std::fs::write(folder.join("messages.json"), messages)?;
        }
        let mut notes = format!(
            "# {}\n\nRecorded by `record-fixtures` (tests/kilo-harness) with the Kilo CLI {version} \
             against the harness's fake model.\n\n{}\n\n",
            scenario.name, scenario.about
        );
        for note in &self.notes {
            let _ = writeln!(notes, "- {note}");
        }
        let _ = writeln!(
            notes,
            "- events.sse: {} events, every line of GET /event as received (sync twins included).",
            self.event_count
        );
        std::fs::write(folder.join("notes.md"), notes)?;
        Ok(())
    }
}
