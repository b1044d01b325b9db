//! Generating streams in the older spellings (the design text's names,
//! opencode < 1.2's `delta` beside the part): a spec turned into log events,
//! texts cut into deltas, ids named every way, messages interleaved.

use crate::spec::{Form, MessageSpec, PartSpec, StreamSpec};
use proptest::sample::Index;
use serde_json::{Value, json};
use stasis_domain::conversation::*;
use stasis_domain::event_log::Event;
use std::collections::VecDeque;

/// One generated event and what it is about.
#[derive(Debug, Clone)]
pub(crate) struct Generated {
    pub(crate) event_type: &'static str,
    pub(crate) data: Value,
    pub(crate) message: usize,
    pub(crate) part: Option<usize>,
    /// Carries a part's full text.
    pub(crate) full: bool,
    /// That full text is the part's last event.
    pub(crate) last_of_part: bool,
}

/// Endless choices from a non-empty list of indexes.
pub(crate) struct Choices<'a> {
    pub(crate) from: &'a [Index],
    pub(crate) next: usize,
}

impl Choices<'_> {
    pub(crate) fn pick(&mut self, len: usize) -> usize {
        let index = self.from[self.next % self.from.len()];
        self.next += 1;
        index.index(len)
    }

    pub(crate) fn coin(&mut self) -> bool {
        self.pick(2) == 1
    }
}

/// `text` cut at the char boundaries the indexes pick.
pub(crate) fn pieces(text: &str, cuts: &[Index]) -> Vec<String> {
    let boundaries: Vec<usize> = text
        .char_indices()
        .map(|(at, _)| at)
        .chain([text.len()])
        .collect();
    let mut points: Vec<usize> = cuts.iter().map(|cut| *cut.get(&boundaries)).collect();
    points.push(0);
    points.push(text.len());
    points.sort_unstable();
    points
        .windows(2)
        .map(|w| text[w[0]..w[1]].to_owned())
        .collect()
}

enum Op {
    Delta(String),
    Full(String),
}

fn part_ops(part: &PartSpec) -> Vec<Op> {
    let deltas = |text: &str| -> Vec<Op> {
        pieces(text, &part.cuts)
            .into_iter()
            .map(Op::Delta)
            .collect()
    };
    match part.form {
        Form::Deltas => deltas(&part.text),
        Form::Full => vec![Op::Full(part.text.clone())],
        Form::DeltasThenFull => {
            let mut ops = deltas(&format!("draft {}", part.text));
            ops.push(Op::Full(part.text.clone()));
            ops
        }
        Form::FullThenDeltas => {
            let boundaries = pieces(&part.text, &part.cuts);
            let first = boundaries.first().cloned().unwrap_or_default();
            let mut ops = vec![Op::Full(first.clone())];
            ops.extend(
                pieces(&part.text[first.len()..], &part.cuts)
                    .into_iter()
                    .map(Op::Delta),
            );
            ops
        }
    }
}

/// Names the message in one of the three ways the log may.
fn with_ids(data: &mut Value, message: &str, role: Option<&str>, style: usize) {
    match style {
        0 => {
            data["info"] = json!({"id": message});
            if let Some(role) = role {
                data["info"]["role"] = json!(role);
            }
        }
        1 => {
            data["message_id"] = json!(message);
            if let Some(role) = role {
                data["role"] = json!(role);
            }
        }
        _ => {
            data["part"]["messageID"] = json!(message);
            if let Some(role) = role {
                data["role"] = json!(role);
            }
        }
    }
}

fn op_event(
    message: usize,
    part: usize,
    op: &Op,
    role: Option<&str>,
    styles: &mut Choices<'_>,
) -> Generated {
    let part_id = format!("p{part}");
    let mut data = json!({"part": {}});
    if styles.coin() {
        data["part"]["type"] = json!("text");
    }
    let full = match op {
        Op::Full(text) => {
            data["part"]["id"] = json!(part_id);
            data["part"]["text"] = json!(text);
            true
        }
        Op::Delta(delta) => {
            if styles.coin() {
                data["part"]["id"] = json!(part_id);
            } else {
                data["part_id"] = json!(part_id);
            }
            data["delta"] = json!(delta);
            false
        }
    };
    with_ids(&mut data, &format!("m{message}"), role, styles.pick(3));
    // Not `message.updated`: there a user's role finishes the message.
    let types = [
        "message_part.updated",
        "message.part.updated",
        "message.created",
    ];
    Generated {
        event_type: types[styles.pick(types.len())],
        data,
        message,
        part: Some(part),
        full,
        last_of_part: false,
    }
}

