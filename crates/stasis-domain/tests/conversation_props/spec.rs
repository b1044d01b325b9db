//! Generating streams: what a stream is made of, and the turns it must
//! rebuild into.

use crate::stream::Generated;
use proptest::prelude::*;
use proptest::sample::Index;
use stasis_domain::conversation::*;

/// How a part's text reaches the log.
#[derive(Debug, Clone)]
pub(crate) enum Form {
    Deltas,
    Full,
    /// Deltas of a draft, then the real full text.
    DeltasThenFull,
    /// A full text of a prefix, then deltas of the rest.
    FullThenDeltas,
}

#[derive(Debug, Clone)]
pub(crate) struct PartSpec {
    pub(crate) text: String,
    pub(crate) cuts: Vec<Index>,
    pub(crate) form: Form,
}

#[derive(Debug, Clone)]
pub(crate) struct MessageSpec {
    pub(crate) role: &'static str,
    pub(crate) parts: Vec<PartSpec>,
    pub(crate) header: bool,
    pub(crate) finished: bool,
}

#[derive(Debug, Clone)]
pub(crate) struct StreamSpec {
    pub(crate) messages: Vec<MessageSpec>,
    /// Choices for the interleaving.
    pub(crate) order: Vec<Index>,
    /// Choices for how each event names things.
    pub(crate) styles: Vec<Index>,
}

pub(crate) fn text() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9 .,éü😀\n\"\\\\<>/{}]{1,40}"
}

fn part_spec() -> impl Strategy<Value = PartSpec> {
    let form = prop_oneof![
        3 => Just(Form::Deltas),
        1 => Just(Form::Full),
        1 => Just(Form::DeltasThenFull),
        1 => Just(Form::FullThenDeltas),
    ];
    (text(), prop::collection::vec(any::<Index>(), 0..8), form)
        .prop_map(|(text, cuts, form)| PartSpec { text, cuts, form })
}

fn message_spec() -> impl Strategy<Value = MessageSpec> {
    (
        prop::sample::select(vec!["user", "assistant", "system"]),
        prop::collection::vec(part_spec(), 1..4),
        any::<bool>(),
        prop::bool::weighted(0.8),
    )
        .prop_map(|(role, parts, header, finished)| MessageSpec {
            role,
            parts,
            header,
            finished,
        })
}

pub(crate) fn stream_spec() -> impl Strategy<Value = StreamSpec> {
    (
        prop::collection::vec(message_spec(), 1..6),
        prop::collection::vec(any::<Index>(), 1..64),
        prop::collection::vec(any::<Index>(), 1..64),
    )
        .prop_map(|(messages, order, styles)| StreamSpec {
            messages,
            order,
            styles,
        })
}

/// The turns the stream must rebuild into: messages and parts by first
/// appearance, parts joined with newlines.
pub(crate) fn expected(spec: &StreamSpec, stream: &[Generated]) -> Vec<Turn> {
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
        .map(|m| {
            let message = &spec.messages[m];
            let texts: Vec<&str> = part_order[m]
                .iter()
                .map(|&p| message.parts[p].text.as_str())
                .collect();
            Turn::new(message.role, texts.join("\n"), !message.finished)
        })
        .collect::<Vec<_>>();
    resolve_cut_replies(&mut turns);
    turns
}

/// The rebuild's rule for a reply cut off: once a later assistant reply of
/// its session finished whole, it is no longer unfinished (every generated
/// event is of one session).
pub(crate) fn resolve_cut_replies(turns: &mut [Turn]) {
    let mut whole_reply_after = false;
    for turn in turns.iter_mut().rev() {
        let reply = turn.role == "assistant";
        let whole = reply && !turn.unfinished;
        if reply && turn.unfinished && whole_reply_after {
            turn.unfinished = false;
        }
        whole_reply_after |= whole;
    }
}
