//! What a kilo-shaped stream is made of (as `kilo serve` sends it on
//! `GET /event`), and the turns it must rebuild into.

use crate::kilo_stream::KiloEvent;
use crate::spec::text;
use proptest::prelude::*;
use proptest::sample::Index;
use stasis_domain::conversation::Turn;
use std::collections::HashSet;

/// One part of a message and how kilo sends it.
#[derive(Debug, Clone)]
pub(crate) enum PartPlan {
    /// A user's text, sent whole (no timing); `synthetic` ones are kilo's
    /// own additions, not what was said.
    Whole { text: String, synthetic: bool },
    /// A streamed reply: deltas cut from `streamed`, the part's empty start
    /// update after `start_after` of them, and an ended full text unless
    /// the reply was cut off.
    Streamed {
        streamed: String,
        cuts: Vec<Index>,
        start_after: Index,
        ending: Ending,
    },
    /// A tool call that got through the first `steps` of pending, running,
    /// completed (or error, when `fails`).
    Tool {
        name: &'static str,
        description: String,
        steps: usize,
        fails: bool,
    },
    /// Reasoning, streamed like text: never part of the conversation.
    Reasoning { text: String, cuts: Vec<Index> },
    /// `step-start` or `step-finish`.
    Marker(&'static str),
}

/// How a streamed text part ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ending {
    /// The stream was cut: no final update.
    Cut,
    /// The final text is what was streamed.
    AsStreamed,
    /// The final text differs from the stream (kilo trims it, for one).
    Rewritten,
}

impl Ending {
    /// The part's text once kilo has finished it, if it has.
    pub(crate) fn final_text(self, streamed: &str) -> Option<String> {
        match self {
            Self::Cut => None,
            Self::AsStreamed => Some(streamed.to_owned()),
            Self::Rewritten => Some(format!("({})", streamed.trim())),
        }
    }
}

/// How an assistant message ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Finish {
    /// `finish: "stop"`, then `time.completed`.
    Completed,
    /// `error` set (an aborted reply) with `time.completed`.
    Failed,
    /// The process died first.
    Never,
}

#[derive(Debug, Clone)]
pub(crate) struct MessagePlan {
    pub(crate) user: bool,
    pub(crate) parts: Vec<PartPlan>,
    pub(crate) finish: Finish,
}

#[derive(Debug, Clone)]
pub(crate) struct KiloSpec {
    pub(crate) messages: Vec<MessagePlan>,
    /// Choices for the interleaving (messages of several sessions share a
    /// log, and a message's tool calls may run side by side).
    pub(crate) order: Vec<Index>,
}

fn words() -> impl Strategy<Value = String> {
    "[A-Za-z]{1,10}( [A-Za-z]{1,10}){0,3}"
}

fn cuts() -> impl Strategy<Value = Vec<Index>> {
    prop::collection::vec(any::<Index>(), 0..8)
}

fn streamed_part() -> impl Strategy<Value = PartPlan> {
    let ending = prop_oneof![
        1 => Just(Ending::Cut),
        3 => Just(Ending::AsStreamed),
        1 => Just(Ending::Rewritten),
    ];
    (text(), cuts(), any::<Index>(), ending).prop_map(|(streamed, cuts, start_after, ending)| {
        PartPlan::Streamed {
            streamed,
            cuts,
            start_after,
            ending,
        }
    })
}

fn assistant_part() -> impl Strategy<Value = PartPlan> {
    let tool = (
        prop::sample::select(vec!["bash", "read", "grep"]),
        words(),
        1_usize..=3,
        any::<bool>(),
    )
        .prop_map(|(name, description, steps, fails)| PartPlan::Tool {
            name,
            description,
            steps,
            fails,
        });
    prop_oneof![
        4 => streamed_part(),
        2 => tool,
        1 => (text(), cuts()).prop_map(|(text, cuts)| PartPlan::Reasoning { text, cuts }),
        1 => prop::sample::select(vec!["step-start", "step-finish"]).prop_map(PartPlan::Marker),
    ]
}

