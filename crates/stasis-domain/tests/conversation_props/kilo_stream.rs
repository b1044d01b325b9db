//! Generating kilo-shaped streams: each message's events in the order kilo
//! sends them, messages (and a message's parts) interleaved, and the log
//! entries a container stores for them.

use crate::kilo_spec::{Finish, KiloSpec, MessagePlan, PartPlan};
use crate::stream::{Choices, event, pieces};
use serde_json::{Value, json};
use stasis_domain::event_log::Event;
use std::collections::VecDeque;

/// One generated event and what it is about.
#[derive(Debug, Clone)]
pub(crate) struct KiloEvent {
    pub(crate) event_type: &'static str,
    pub(crate) data: Value,
    pub(crate) message: usize,
    pub(crate) part: Option<usize>,
}

impl KiloEvent {
    /// kilo persists it, so it also sends a `sync` twin of it.
    pub(crate) fn is_persisted(&self) -> bool {
        self.event_type != "message.part.delta"
    }
}

const SESSION: &str = "ses_1";

fn message_id(message: usize) -> String {
    format!("msg_{message}")
}

fn part_id(message: usize, part: usize) -> String {
    format!("prt_{message}_{part}")
}

fn info(message: usize, plan: &MessagePlan) -> Value {
    let role = if plan.user { "user" } else { "assistant" };
    json!({"id": message_id(message), "sessionID": SESSION, "role": role,
           "time": {"created": 1}, "agent": "code"})
}

/// What a part's events are built from.
struct PartCtx {
    message: usize,
    part: usize,
}

impl PartCtx {
    fn update(&self, mut part: Value) -> KiloEvent {
        part["id"] = json!(part_id(self.message, self.part));
        part["sessionID"] = json!(SESSION);
        part["messageID"] = json!(message_id(self.message));
        self.event(
            "message.part.updated",
            json!({"sessionID": SESSION, "part": part, "time": 1}),
        )
    }

    fn delta(&self, piece: &str) -> KiloEvent {
        self.event(
            "message.part.delta",
            json!({"sessionID": SESSION, "messageID": message_id(self.message),
                   "partID": part_id(self.message, self.part), "field": "text", "delta": piece}),
        )
    }

    fn event(&self, event_type: &'static str, data: Value) -> KiloEvent {
        KiloEvent {
            event_type,
            data,
            message: self.message,
            part: Some(self.part),
        }
    }
}

/// A part's events in kilo's order.
fn part_events(ctx: &PartCtx, plan: &PartPlan) -> Vec<KiloEvent> {
    match plan {
        PartPlan::Whole { text, synthetic } => {
            let mut part = json!({"type": "text", "text": text});
            if *synthetic {
                part["synthetic"] = json!(true);
            }
            vec![ctx.update(part)]
        }
        PartPlan::Streamed {
            streamed,
            cuts,
            start_after,
            ending,
        } => {
            let mut events: Vec<KiloEvent> = pieces(streamed, cuts)
                .iter()
                .map(|piece| ctx.delta(piece))
                .collect();
            // The start usually leads; a delta may overtake it.
            let start = json!({"type": "text", "text": "", "time": {"start": 1}});
            events.insert(start_after.index(events.len() + 1), ctx.update(start));
            if let Some(full) = ending.final_text(streamed) {
                let end = json!({"type": "text", "text": full, "time": {"start": 1, "end": 2}});
                events.push(ctx.update(end));
            }
            events
        }
        PartPlan::Tool {
            name,
            description,
            steps,
            fails,
        } => tool_events(ctx, name, description, *steps, *fails),
        PartPlan::Reasoning { text, cuts } => {
            let mut events =
                vec![ctx.update(json!({"type": "reasoning", "text": "", "time": {"start": 1}}))];
            events.extend(pieces(text, cuts).iter().map(|piece| ctx.delta(piece)));
            events.push(ctx.update(
                json!({"type": "reasoning", "text": text, "time": {"start": 1, "end": 2}}),
            ));
            events
        }
        PartPlan::Marker(kind) => vec![ctx.update(json!({"type": kind, "reason": "stop"}))],
    }
}

fn tool_events(
    ctx: &PartCtx,
    name: &str,
    description: &str,
    steps: usize,
    fails: bool,
) -> Vec<KiloEvent> {
    let input = match name {
        "bash" => json!({"command": "echo hi", "description": description}),
        "read" => json!({"filePath": description, "limit": 20}),
        // serde_json sorts keys: "max" comes first, and is no string.
        _ => json!({"pattern": description, "max": 20}),
    };
    let tool = |state: Value| {
        ctx.update(json!({"type": "tool", "callID": "call_1", "tool": name, "state": state}))
    };
    let last = if fails {
        json!({"status": "error", "input": input, "error": "boom", "time": {"start": 1, "end": 2}})
    } else {
        json!({"status": "completed", "input": input, "output": "hi\n", "title": description,
               "metadata": {"exit": 0}, "time": {"start": 1, "end": 2}})
    };
    [
        json!({"status": "pending", "input": {}, "raw": ""}),
        json!({"status": "running", "input": input, "time": {"start": 1}}),
        last,
    ]
    .into_iter()
    .take(steps)
    .map(tool)
    .collect()
}

