//! Arbitrary JSON: any events at all never make the rebuild panic.

use crate::stream::event;
use proptest::prelude::*;
use serde_json::Value;
use stasis_domain::conversation::*;
use stasis_domain::event_log::Event;

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
            "partID",
            "field",
            "time",
            "end",
            "completed",
            "finish",
            "error",
            "synthetic",
            "ignored",
            "tool",
            "state",
            "status",
            "title",
            "input",
            "description",
            "command",
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
        prop::sample::select(vec![
            "m1",
            "m2",
            "p1",
            "user",
            "assistant",
            "text",
            "tool",
            "reasoning",
            "completed",
            "",
        ])
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
    // Every type the rebuild reads, and one it ignores.
    let mut types = MESSAGE_EVENT_TYPES.to_vec();
    types.push("other");
    let event_type = prop::sample::select(types);
    let data = prop_oneof![
        4 => json_value().prop_map(|value| value.to_string()),
        1 => ".{0,40}",
    ];
    (0_u64..20, event_type, data).prop_map(|(seq, event_type, data)| event(seq, event_type, &data))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn arbitrary_events_never_panic(log in prop::collection::vec(any_event(), 0..40)) {
        let rebuilt = rebuild(&log, &Budget::default());
        prop_assert!(rebuilt.turns.iter().all(|turn| !turn.content.is_empty()));
        let _ = dispatch_prompt(&rebuilt, None);
        let _ = dispatch_prompt(&rebuilt, Some("next"));
    }
}
