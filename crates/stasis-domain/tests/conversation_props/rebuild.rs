//! The rebuild gives back exactly the texts streamed, whatever the
//! interleaving, duplicated full texts, junk or repeated pages.

use crate::spec::{expected, stream_spec};
use crate::stream::{event, events, everything, generate};
use proptest::prelude::*;
use proptest::sample::Index;
use stasis_domain::conversation::*;
use stasis_domain::event_log::Event;

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
}