/// A message's closing updates.
fn footer(message: usize, plan: &MessagePlan) -> Vec<KiloEvent> {
    let updated = |info: Value| KiloEvent {
        event_type: "message.updated",
        data: json!({"sessionID": SESSION, "info": info}),
        message,
        part: None,
    };
    let mut info = info(message, plan);
    if plan.user {
        // kilo sends the user's message again later, with a summary.
        info["summary"] = json!({"diffs": []});
        return vec![updated(info)];
    }
    match plan.finish {
        Finish::Completed => {
            info["finish"] = json!("stop");
            let stopped = updated(info.clone());
            info["time"]["completed"] = json!(2);
            vec![stopped, updated(info)]
        }
        Finish::Failed => {
            info["error"] = json!({"name": "MessageAbortedError", "data": {}});
            info["time"]["completed"] = json!(2);
            vec![updated(info)]
        }
        Finish::Never => Vec::new(),
    }
}

/// What is left to send of one message: its header, then its parts'
/// events interleaved, then its footer.
struct Pending {
    header: Option<KiloEvent>,
    parts: Vec<VecDeque<KiloEvent>>,
    footer: VecDeque<KiloEvent>,
}

impl Pending {
    fn new(message: usize, plan: &MessagePlan) -> Self {
        let header = KiloEvent {
            event_type: "message.updated",
            data: json!({"sessionID": SESSION, "info": info(message, plan)}),
            message,
            part: None,
        };
        let parts = plan
            .parts
            .iter()
            .enumerate()
            .map(|(part, plan)| part_events(&PartCtx { message, part }, plan).into())
            .collect();
        Self {
            header: Some(header),
            parts,
            footer: footer(message, plan).into(),
        }
    }

    fn next(&mut self, order: &mut Choices<'_>) -> Option<KiloEvent> {
        if let Some(header) = self.header.take() {
            return Some(header);
        }
        let open: Vec<usize> = (0..self.parts.len())
            .filter(|&part| !self.parts[part].is_empty())
            .collect();
        if open.is_empty() {
            return self.footer.pop_front();
        }
        self.parts[open[order.pick(open.len())]].pop_front()
    }
}

/// The stream's events, interleaved as `spec.order` says.
pub(crate) fn generate(spec: &KiloSpec) -> Vec<KiloEvent> {
    let mut order = Choices {
        from: &spec.order,
        next: 0,
    };
    let mut pending: Vec<Pending> = spec
        .messages
        .iter()
        .enumerate()
        .map(|(message, plan)| Pending::new(message, plan))
        .collect();
    let mut stream = Vec::new();
    loop {
        let open: Vec<usize> = (0..pending.len())
            .filter(|&m| {
                let p = &pending[m];
                p.header.is_some() || !p.footer.is_empty() || p.parts.iter().any(|q| !q.is_empty())
            })
            .collect();
        if open.is_empty() {
            return stream;
        }
        let message = open[order.pick(open.len())];
        stream.extend(pending[message].next(&mut order));
    }
}

/// How a container that kept kilo's `sync` twins stored one.
#[derive(Debug, Clone, Copy)]
pub(crate) enum TwinForm {
    /// As sent: type `sync`, the event itself as data (it has no
    /// `properties`).
    AsSent,
    /// Unwrapped to the twin's own type and data: a copy under a new seq.
    Unwrapped,
}

/// The log entries `(type, data)` for `stream`, each persisted event
/// followed by its twin, the n-th in the form `twins[n % len]` (no twins
/// when `twins` is empty).
pub(crate) fn entries(stream: &[KiloEvent], twins: &[TwinForm]) -> Vec<(String, String)> {
    let mut entries = Vec::with_capacity(stream.len() * 2);
    let mut persisted = 0;
    for (index, generated) in stream.iter().enumerate() {
        let data = generated.data.to_string();
        entries.push((generated.event_type.to_owned(), data.clone()));
        if twins.is_empty() || !generated.is_persisted() {
            continue;
        }
        let twin = match twins[persisted % twins.len()] {
            TwinForm::AsSent => (
                "sync".to_owned(),
                json!({"type": "sync", "id": format!("evt_{index}"), "syncEvent": {
                    "id": format!("evt_{index}"), "type": format!("{}.1", generated.event_type),
                    "seq": index, "aggregateID": SESSION, "data": generated.data}})
                .to_string(),
            ),
            TwinForm::Unwrapped => (generated.event_type.to_owned(), data),
        };
        entries.push(twin);
        persisted += 1;
    }
    entries
}

/// Log events numbered from seq 1.
pub(crate) fn logged(entries: &[(String, String)]) -> Vec<Event> {
    entries
        .iter()
        .zip(1..)
        .map(|((event_type, data), seq)| event(seq, event_type, data))
        .collect()
}
