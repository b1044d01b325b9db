//! Properties of the conversation rebuild over generated event streams.
//!
//! The streams look like real ones: several messages, some with several
//! parts, texts streamed as deltas cut at random points (or sent whole, or
//! both), every way of naming ids, interleaved at random. Whatever the
//! interleaving, duplicated full texts, junk or repeated pages, the rebuild
//! must give back exactly the texts that were streamed.

#![allow(clippy::expect_used, reason = "tests fail loudly")]

use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::{Value, json};
use stasis_domain::conversation::*;
use stasis_domain::event_log::Event;
use std::collections::VecDeque;

// --- Generating streams ---------------------------------------------------

/// How a part's text reaches the log.
#[derive(Debug, Clone)]
enum Form {
    Deltas,
    Full,
    /// Deltas of a draft, then the real full text.
    DeltasThenFull,
    /// A full text of a prefix, then deltas of the rest.
    FullThenDeltas,
}

#[derive(Debug, Clone)]
struct PartSpec {
    text: String,
    cuts: Vec<Index>,
    form: Form,
}

#[derive(Debug, Clone)]
struct MessageSpec {
    role: &'static str,
    parts: Vec<PartSpec>,
    header: bool,
    finished: bool,
}

#[derive(Debug, Clone)]
struct StreamSpec {
    messages: Vec<MessageSpec>,
    /// Choices for the interleaving.
    order: Vec<Index>,
    /// Choices for how each event names things.
    styles: Vec<Index>,
}

/// One generated event and what it is about.
#[derive(Debug, Clone)]
struct Generated {
    event_type: &'static str,
    data: Value,
    message: usize,
    part: Option<usize>,
    /// Carries a part's full text.
    full: bool,
    /// That full text is the part's last event.
    last_of_part: bool,
}

fn text() -> impl Strategy<Value = String> {
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

fn stream_spec() -> impl Strategy<Value = StreamSpec> {
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

/// Endless choices from a non-empty list of indexes.
struct Choices<'a> {
    from: &'a [Index],
    next: usize,
}

impl Choices<'_> {
    fn pick(&mut self, len: usize) -> usize {
        let index = self.from[self.next % self.from.len()];
        self.next += 1;
        index.index(len)
    }

    fn coin(&mut self) -> bool {
        self.pick(2) == 1
    }
}

