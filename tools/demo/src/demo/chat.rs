//! The Mayor's conversation, in the events kilo (`kilo serve` 7.x) sends and
//! a container stores as `{type, session_id, data: properties}`: each user
//! ask a `message.updated` and its text part; each answer a
//! `message.updated`, an empty text part, `message.part.delta`s with a
//! `bash` tool part in the middle, the part's full text, and the
//! `message.updated` that completes it. Built from a seed, so every run says
//! the same.

use super::rng::Rng;
use serde_json::{Value, json};

/// What the user writes to the Mayor while no container runs.
pub const GAP_MESSAGE: &str = "Are you still there? Did the deploy of gt-21 go out, and is \
                               polecat-2 done reviewing gt-19?";

const ASKS: &[&str] = &[
    "Morning. Where are we on the billing rig?",
    "Put gt-21 (the invoice rounding fix) at the top of the convoy.",
    "Which polecat is free to take the webhook retries, gt-19?",
    "Why did the nightly run fail?",
    "Ship gt-21 as soon as it passes review.",
    "Can polecat-2 review gt-19 before lunch?",
    "Remind me what the refinery is waiting on.",
    "Draft release notes for everything merged this week.",
    "Is the Postgres index change safe to run during the day?",
    "Pause anything that touches the payments schema until Friday.",
    "What's left before we can close convoy cv-billing-7?",
    "Summarise the day for me, briefly.",
];
const OPENERS: &[&str] = &[
    "Sure.",
    "On it.",
    "Here's where things stand.",
    "Checked just now.",
    "Good question.",
];
const FINDINGS: &[&str] = &[
    "Polecat-1 is midway through gt-{n}; its branch has {k} commits and the tests pass locally.",
    "Polecat-2 picked up gt-{n} and left {k} review comments, all minor.",
    "The refinery has {k} changes queued behind the CI run for gt-{n}.",
    "The nightly failure was a flaky test in gt-{n} that depends on wall-clock time.",
    "gt-{n} touches the payments schema, so I parked it as you asked.",
    "The index for gt-{n} builds concurrently, so it takes no write lock; about {k} minutes.",
    "I merged gt-{n} after {k} green runs in a row.",
    "gt-{n} is blocked on a review; I pinged polecat-2 and it answered within a minute.",
    "Convoy cv-billing-7 has {k} beads left, gt-{n} being the largest.",
];
const CLOSERS: &[&str] = &[
    "I'll tell you when it lands.",
    "Nothing needs you right now.",
    "I've noted it in the convoy.",
    "Shout if you want it done differently.",
];

/// One turn as the server rebuilds it: who spoke, and the text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Turn {
    /// `user` or `assistant`.
    pub role: String,
    /// The text of the message.
    pub content: String,
}

/// The events to append and the turns they must rebuild into.
pub struct Chat {
    /// Every event, in order, ready for `POST /events`.
    pub events: Vec<Value>,
    /// The conversation those events hold.
    pub turns: Vec<Turn>,
}

/// The Mayor's conversation in session `session`.
pub fn mayor_chat(session: &str, seed: u64) -> Chat {
    let mut rng = Rng::new(seed);
    let mut chat = Chat {
        events: Vec::new(),
        turns: Vec::new(),
    };
    for (n, ask) in ASKS.iter().enumerate() {
        chat.user(session, &format!("msg_u{n:02}"), ask);
        let answer = answer(&mut rng);
        chat.assistant(session, &format!("msg_a{n:02}"), &answer, &mut rng);
    }
    chat
}

/// A few short events in `session` for a polecat: one streamed message.
pub fn polecat_work(session: &str, seed: u64) -> Chat {
    let mut rng = Rng::new(seed);
    let mut chat = Chat {
        events: Vec::new(),
        turns: Vec::new(),
    };
    let text = "Running the tests for my bead; I'll report back when they pass.";
    chat.assistant(session, "msg_w00", text, &mut rng);
    chat
}

/// The tool every answer runs, as its part and the line the rebuild makes
/// of it.
const TOOL_TITLE: &str = "Check the convoy";

impl Chat {
    /// A user's message: its info, then its whole text part.
    fn user(&mut self, session: &str, id: &str, text: &str) {
        let info = json!({"id": id, "sessionID": session, "role": "user",
            "time": {"created": self.clock()}});
        self.message(session, &info);
        let part = json!({"id": format!("{id}_p0"), "sessionID": session, "messageID": id,
            "type": "text", "text": text});
        self.part(session, &part);
        self.turns.push(Turn {
            role: "user".into(),
            content: text.into(),
        });
    }

