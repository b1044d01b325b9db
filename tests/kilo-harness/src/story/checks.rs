//! What the story checks, each with a message that says what broke.
//!
//! kilo's messages are compared with the rebuilt conversation turn for turn, whole: a message
//! becomes the turn the rebuild documents (its text parts that were said and its tool parts,
//! in kilo's order, joined with `"\n"`; a tool part as `[tool NAME: TITLE — STATUS]`). The
//! story's tool titles are short single-line ASCII, which the rebuild keeps as they are.

use super::script::{self, PROMPT_LONG, held_turns, long_reply};
use super::stasis::{Dispatch, StoredEvent, Turn};
use crate::{KiloMessage, ModelRequest, Part};
use anyhow::{Result, bail};
use std::fmt::Write as _;

/// What kilo's restored database holds after the finished turns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tail {
    /// Nothing: the last snapshot was the one after turn 3.
    Nothing,
    /// The 4th prompt: a snapshot was pushed after it arrived.
    Prompt,
    /// The 4th prompt and its reply as kilo had stored it: no text (kilo keeps a reply's text
    /// only once it ends), never finished.
    PromptAndEmptyReply,
}

/// The cut reply as stasis holds it.
#[derive(Debug, Clone)]
pub struct CutReply {
    /// kilo's id of the message.
    pub message_id: String,
    /// Its `message.part.delta` events stasis holds.
    pub deltas: usize,
    /// Their text, in seq order.
    pub text: String,
}

/// kilo finished writing the message (a user's is whole at once).
pub fn is_finished(message: &KiloMessage) -> bool {
    let info = &message.info;
    let completed = info.time.get("completed").is_some_and(|c| !c.is_null());
    info.role == "user" || completed || info.finish.is_some() || info.error.is_some()
}

/// The turn the rebuild makes of `message`, or `None` when it says nothing.
pub fn turn_of(message: &KiloMessage) -> Option<Turn> {
    let lines: Vec<String> = message.parts.iter().filter_map(line_of).collect();
    if lines.is_empty() {
        return None;
    }
    Some(Turn {
        role: message.info.role.clone(),
        content: lines.join("\n"),
        unfinished: !is_finished(message),
    })
}

fn line_of(part: &Part) -> Option<String> {
    match part.kind.as_str() {
        "text" if part.synthetic != Some(true) && part.ignored != Some(true) => {
            part.text.clone().filter(|text| !text.is_empty())
        }
        "tool" => tool_line(part),
        _ => None,
    }
}

/// `[tool NAME: TITLE — STATUS]`, the title being `state.title`, else the input's
/// `description`, else its `command`.
fn tool_line(part: &Part) -> Option<String> {
    let name = part.tool.as_deref().filter(|name| !name.is_empty())?;
    let state = part.state.as_ref();
    let text = |pointer: &str| {
        state
            .and_then(|s| s.pointer(pointer))
            .and_then(|v| v.as_str())
            .filter(|t| !t.trim().is_empty())
    };
    let status = text("/status").unwrap_or("unknown");
    let title = text("/title")
        .or_else(|| text("/input/description"))
        .or_else(|| text("/input/command"));
    Some(match title {
        Some(title) => format!("[tool {name}: {title} — {status}]"),
        None => format!("[tool {name} — {status}]"),
    })
}

/// The turns of `messages`.
pub fn turns_of(messages: &[KiloMessage]) -> Vec<Turn> {
    messages.iter().filter_map(turn_of).collect()
}

/// Container A's kilo shows the three finished turns, the tool call among them.
pub fn check_held(messages: &[KiloMessage]) -> Result<()> {
    expect_turns(
        "kilo's messages after the 3 finished turns in container A",
        &turns_of(messages),
        &held_turns(),
    )
}

/// kilo on B's hydrated kilo.db lists every message A had finished, the same ids and turns,
/// and after them at most the 4th prompt and its empty, unfinished reply.
pub fn check_restored(held: &[KiloMessage], restored: &[KiloMessage]) -> Result<Tail> {
    let held_ids: Vec<&str> = held.iter().map(|m| m.info.id.as_str()).collect();
    let restored_ids: Vec<&str> = restored.iter().map(|m| m.info.id.as_str()).collect();
    if !restored_ids.starts_with(&held_ids) {
        bail!(
            "kilo on the hydrated kilo.db does not show every finished message of A:\n  A had \
             {held_ids:?}\n  B shows {restored_ids:?}"
        );
    }
    let (finished, tail) = restored.split_at(held.len());
    expect_turns(
        "kilo's finished turns on the hydrated kilo.db",
        &turns_of(finished),
        &held_turns(),
    )?;
    let is_prompt = |m: &KiloMessage| {
        m.info.role == "user" && turn_of(m).is_some_and(|t| t.content == PROMPT_LONG)
    };
    let is_empty_reply =
        |m: &KiloMessage| m.info.role == "assistant" && turn_of(m).is_none() && !is_finished(m);
    match tail {
        [] => Ok(Tail::Nothing),
        [prompt] if is_prompt(prompt) => Ok(Tail::Prompt),
        [prompt, reply] if is_prompt(prompt) && is_empty_reply(reply) => {
            Ok(Tail::PromptAndEmptyReply)
        }
        other => bail!(
            "after the finished turns, kilo on B shows {} unexpected message(s): {:?}",
            other.len(),
            other
                .iter()
                .map(|m| (m.info.role.as_str(), turn_of(m)))
                .collect::<Vec<_>>()
        ),
    }
}