/// `text` cut at the char boundaries the indexes pick.
fn pieces(text: &str, cuts: &[Index]) -> Vec<String> {
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
    let types = [
        "message_part.updated",
        "message.part.updated",
        "message.updated",
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
fn generate(spec: &StreamSpec) -> Vec<Generated> {
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

/// The turns the stream must rebuild into: messages and parts by first
/// appearance, parts joined with newlines.
fn expected(spec: &StreamSpec, stream: &[Generated]) -> Vec<Turn> {
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
    message_order
        .into_iter()
        .map(|m| {
            let message = &spec.messages[m];
            let texts: Vec<&str> = part_order[m]
                .iter()
                .map(|&p| message.parts[p].text.as_str())
                .collect();
            Turn {
                role: message.role.to_owned(),
                content: texts.join("\n"),
                unfinished: !message.finished,
            }
        })
        .collect()
}

fn events(stream: &[Generated]) -> Vec<Event> {
    stream
        .iter()
        .zip(1..)
        .map(|(generated, seq)| event(seq, generated.event_type, &generated.data.to_string()))
        .collect()
}

fn event(seq: u64, event_type: &str, data: &str) -> Event {
    Event {
        seq,
        event_type: event_type.to_owned(),
        session_id: None,
        data: data.to_owned(),
        created_at_ms: 0,
    }
}

fn everything() -> Budget {
    Budget::new(MAX_MAX_TURNS, MAX_MAX_TOKENS).expect("the largest budget is valid")
}

/// Events that are malformed or not about messages: each must be skipped.
const JUNK: &[(&str, &str)] = &[
    ("message.created", "not json"),
    ("message.created", ""),
    ("message_part.updated", "\"m0\""),
    ("message.updated", r#"[{"message_id":"m0","delta":"x"}]"#),
    ("message.part.updated", r#"{"message_id":"m0","delta":5}"#),
    ("message.part.updated", r#"{"message_id":0,"delta":"x"}"#),
    (
        "message_part.updated",
        r#"{"message_id":"m0","part":{"id":"p0","text":"x","type":7}}"#,
    ),
    (
        "message_part.updated",
        r#"{"message_id":"m0","part":{"id":"p0","text":"x","text":"y"}}"#,
    ),
    (
        "message.completed",
        r#"{"info":{"id":"m0","role":["user"]}}"#,
    ),
    ("message.completed", r#"{"info":"m0"}"#),
    ("message.completed", r#"{"delta":"orphan"}"#),
    (
        "message.completed",
        r#"{"message_id":"","part":{"text":"x"}}"#,
    ),
    ("assistant.completed", r#"{"message_id":"m1""#),
    ("tool.called", r#"{"message_id":"m0","delta":"ignored"}"#),
    (
        "session.idle",
        r#"{"info":{"id":"m1","role":"user"},"part":{"id":"p9","text":"ignored"}}"#,
    ),
    ("message", r#"{"message_id":"m2","delta":"ignored"}"#),
];

// --- Arbitrary JSON -----------------------------------------------------------

fn json_key() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "info",
            "id",
            "role",
            "part",
            "text",
            "delta",
            "message_id",
            "part_id",
            "type",
            "messageID",
        ])
        .prop_map(str::to_owned),
        "[a-z_]{1,6}",
    ]
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        prop::sample::select(vec!["m1", "m2", "p1", "user", "assistant", "text", ""])
            .prop_map(Value::from),
        ".{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((json_key(), inner), 0..6)
                .prop_map(|entries| Value::Object(entries.into_iter().collect())),
        ]
    })
}

fn any_event() -> impl Strategy<Value = Event> {
    let event_type = prop::sample::select(vec![
        "message.created",
        "message.updated",
        "message_part.updated",
        "message.part.updated",
        "message.completed",
        "assistant.completed",
        "other",
    ]);
    let data = prop_oneof![
        4 => json_value().prop_map(|value| value.to_string()),
        1 => ".{0,40}",
    ];
    (0_u64..20, event_type, data).prop_map(|(seq, event_type, data)| event(seq, event_type, &data))
}

// --- Escaping -----------------------------------------------------------------

fn tagged_text() -> impl Strategy<Value = String> {
    let fragment = prop::sample::select(vec![
        "<prior-conversation>",
        "</prior-conversation>",
        "</PRIOR-CONVERSATION>",
        "< / Prior-Conversation >",
        "<prior-conversation/>",
        "<\n/prior-conversation\t>",
        "<prior-conversation x=1>",
        "prior-conversation",
        "<",
        ">",
        "/",
        " ",
        "\n",
        "&",
        "hello",
        "é",
    ]);
    prop::collection::vec(fragment, 0..12).prop_map(|fragments| fragments.concat())
}

/// A `prior-conversation` tag a reader could take for real: ASCII
/// whitespace ignored, case ignored, the name not running on.
fn has_live_tag(text: &str) -> bool {
    let squeezed: String = text
        .chars()
        .filter(|c| !c.is_ascii_whitespace())
        .collect::<String>()
        .to_ascii_lowercase();
    ["<prior-conversation", "</prior-conversation"]
        .iter()
        .any(|tag| {
            squeezed.match_indices(tag).any(|(at, _)| {
                !squeezed[at + tag.len()..]
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
            })
        })
}

fn budget() -> impl Strategy<Value = Budget> {
    (1_u32..=12, 1_u64..=200)
        .prop_map(|(turns, tokens)| Budget::new(turns, tokens).expect("generated within range"))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn a_stream_rebuilds_into_the_texts_it_streamed(spec in stream_spec()) {
        let stream = generate(&spec);
        let rebuilt = rebuild(&events(&stream), &everything());
        prop_assert_eq!(rebuilt.turns, expected(&spec, &stream));
        prop_assert_eq!(rebuilt.omitted_turns, 0);
        prop_assert!(!rebuilt.truncated);
    }

    #[test]
    fn duplicated_full_texts_change_nothing(
        spec in stream_spec(),
        copies in prop::collection::vec((any::<Index>(), any::<Index>()), 1..6),
    ) {
        let mut stream = generate(&spec);
        let want = expected(&spec, &stream);
        for (which, later) in copies {
            let fulls: Vec<usize> = (0..stream.len()).filter(|&i| stream[i].full).collect();
            if fulls.is_empty() {
                break;
            }
            let original = *which.get(&fulls);
            // A part's last full text may be repeated anywhere later; an
            // earlier one only before the part moves on.
            let at = if stream[original].last_of_part {
                original + 1 + later.index(stream.len() - original)
            } else {
                original + 1
            };
            let copy = stream[original].clone();
            stream.insert(at, copy);
        }
        prop_assert_eq!(rebuild(&events(&stream), &everything()).turns, want);
    }

    #[test]
    fn junk_anywhere_is_skipped(
        spec in stream_spec(),
        junk in prop::collection::vec((any::<Index>(), any::<Index>()), 1..12),
    ) {
        let stream = generate(&spec);
        let want = expected(&spec, &stream);
        let mut entries: Vec<(String, String)> = stream
            .iter()
            .map(|g| (g.event_type.to_owned(), g.data.to_string()))
            .collect();
        for (what, at) in junk {
            let (event_type, data) = *what.get(JUNK);
            entries.insert(at.index(entries.len() + 1), (event_type.to_owned(), data.to_owned()));
        }
        let with_junk: Vec<Event> = entries
            .iter()
            .zip(1..)
            .map(|((event_type, data), seq)| event(seq, event_type, data))
            .collect();
        prop_assert_eq!(rebuild(&with_junk, &everything()).turns, want);
    }

    #[test]
    fn a_page_read_twice_changes_nothing(
        spec in stream_spec(),
        repeats in prop::collection::vec(any::<Index>(), 1..8),
    ) {
        let stream = generate(&spec);
        let mut log = events(&stream);
        let want = rebuild(&log, &everything());
        for at in repeats {
            let i = at.index(log.len());
            let again = log[i].clone();
            log.insert(i + 1, again);
        }
        prop_assert_eq!(rebuild(&log, &everything()), want);
    }

    #[test]
    fn the_budget_keeps_the_newest_turns_that_fit(
        lengths in prop::collection::vec(0_usize..120, 0..30),
        budget in budget(),
    ) {
        let log: Vec<Event> = lengths
            .iter()
            .zip(1..)
            .map(|(&len, seq)| {
                let data = json!({"info": {"id": format!("m{seq}"), "role": "user"},
                                  "part": {"id": "p", "text": "é".repeat(len)}});
                event(seq, "message.completed", &data.to_string())
            })
            .collect();
        let all = rebuild(&log, &everything()).turns;
        prop_assert_eq!(all.len(), lengths.iter().filter(|&&len| len > 0).count());

        let kept = rebuild(&log, &budget);
        let count = kept.turns.len();
        let omitted = usize::try_from(kept.omitted_turns).expect("small");
        let max_turns = usize::try_from(budget.max_turns).expect("small");
        prop_assert_eq!(omitted + count, all.len());
        prop_assert_eq!(&kept.turns[..], &all[omitted..], "the newest turns, in order");
        prop_assert!(count <= max_turns);
        prop_assert_eq!(count == 0, all.is_empty(), "the newest turn is always kept");
        let sum: u64 = kept.turns.iter().map(Turn::token_estimate).sum();
        prop_assert_eq!(kept.token_estimate, sum);
        prop_assert!(
            kept.token_estimate <= budget.max_tokens || count == 1,
            "only a lone newest turn may pass max_tokens"
        );
        prop_assert_eq!(kept.truncated, omitted > 0);
        if omitted > 0 {
            let next_older = all[omitted - 1].token_estimate();
            prop_assert!(
                count == max_turns || kept.token_estimate + next_older > budget.max_tokens,
                "no more turns would have fit"
            );
        }
    }

    #[test]
    fn arbitrary_events_never_panic(log in prop::collection::vec(any_event(), 0..40)) {
        let rebuilt = rebuild(&log, &Budget::default());
        prop_assert!(rebuilt.turns.iter().all(|turn| !turn.content.is_empty()));
        let _ = dispatch_prompt(&rebuilt, None);
        let _ = dispatch_prompt(&rebuilt, Some("next"));
    }

    #[test]
    fn no_turn_can_break_out_of_the_wrapper(
        turns in prop::collection::vec((tagged_text(), tagged_text(), any::<bool>()), 1..6),
    ) {
        let conversation = PriorConversation {
            turns: turns
                .into_iter()
                .map(|(role, content, unfinished)| Turn { role, content, unfinished })
                .collect(),
            ..PriorConversation::default()
        };
        let prompt = dispatch_prompt(&conversation, Some("NEWEST"));
        let inner = prompt
            .strip_prefix("<prior-conversation>\n")
            .and_then(|rest| rest.strip_suffix("</prior-conversation>\n\nNEWEST"));
        prop_assert!(inner.is_some(), "framing: {:?}", prompt);
        let inner = inner.unwrap_or_default();
        prop_assert!(!has_live_tag(inner), "live tag in {:?}", inner);
    }

    #[test]
    fn escaping_only_rewrites_tag_brackets(text in tagged_text()) {
        let escaped = escape_wrapper_tags(&text);
        prop_assert!(!has_live_tag(&escaped), "{:?}", escaped);
        prop_assert_eq!(escaped.replace("&lt;", "<").replace("&gt;", ">"), text);
    }

    #[test]
    fn escaping_leaves_text_without_tags_alone(text in ".{0,60}") {
        prop_assume!(!text.to_ascii_lowercase().contains("prior-conversation"));
        prop_assert_eq!(escape_wrapper_tags(&text), text);
    }

    #[test]
    fn the_token_estimate_is_a_quarter_of_the_chars_rounded_up(a in ".{0,50}", b in ".{0,50}") {
        let chars = u64::try_from(a.chars().count()).expect("small");
        prop_assert_eq!(estimate_tokens(&a), chars.div_ceil(4));
        let joined = estimate_tokens(&format!("{a}{b}"));
        prop_assert!(joined <= estimate_tokens(&a) + estimate_tokens(&b));
        prop_assert!(estimate_tokens(&a) + estimate_tokens(&b) <= joined + 1);
    }
}