    /// An answer, streamed a few words at a time, with a tool call in the
    /// middle, then completed.
    fn assistant(&mut self, session: &str, id: &str, text: &str, rng: &mut Rng) {
        let created = self.clock();
        let info = json!({"id": id, "sessionID": session, "role": "assistant",
            "time": {"created": created}});
        self.message(session, &info);
        let part_id = format!("{id}_p0");
        let start = self.clock();
        let empty = json!({"id": part_id, "sessionID": session, "messageID": id,
            "type": "text", "text": "", "time": {"start": start}});
        self.part(session, &empty);
        let deltas = deltas(text, rng);
        let middle = deltas.len() / 2;
        for (n, delta) in deltas.into_iter().enumerate() {
            if n == middle {
                let tool = json!({"id": format!("{id}_p1"), "sessionID": session,
                    "messageID": id, "type": "tool", "tool": "bash", "callID": format!("call_{id}"),
                    "state": {"status": "completed", "title": TOOL_TITLE, "output": "ok",
                        "input": {"command": "gt convoy status", "description": TOOL_TITLE}}});
                self.part(session, &tool);
            }
            let data = json!({"sessionID": session, "messageID": id, "partID": part_id,
                "field": "text", "delta": delta});
            self.push(session, "message.part.delta", data);
        }
        let done = json!({"id": part_id, "sessionID": session, "messageID": id,
            "type": "text", "text": text, "time": {"start": start, "end": self.clock()}});
        self.part(session, &done);
        let completed = json!({"id": id, "sessionID": session, "role": "assistant",
            "finish": "stop", "time": {"created": created, "completed": self.clock()}});
        self.message(session, &completed);
        self.turns.push(Turn {
            role: "assistant".into(),
            content: format!("{text}\n[tool bash: {TOOL_TITLE} — completed]"),
        });
    }

    fn message(&mut self, session: &str, info: &Value) {
        let data = json!({"sessionID": session, "info": info});
        self.push(session, "message.updated", data);
    }

    fn part(&mut self, session: &str, part: &Value) {
        let data = json!({"sessionID": session, "part": part});
        self.push(session, "message.part.updated", data);
    }

    fn push(&mut self, session: &str, kind: &str, data: Value) {
        self.events
            .push(json!({"type": kind, "session_id": session, "data": data}));
    }

    /// A made-up clock: a millisecond per event, from a fixed start.
    fn clock(&self) -> u64 {
        1_795_000_000_000 + self.events.len() as u64
    }
}

/// An answer: an opener, a few findings, a closer.
fn answer(rng: &mut Rng) -> String {
    let mut parts = vec![rng.pick(OPENERS).to_string()];
    for _ in 0..rng.between(2, 4) {
        let finding = rng
            .pick(FINDINGS)
            .replace("{n}", &rng.between(11, 48).to_string())
            .replace("{k}", &rng.between(2, 9).to_string());
        parts.push(finding);
    }
    parts.push(rng.pick(CLOSERS).to_string());
    parts.join(" ")
}

/// `text` cut into pieces of one to three words, each keeping its spaces, so
/// that the pieces concatenate back into `text`.
fn deltas(text: &str, rng: &mut Rng) -> Vec<String> {
    let mut pieces = Vec::new();
    let mut piece = String::new();
    let mut words = 0;
    let mut want = rng.between(1, 3);
    for ch in text.chars() {
        piece.push(ch);
        if ch == ' ' {
            words += 1;
            if words == want {
                pieces.push(std::mem::take(&mut piece));
                words = 0;
                want = rng.between(1, 3);
            }
        }
    }
    if !piece.is_empty() {
        pieces.push(piece);
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deltas_concatenate_back_into_the_text() {
        let text = "one two three four five six seven";
        assert_eq!(deltas(text, &mut Rng::new(3)).concat(), text);
    }

    #[test]
    fn the_mayor_chat_is_a_few_hundred_events_of_alternating_turns() {
        let chat = mayor_chat("ses", 1);
        assert!(
            (200..=800).contains(&chat.events.len()),
            "{}",
            chat.events.len()
        );
        assert_eq!(chat.turns.len(), ASKS.len() * 2);
        assert!(chat.turns.iter().step_by(2).all(|t| t.role == "user"));
    }
}