/// The reply the kill cut: the last assistant message stasis heard of, and the text of the
/// deltas stasis holds for it. It must be a non-empty proper prefix of the scripted reply.
pub fn cut_reply(events: &[StoredEvent]) -> Result<CutReply> {
    let Some(message_id) = events
        .iter()
        .rev()
        .filter(|e| e.kind == "message.updated")
        .find(|e| e.text_at("/info/role").as_deref() == Some("assistant"))
        .and_then(|e| e.text_at("/info/id"))
    else {
        bail!("stasis holds no assistant message at all");
    };
    let pieces: Vec<String> = events
        .iter()
        .filter(|e| e.kind == "message.part.delta")
        .filter(|e| e.text_at("/messageID").as_deref() == Some(message_id.as_str()))
        .filter(|e| e.text_at("/field").is_none_or(|field| field == "text"))
        .filter_map(|e| e.text_at("/delta"))
        .collect();
    let text = pieces.concat();
    let full = long_reply();
    if text.is_empty() || text.len() >= full.len() || !full.starts_with(&text) {
        bail!(
            "the deltas stasis holds for the cut reply {message_id} ({} of them) should spell a \
             non-empty proper prefix of the scripted reply; they spell {text:?}",
            pieces.len()
        );
    }
    Ok(CutReply {
        message_id,
        deltas: pieces.len(),
        text,
    })
}

/// The turns the Mayor's dispatch must carry: kilo's finished turns on B, the 4th prompt when
/// kilo's database lacks it (stasis's log has it either way), then the cut reply, unfinished.
pub fn expected_dispatch_turns(restored: &[KiloMessage], tail: Tail, cut: &CutReply) -> Vec<Turn> {
    let mut turns: Vec<Turn> = restored
        .iter()
        .filter(|m| is_finished(m))
        .filter_map(turn_of)
        .collect();
    if tail == Tail::Nothing {
        turns.push(Turn {
            role: "user".to_owned(),
            content: PROMPT_LONG.to_owned(),
            unfinished: false,
        });
    }
    turns.push(Turn {
        role: "assistant".to_owned(),
        content: cut.text.clone(),
        unfinished: true,
    });
    turns
}

/// The dispatch's prior conversation is exactly `expected`, nothing left out.
pub fn check_dispatch(dispatch: &Dispatch, expected: &[Turn]) -> Result<()> {
    let conversation = &dispatch.prior_conversation;
    if conversation.omitted_turns != 0 {
        bail!(
            "the Mayor's dispatch left out {} turn(s)",
            conversation.omitted_turns
        );
    }
    expect_turns(
        "the Mayor's dispatch (prior_conversation.turns)",
        &conversation.turns,
        expected,
    )
}

/// The first chat request of the new turn carries turns 1–3's texts in order (the tool's
/// result among them) and ends with the new prompt.
pub fn check_resent(requests: &[ModelRequest], prompt: &str) -> Result<()> {
    let Some(request) = requests.first() else {
        bail!("kilo sent the model no request for the new prompt");
    };
    let said: Vec<(&str, &str)> = request
        .messages
        .iter()
        .filter(|m| m.role != "system")
        .map(|m| (m.role.as_str(), m.text.as_str()))
        .collect();
    let mut rest = said.iter();
    for (role, text) in script::finished_texts() {
        let found = rest.any(|(r, t)| *r == role && matches(role, t, text));
        if !found {
            bail!(
                "the request kilo sent the model for the new prompt lacks the earlier {role} \
                 text {text:?} (in order); its messages were:\n{}",
                listing(&said)
            );
        }
    }
    let tool_result = said.iter().any(|(role, _)| *role == "tool");
    let last = said
        .last()
        .is_some_and(|(role, text)| *role == "user" && text.starts_with(prompt));
    if !tool_result || !last {
        bail!(
            "the request should carry the tool's result and end with the new prompt; its \
             messages were:\n{}",
            listing(&said)
        );
    }
    Ok(())
}

/// kilo may add to a user's text when it sends it; an assistant's goes as it was.
fn matches(role: &str, sent: &str, said: &str) -> bool {
    if role == "user" {
        sent.starts_with(said)
    } else {
        sent == said
    }
}