fn plain_event(
    event_type: &'static str,
    message: usize,
    role: Option<&str>,
    styles: &mut Choices<'_>,
) -> Generated {
    let mut data = json!({});
    with_ids(&mut data, &format!("m{message}"), role, styles.pick(2));
    Generated {
        event_type,
        data,
        message,
        part: None,
        full: false,
        last_of_part: false,
    }
}

/// What is left to send of one message.
struct Pending {
    header: Option<Generated>,
    parts: Vec<VecDeque<Generated>>,
    footer: Option<Generated>,
}

impl Pending {
    fn new(index: usize, message: &MessageSpec, styles: &mut Choices<'_>) -> Self {
        let role = message.role;
        let header = message
            .header
            .then(|| plain_event("message.created", index, Some(role), styles));
        let parts = message
            .parts
            .iter()
            .enumerate()
            .map(|(part_index, part)| {
                let mut queue: VecDeque<Generated> = part_ops(part)
                    .iter()
                    .map(|op| {
                        // Without a header, every event names the role.
                        let named = !message.header || styles.coin();
                        op_event(index, part_index, op, named.then_some(role), styles)
                    })
                    .collect();
                if let Some(last) = queue.back_mut() {
                    last.last_of_part = last.full;
                }
                queue
            })
            .collect();
        let footer = message.finished.then(|| {
            let event_type = ["message.completed", "assistant.completed"][styles.pick(2)];
            let named = styles.coin().then_some(role);
            plain_event(event_type, index, named, styles)
        });
        Self {
            header,
            parts,
            footer,
        }
    }

    fn is_done(&self) -> bool {
        self.header.is_none() && self.footer.is_none() && self.parts.iter().all(VecDeque::is_empty)
    }

    fn next(&mut self, order: &mut Choices<'_>) -> Option<Generated> {
        if let Some(header) = self.header.take() {
            return Some(header);
        }
        let open: Vec<usize> = (0..self.parts.len())
            .filter(|&part| !self.parts[part].is_empty())
            .collect();
        if open.is_empty() {
            return self.footer.take();
        }
        self.parts[open[order.pick(open.len())]].pop_front()
    }
}

/// The stream's events, interleaved as `spec.order` says.
pub(crate) fn generate(spec: &StreamSpec) -> Vec<Generated> {
    let mut styles = Choices {
        from: &spec.styles,
        next: 0,
    };
    let mut order = Choices {
        from: &spec.order,
        next: 0,
    };
    let mut pending: Vec<Pending> = spec
        .messages
        .iter()
        .enumerate()
        .map(|(index, message)| Pending::new(index, message, &mut styles))
        .collect();
    let mut stream = Vec::new();
    loop {
        let open: Vec<usize> = (0..pending.len())
            .filter(|&m| !pending[m].is_done())
            .collect();
        if open.is_empty() {
            return stream;
        }
        let message = open[order.pick(open.len())];
        stream.extend(pending[message].next(&mut order));
    }
}

pub(crate) fn events(stream: &[Generated]) -> Vec<Event> {
    stream
        .iter()
        .zip(1..)
        .map(|(generated, seq)| event(seq, generated.event_type, &generated.data.to_string()))
        .collect()
}

pub(crate) fn event(seq: u64, event_type: &str, data: &str) -> Event {
    Event {
        seq,
        event_type: event_type.to_owned(),
        session_id: None,
        data: data.to_owned(),
        created_at_ms: 0,
    }
}

pub(crate) fn everything() -> Budget {
    Budget::new(MAX_MAX_TURNS, MAX_MAX_TOKENS).expect("the largest budget is valid")
}
