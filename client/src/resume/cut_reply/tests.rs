//! The cut reply's rules on kilo's and the log's shapes of a session.

use super::*;

fn messages(json: &str) -> Vec<KiloMessage> {
    serde_json::from_str(json).expect("kilo messages")
}

/// Two finished turns (the second with a tool call), then a third whose reply was cut
/// (kilo after a SIGKILL: `""` text, no `completed`, no `finish`).
const CUT: &str = r#"[
    {"info":{"id":"msg_1","role":"user"},"parts":[{"type":"text","text":"Hi"}]},
    {"info":{"id":"msg_2","role":"assistant","time":{"created":1,"completed":2},"finish":"stop"},"parts":[{"type":"text","text":"Hello"}]},
    {"info":{"id":"msg_3","role":"user"},"parts":[{"type":"text","text":"Run it"}]},
    {"info":{"id":"msg_4","role":"assistant","time":{"created":3,"completed":4},"finish":"tool-calls"},"parts":[{"type":"tool"}]},
    {"info":{"id":"msg_5","role":"assistant","time":{"created":5,"completed":6},"finish":"stop"},"parts":[{"type":"text","text":"Done"}]},
    {"info":{"id":"msg_6","role":"user"},"parts":[{"type":"text","text":"Summarise"}]},
    {"info":{"id":"msg_7","role":"assistant","time":{"created":7}},"parts":[{"type":"step-start"},{"type":"text","text":""}]}
]"#;

fn logged(seq: u64, id: &str, role: &str, extra: &str) -> LogEvent {
    let data = format!(r#"{{"info":{{"id":"{id}","role":"{role}"{extra}}}}}"#);
    LogEvent {
        seq,
        kind: "message.updated".into(),
        data: serde_json::value::RawValue::from_string(data).expect("json"),
    }
}

/// What the log saw of the same session: kilo's events up to the cut.
fn log_of_cut() -> Vec<Seen> {
    seen_messages(&[
        logged(1, "msg_1", "user", ""),
        logged(2, "msg_2", "assistant", r#","time":{"created":1}"#),
        logged(3, "msg_2", "assistant", r#","finish":"stop""#),
        logged(
            4,
            "msg_2",
            "assistant",
            r#","time":{"created":1,"completed":2}"#,
        ),
        logged(5, "msg_3", "user", ""),
        logged(
            6,
            "msg_4",
            "assistant",
            r#","finish":"tool-calls","time":{"completed":4}"#,
        ),
        logged(7, "msg_5", "assistant", r#","finish":"stop""#),
        logged(8, "msg_6", "user", ""),
        logged(9, "msg_7", "assistant", r#","time":{"created":7}"#),
    ])
}

#[test]
fn the_log_sees_each_message_once_finished_when_any_event_says_so() {
    let seen = log_of_cut();
    let states: Vec<(&str, bool)> = seen.iter().map(|s| (s.id.as_str(), s.finished)).collect();
    assert_eq!(
        states,
        [
            ("msg_1", false),
            ("msg_2", true),
            ("msg_3", false),
            ("msg_4", false),
            ("msg_5", true),
            ("msg_6", false),
            ("msg_7", false)
        ]
    );
    assert_eq!(seen[5].first_seq, 8);
}

#[test]
fn the_unfinished_reply_to_the_last_user_message_is_cut() {
    let cut = find_cut(&messages(CUT), &log_of_cut(), false).expect("a cut reply");
    assert_eq!(
        cut,
        Cut {
            user_message_id: "msg_6".into(),
            user_text: Some("Summarise".into()),
            cut_message_id: Some("msg_7".into()),
            user_seq: Some(8),
        }
    );
    assert_eq!(cut.key(), "msg_7");
}

#[test]
fn a_restored_database_older_than_the_log_still_shows_the_cut() {
    // The snapshot was taken after turn 2: kilo lacks the question and the cut reply.
    let mut kilo = messages(CUT);
    kilo.truncate(5);
    let cut = find_cut(&kilo, &log_of_cut(), false).expect("a cut reply");
    assert_eq!(cut.user_message_id, "msg_6");
    assert_eq!(cut.user_text, None, "kilo lost the question");
    assert_eq!(cut.cut_message_id.as_deref(), Some("msg_7"));
    // The snapshot holds the question but not the reply.
    kilo = messages(CUT);
    kilo.truncate(6);
    let cut = find_cut(&kilo, &log_of_cut(), false).expect("a cut reply");
    assert_eq!(cut.user_text.as_deref(), Some("Summarise"));
}

#[test]
fn a_running_turn_is_not_cut() {
    assert_eq!(find_cut(&messages(CUT), &log_of_cut(), true), None);
}

#[test]
fn a_reply_finished_in_kilo_or_in_the_log_leaves_nothing_cut() {
    let mut kilo = messages(CUT);
    kilo.truncate(5);
    let mut log = log_of_cut();
    log.truncate(5);
    assert_eq!(find_cut(&kilo, &log, false), None);
    // The log saw the reply finish although the restored database did not.
    let mut log = log_of_cut();
    log[6].finished = true;
    assert_eq!(find_cut(&messages(CUT), &log, false), None);
    // A reply that failed is over too.
    let failed = messages(
        r#"[{"info":{"id":"msg_1","role":"user"},"parts":[]},
            {"info":{"id":"msg_2","role":"assistant","error":{"name":"MessageAbortedError"}},"parts":[]}]"#,
    );
    assert_eq!(find_cut(&failed, &[], false), None);
    assert_eq!(find_cut(&[], &[], false), None);
}

#[test]
fn a_turn_stopped_after_its_tool_call_or_before_any_reply_is_cut() {
    let mut all = messages(CUT);
    all.truncate(4);
    let cut = find_cut(&all, &[], false).expect("cut after the tool call");
    assert_eq!(cut.cut_message_id.as_deref(), Some("msg_4"));
    all.truncate(3);
    let cut = find_cut(&all, &[], false).expect("cut before any reply");
    assert_eq!(cut.user_message_id, "msg_3");
    assert_eq!(cut.cut_message_id, None);
    assert_eq!(cut.key(), "msg_3");
}

#[test]
fn the_continuation_carries_the_streamed_text_and_a_lost_question() {
    let text = continuation_text("The release went out", None);
    assert!(text.contains("<cut-reply>\nThe release went out\n</cut-reply>"));
    assert!(text.contains("cut off by a restart"));
    assert!(!text.contains("<message>"));
    let text = continuation_text("The release went out", Some("Summarise"));
    assert!(text.contains("<message>\nSummarise\n</message>"));
    assert!(continuation_text("  ", None).contains("None of your reply was saved"));
}
