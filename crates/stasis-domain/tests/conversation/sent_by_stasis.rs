//! What stasis itself sent into the runtime shows once: the runtime's copy of a delivered inbox
//! message, of a new session's first prompt, and of a cut reply's continuation is left out,
//! since the log holds what they carry where it happened.

use crate::support::{log, turn, turns, user_message};
use serde_json::{Value, json};

/// kilo's user message `id` saying `text`, as the sidecar forwards it.
fn kilo_user(id: &str, text: &str) -> [(&'static str, Value); 2] {
    [
        (
            "message.updated",
            json!({"info": {"id": id, "role": "user"}}),
        ),
        (
            "message.part.updated",
            json!({"part": {"id": format!("{id}-p"), "messageID": id, "type": "text", "text": text}}),
        ),
    ]
}

/// kilo's finished assistant reply `id` saying `text`.
fn kilo_reply(id: &str, text: &str) -> [(&'static str, Value); 2] {
    [
        (
            "message.part.updated",
            json!({"part": {"id": format!("{id}-p"), "messageID": id, "type": "text", "text": text,
                            "time": {"start": 1, "end": 2}}}),
        ),
        (
            "message.updated",
            json!({"info": {"id": id, "role": "assistant", "finish": "stop", "time": {"completed": 3}}}),
        ),
    ]
}

#[test]
fn a_delivered_inbox_message_is_one_turn() {
    let mut entries = vec![
        user_message("stasis-user-1", "The board meets at noon."),
        (
            "stasis.inbox.delivered",
            json!({"seq": 1, "session_id": "s", "message_id": "msg_2", "via": "message", "attempt": 0}),
        ),
    ];
    entries.extend(kilo_user("msg_2", "The board meets at noon."));
    entries.extend(kilo_reply("msg_3", "Noted."));
    assert_eq!(
        turns(&log(&entries)),
        vec![
            turn("user", "The board meets at noon."),
            turn("assistant", "Noted.")
        ]
    );
}

#[test]
fn a_new_sessions_first_prompt_and_a_continuation_are_left_out() {
    let mut entries = vec![user_message("stasis-user-1", "Write the summary")];
    entries.push((
        "message.part.delta",
        json!({"messageID": "msg_1", "partID": "p", "field": "text", "delta": "The release"}),
    ));
    entries.push((
        "message.updated",
        json!({"info": {"id": "msg_1", "role": "assistant"}}),
    ));
    entries.push((
        "stasis.resume.session_prompt",
        json!({"session_id": "s2", "message_id": "msg_5", "through_seq": 3, "text": "<prior-conversation>…"}),
    ));
    entries.extend(kilo_user(
        "msg_5",
        "<prior-conversation>\nuser: Write the summary\n</prior-conversation>",
    ));
    entries.push((
        "stasis.resume.cut_reply",
        json!({"session_id": "s2", "user_message_id": "stasis-user-1", "cut_message_id": "msg_1",
               "action": "continue", "message_id": "msg_6", "text": "[stasis] Your previous reply was cut off"}),
    ));
    entries.extend(kilo_user(
        "msg_6",
        "[stasis] Your previous reply was cut off… <cut-reply>The release</cut-reply>",
    ));
    entries.extend(kilo_reply("msg_7", "went out on time."));
    assert_eq!(
        turns(&log(&entries)),
        vec![
            turn("user", "Write the summary"),
            // Taken up again by the continuation's reply: no longer unfinished.
            turn("assistant", "The release"),
            turn("assistant", "went out on time."),
        ]
    );
}

#[test]
fn a_record_without_a_message_id_hides_nothing() {
    let mut entries = vec![(
        "stasis.resume.cut_reply",
        json!({"action": "nothing", "message_id": null}),
    )];
    entries.push(("stasis.inbox.delivered", json!([1, 2])));
    entries.extend(kilo_user("msg_1", "Hello"));
    assert_eq!(turns(&log(&entries)), vec![turn("user", "Hello")]);
}