fn listing(said: &[(&str, &str)]) -> String {
    let mut out = String::new();
    for (role, text) in said {
        let short: String = text.chars().take(100).collect();
        let _ = writeln!(out, "  {role}: {short:?}");
    }
    out
}

fn expect_turns(what: &str, actual: &[Turn], expected: &[Turn]) -> Result<()> {
    if actual == expected {
        return Ok(());
    }
    bail!(
        "{what} differ from what was expected:\n  expected:\n{}  got:\n{}",
        show_turns(expected),
        show_turns(actual)
    )
}

/// One line per turn, for messages.
pub fn show_turns(turns: &[Turn]) -> String {
    let mut out = String::new();
    for turn in turns {
        let mark = if turn.unfinished { " (unfinished)" } else { "" };
        let _ = writeln!(out, "    {}{mark}: {:?}", turn.role, turn.content);
    }
    out
}

#[cfg(test)]
#[allow(clippy::expect_used, reason = "tests fail loudly")]
mod tests {
    use super::*;
    use crate::story::script::{
        PROMPT_LEFT, PROMPT_PLAN, PROMPT_TOOL, REPLY_AFTER_TOOL, REPLY_LEFT, REPLY_PLAN, TOOL_TITLE,
    };
    use serde_json::json;

    fn message(id: &str, role: &str, done: bool, parts: serde_json::Value) -> KiloMessage {
        let time = if done {
            json!({"created": 1, "completed": 2})
        } else {
            json!({"created": 1})
        };
        let value = json!({"info": {"id": id, "role": role, "time": time}, "parts": parts});
        serde_json::from_value(value).expect("a message")
    }

    fn text(id: &str, role: &str, said: &str) -> KiloMessage {
        let parts =
            json!([{"id": "p", "type": "step-start"}, {"id": "t", "type": "text", "text": said}]);
        message(id, role, true, parts)
    }

    /// kilo's messages after the story's three turns.
    fn held() -> Vec<KiloMessage> {
        let tool = json!([{"id": "p", "type": "tool", "tool": "bash",
            "state": {"status": "completed", "title": TOOL_TITLE, "input": {"command": "x"}}}]);
        vec![
            text("m1", "user", PROMPT_PLAN),
            text("m2", "assistant", REPLY_PLAN),
            text("m3", "user", PROMPT_TOOL),
            message("m4", "assistant", true, tool),
            text("m5", "assistant", REPLY_AFTER_TOOL),
            text("m6", "user", PROMPT_LEFT),
            text("m7", "assistant", REPLY_LEFT),
        ]
    }

    fn cut() -> CutReply {
        CutReply {
            message_id: "m9".into(),
            deltas: 2,
            text: "The release".into(),
        }
    }

    #[test]
    fn kilos_messages_become_the_rebuilds_turns() {
        assert!(check_held(&held()).is_ok());
        let mut wrong = held();
        wrong.swap(1, 2);
        assert!(check_held(&wrong).is_err());
    }

    #[test]
    fn the_restored_tail_is_nothing_the_prompt_or_the_prompt_and_its_empty_reply() {
        let prompt = text("m8", "user", PROMPT_LONG);
        let empty = message(
            "m9",
            "assistant",
            false,
            json!([{"id": "s", "type": "step-start"}]),
        );
        let with = |tail: &[&KiloMessage]| {
            let mut messages = held();
            messages.extend(tail.iter().map(|m| (*m).clone()));
            check_restored(&held(), &messages)
        };
        assert_eq!(with(&[]).ok(), Some(Tail::Nothing));
        assert_eq!(with(&[&prompt]).ok(), Some(Tail::Prompt));
        assert_eq!(
            with(&[&prompt, &empty]).ok(),
            Some(Tail::PromptAndEmptyReply)
        );
        assert!(with(&[&empty]).is_err(), "a reply without its prompt");
        assert!(
            with(&[&prompt, &text("m9", "assistant", "done")]).is_err(),
            "a finished reply"
        );
        assert!(
            check_restored(&held(), &held()[..6]).is_err(),
            "a finished turn missing"
        );
    }

    #[test]
    fn the_dispatch_must_end_with_the_prompt_and_the_cut_reply_unfinished() {
        let expected = expected_dispatch_turns(&held(), Tail::Nothing, &cut());
        let (last, before) = expected.split_last().expect("turns");
        assert_eq!(before.len(), 8);
        assert_eq!(before[7].content, PROMPT_LONG);
        assert_eq!(
            (last.content.as_str(), last.unfinished),
            ("The release", true)
        );
        let mut with_prompt = held();
        with_prompt.push(text("m8", "user", PROMPT_LONG));
        assert_eq!(
            expected_dispatch_turns(&with_prompt, Tail::Prompt, &cut()),
            expected,
            "the prompt comes from kilo or from stasis, once"
        );
    }
}