fn user_part() -> impl Strategy<Value = PartPlan> {
    (text(), prop::bool::weighted(0.2))
        .prop_map(|(text, synthetic)| PartPlan::Whole { text, synthetic })
}

fn message_plan() -> impl Strategy<Value = MessagePlan> {
    let finish = prop_oneof![
        5 => Just(Finish::Completed),
        1 => Just(Finish::Failed),
        2 => Just(Finish::Never),
    ];
    let user = prop::collection::vec(user_part(), 1..3).prop_map(|parts| MessagePlan {
        user: true,
        parts,
        finish: Finish::Completed,
    });
    let assistant =
        (prop::collection::vec(assistant_part(), 1..5), finish).prop_map(|(parts, finish)| {
            MessagePlan {
                user: false,
                parts,
                finish,
            }
        });
    prop_oneof![user, assistant]
}

pub(crate) fn kilo_spec() -> impl Strategy<Value = KiloSpec> {
    (
        prop::collection::vec(message_plan(), 1..6),
        prop::collection::vec(any::<Index>(), 1..64),
    )
        .prop_map(|(messages, order)| KiloSpec { messages, order })
}

/// The line a tool part's last update makes.
fn tool_line(name: &str, description: &str, steps: usize, fails: bool) -> String {
    match (steps, fails) {
        (1, _) => format!("[tool {name} — pending]"),
        (2, _) => format!("[tool {name}: {description} — running]"),
        (_, false) => format!("[tool {name}: {description} — completed]"),
        (_, true) => format!("[tool {name}: {description} — error]"),
    }
}

/// A part's text in the turn (`None` when it says nothing) and whether it
/// was cut off.
fn part_text(plan: &PartPlan) -> (Option<String>, bool) {
    match plan {
        PartPlan::Whole { text, synthetic } => ((!synthetic).then(|| text.clone()), false),
        PartPlan::Streamed {
            streamed, ending, ..
        } => match ending.final_text(streamed) {
            Some(full) => (Some(full), false),
            None => (Some(streamed.clone()), true),
        },
        PartPlan::Tool {
            name,
            description,
            steps,
            fails,
        } => (Some(tool_line(name, description, *steps, *fails)), false),
        PartPlan::Reasoning { .. } | PartPlan::Marker(_) => (None, false),
    }
}

/// What was removed: whole messages, and parts as (message, part).
#[derive(Debug, Default)]
pub(crate) struct Removed {
    pub(crate) messages: HashSet<usize>,
    pub(crate) parts: HashSet<(usize, usize)>,
}

/// The turns `stream` must rebuild into: messages and parts by first
/// appearance, what kilo finished (else what streamed), tool lines, the
/// removed left out.
pub(crate) fn expected(spec: &KiloSpec, stream: &[KiloEvent], removed: &Removed) -> Vec<Turn> {
    let mut message_order: Vec<usize> = Vec::new();
    let mut part_order: Vec<Vec<usize>> = vec![Vec::new(); spec.messages.len()];
    for event in stream {
        if !message_order.contains(&event.message) {
            message_order.push(event.message);
        }
        if let Some(part) = event.part
            && !part_order[event.message].contains(&part)
        {
            part_order[event.message].push(part);
        }
    }
    let mut turns = message_order
        .into_iter()
        .filter(|m| !removed.messages.contains(m))
        .filter_map(|m| {
            let plan = &spec.messages[m];
            let mut texts = Vec::new();
            let mut cut_off = false;
            for &p in &part_order[m] {
                if removed.parts.contains(&(m, p)) {
                    continue;
                }
                let (text, cut) = part_text(&plan.parts[p]);
                texts.extend(text);
                cut_off |= cut;
            }
            let content = texts.join("\n");
            (!content.is_empty()).then(|| {
                Turn::new(
                    if plan.user { "user" } else { "assistant" },
                    content,
                    plan.finish == Finish::Never || cut_off,
                )
            })
        })
        .collect::<Vec<_>>();
    crate::spec::resolve_cut_replies(&mut turns);
    turns
}
