//! kilo's own events: whatever the split into deltas, the interleaving, the
//! `sync` twins, repeated pages, removals or junk, the rebuild gives back
//! what kilo finished, and what it was still streaming marked unfinished.

use crate::kilo_spec::{Removed, expected, kilo_spec};
use crate::kilo_stream::{TwinForm, entries, generate, logged};
use crate::spec::text;
use crate::stream::{everything, pieces};
use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::json;
use stasis_domain::conversation::*;

/// Malformed or unrelated events among kilo's: each must be skipped.
const JUNK: &[(&str, &str)] = &[
    (
        "message.part.delta",
        r#"{"messageID":"msg_0","partID":"prt_0_0","delta":7}"#,
    ),
    (
        "message.part.delta",
        r#"{"partID":"prt_0_0","field":"text","delta":"no message"}"#,
    ),
    (
        "message.part.delta",
        r#"{"messageID":"msg_0","partID":"prt_0_0","field":"input","delta":"other field"}"#,
    ),
    ("message.part.delta", r#"["msg_0","prt_0_0","x"]"#),
    ("message.updated", r#"{"info":{"id":"msg_0","time":5}}"#),
    (
        "message.updated",
        r#"{"info":{"id":"msg_0","role":"user","synthetic":"x"}"#,
    ),
    (
        "message.part.updated",
        r#"{"part":{"id":"prt_0_0","messageID":"msg_0","text":"x","time":{"end":[1]},"synthetic":"yes"}}"#,
    ),
    (
        "message.part.updated",
        r#"{"part":{"id":"prt_0_0","messageID":"msg_0","type":"tool","tool":5}}"#,
    ),
    ("message.removed", r#"{"sessionID":"ses_1"}"#),
    ("message.removed", r#"{"messageID":4}"#),
    ("message.part.removed", r#"{"messageID":"msg_0"}"#),
    (
        "sync",
        r#"{"type":"sync","syncEvent":{"type":"message.removed.1","data":{"messageID":"msg_0"}}}"#,
    ),
    ("session.idle", r#"{"sessionID":"ses_1"}"#),
    ("message.part.updated", ""),
];

fn twin_forms() -> impl Strategy<Value = Vec<TwinForm>> {
    let form = prop_oneof![Just(TwinForm::AsSent), Just(TwinForm::Unwrapped)];
    prop::collection::vec(form, 1..8)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn a_kilo_stream_rebuilds_into_what_kilo_finished(spec in kilo_spec()) {
        let stream = generate(&spec);
        let rebuilt = rebuild(&logged(&entries(&stream, &[])), &everything());
        prop_assert_eq!(rebuilt.turns, expected(&spec, &stream, &Removed::default()));
    }

    #[test]
    fn any_split_into_deltas_with_or_without_a_final_update_rebuilds_the_text(
        streamed in text(),
        cuts in prop::collection::vec(any::<Index>(), 0..12),
        start_after in any::<Index>(),
        ended in any::<bool>(),
    ) {
        let part = |text: &str, time: serde_json::Value| json!({"part": {"id": "p", "messageID": "m",
            "type": "text", "text": text, "time": time}}).to_string();
        let mut log: Vec<(String, String)> = pieces(&streamed, &cuts)
            .iter()
            .map(|piece| ("message.part.delta".to_owned(),
                json!({"messageID": "m", "partID": "p", "field": "text", "delta": piece}).to_string()))
            .collect();
        let at = start_after.index(log.len() + 1);
        log.insert(at, ("message.part.updated".to_owned(), part("", json!({"start": 1}))));
        if ended {
            log.push(("message.part.updated".to_owned(), part(&streamed, json!({"start": 1, "end": 2}))));
        }
        log.push(("message.updated".to_owned(),
            json!({"info": {"id": "m", "role": "assistant", "time": {"created": 1, "completed": 2}}}).to_string()));
        let turns = rebuild(&logged(&log), &everything()).turns;
        let want = Turn::new("assistant", streamed, !ended);
        prop_assert_eq!(turns, vec![want]);
    }

    #[test]
    fn sync_twins_and_repeated_pages_change_nothing(
        spec in kilo_spec(),
        twins in twin_forms(),
        repeats in prop::collection::vec(any::<Index>(), 0..8),
    ) {
        let stream = generate(&spec);
        let want = rebuild(&logged(&entries(&stream, &[])), &everything());
        let mut log = logged(&entries(&stream, &twins));
        for at in repeats {
            let i = at.index(log.len());
            let again = log[i].clone();
            log.insert(i + 1, again);
        }
        prop_assert_eq!(rebuild(&log, &everything()), want);
    }

    #[test]
    fn a_removed_message_or_part_is_gone(
        spec in kilo_spec(),
        target in any::<Index>(),
        whole_message in any::<bool>(),
        at in any::<Index>(),
    ) {
        let stream = generate(&spec);
        let message = target.index(spec.messages.len());
        let mut removed = Removed::default();
        let removal = if whole_message {
            removed.messages.insert(message);
            ("message.removed", json!({"sessionID": "ses_1", "messageID": format!("msg_{message}")}))
        } else {
            let part = target.index(spec.messages[message].parts.len());
            removed.parts.insert((message, part));
            ("message.part.removed", json!({"sessionID": "ses_1", "messageID": format!("msg_{message}"),
                "partID": format!("prt_{message}_{part}")}))
        };
        // Anywhere after the message showed up (kilo removes what exists).
        let shown = stream.iter().position(|e| e.message == message).unwrap_or_default();
        let mut log = entries(&stream, &[]);
        let at = shown + 1 + at.index(log.len() - shown);
        log.insert(at, (removal.0.to_owned(), removal.1.to_string()));
        let rebuilt = rebuild(&logged(&log), &everything());
        prop_assert_eq!(rebuilt.turns, expected(&spec, &stream, &removed));
    }

    #[test]
    fn junk_among_kilo_events_is_skipped(
        spec in kilo_spec(),
        junk in prop::collection::vec((any::<Index>(), any::<Index>()), 1..12),
    ) {
        let stream = generate(&spec);
        let want = expected(&spec, &stream, &Removed::default());
        let mut log = entries(&stream, &[]);
        for (what, at) in junk {
            let (event_type, data) = *what.get(JUNK);
            log.insert(at.index(log.len() + 1), (event_type.to_owned(), data.to_owned()));
        }
        prop_assert_eq!(rebuild(&logged(&log), &everything()).turns, want);
    }
}
