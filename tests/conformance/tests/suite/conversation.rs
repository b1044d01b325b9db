//! The conversation rebuilt from an agent's streamed message events:
//! `message.created`, `message_part.updated` deltas and full texts,
//! `message.completed` and `assistant.completed` fold into `{role, content}`
//! turns in log order; the newest turns are kept within `max_turns` and
//! `max_tokens`, the rest counted in `omitted_turns`. Malformed events are
//! skipped, never fatal.
#![allow(
    clippy::panic,
    reason = "a conformance case fails loudly, naming what broke"
)]

use stasis_conformance::town::{
    Agent, assert_keys, assert_not_allowed, delta, event, streamed, streamed_start, turn, turns,
    user_message,
};
use stasis_conformance::{
    Value, assert_error, assert_message_names, call, foreign_token, json, num, town_token,
    unique_id,
};

/// A realistic exchange: two user messages, each answered by a streamed
/// assistant reply. Returns the turns it should rebuild to.
fn chat(agent: &Agent, session: Option<&str>) -> Vec<Value> {
    let mut all = user_message(session, "msg-u1", "What is left on the auth refactor?");
    all.extend(streamed(
        session,
        "msg-a1",
        "assistant",
        &[
            "Two ",
            "things: ",
            "the token ",
            "refresh path ",
            "and its tests.",
        ],
    ));
    all.extend(user_message(session, "msg-u2", "Start with the tests."));
    all.extend(streamed(
        session,
        "msg-a2",
        "assistant",
        &["On it", " — writing", " them now."],
    ));
    agent.log.append(Value::Array(all));
    vec![
        turn("user", "What is left on the auth refactor?"),
        turn(
            "assistant",
            "Two things: the token refresh path and its tests.",
        ),
        turn("user", "Start with the tests."),
        turn("assistant", "On it — writing them now."),
    ]
}

#[test]
fn streamed_events_rebuild_into_turns() {
    let agent = Agent::fresh("conversation");
    let expected = chat(&agent, Some("s1"));
    let conversation = agent.conversation("");
    assert_keys(
        &conversation,
        &["turns", "omitted_turns", "token_estimate", "truncated"],
    );
    assert_eq!(turns(&conversation), expected);
    assert_eq!(conversation["omitted_turns"], json!(0));
    assert_eq!(conversation["truncated"], json!(false));
    assert!(num(&conversation, "token_estimate") > 0, "{conversation}");
}

#[test]
fn an_agent_with_no_message_events_has_an_empty_conversation() {
    let agent = Agent::fresh("conversation-empty");
    let empty = json!({"turns": [], "omitted_turns": 0, "token_estimate": 0, "truncated": false});
    assert_eq!(agent.conversation(""), empty);
    agent
        .log
        .append(json!([{"type": "tool.called", "data": {"name": "bash"}}]));
    assert_eq!(
        agent.conversation(""),
        empty,
        "other event types are ignored"
    );
}

#[test]
fn deltas_concatenate_in_seq_order_across_batches() {
    let agent = Agent::fresh("conversation-batches");
    let session = Some("s1");
    agent
        .log
        .append(json!([streamed_start(session, "m1", "assistant")]));
    for piece in ["Hel", "lo, ", "wor", "ld"] {
        agent
            .log
            .append(json!([delta(session, "m1", "assistant", piece)]));
    }
    agent.log.append(json!([event(
        "message.completed",
        session,
        json!({"info": {"id": "m1", "role": "assistant"}})
    )]));
    assert_eq!(
        turns(&agent.conversation("")),
        vec![turn("assistant", "Hello, world")]
    );
}

#[test]
fn a_parts_latest_full_text_wins_over_earlier_deltas() {
    let agent = Agent::fresh("conversation-full-text");
    let info = json!({"id": "m1", "role": "assistant"});
    let full = |text: &str| {
        event(
            "message_part.updated",
            None,
            json!({"info": info, "part": {"id": "m1-part", "type": "text", "text": text}}),
        )
    };
    agent.log.append(json!([
        streamed_start(None, "m1", "assistant"),
        delta(None, "m1", "assistant", "draf"),
        delta(None, "m1", "assistant", "t"),
        full("first full text"),
        full("the final text"),
        event("message.completed", None, json!({ "info": info })),
    ]));
    assert_eq!(
        turns(&agent.conversation("")),
        vec![turn("assistant", "the final text")]
    );
}

#[test]
fn message_id_role_and_the_dotted_part_type_are_read_too() {
    let agent = Agent::fresh("conversation-variants");
    agent.log.append(json!([
        {"type": "message.created", "data": {"message_id": "m1", "role": "user"}},
        {"type": "message.part.updated",
         "data": {"message_id": "m1", "role": "user", "part": {"id": "p1", "text": "Plan the sprint"}}},
        {"type": "message.completed", "data": {"message_id": "m1", "role": "user"}},
        {"type": "message.created", "data": {"message_id": "m2", "role": "assistant"}},
        {"type": "message_part.updated",
         "data": {"message_id": "m2", "role": "assistant", "part": {"id": "p2"}, "delta": "Sprint "}},
        {"type": "message.updated", "data": {"message_id": "m2", "role": "assistant"}},
        {"type": "message.part.updated",
         "data": {"message_id": "m2", "role": "assistant", "part": {"id": "p2"}, "delta": "planned."}},
        {"type": "assistant.completed", "data": {"message_id": "m2", "role": "assistant"}},
    ]));
    assert_eq!(
        turns(&agent.conversation("")),
        vec![
            turn("user", "Plan the sprint"),
            turn("assistant", "Sprint planned.")
        ]
    );
}

#[test]
fn two_parts_of_one_message_both_appear_in_order() {
    let agent = Agent::fresh("conversation-parts");
    let info = json!({"id": "m1", "role": "assistant"});
    let part = |id: &str, text: &str| {
        event(
            "message_part.updated",
            None,
            json!({"info": info, "part": {"id": id, "type": "text", "text": text}}),
        )
    };
    agent.log.append(json!([
        streamed_start(None, "m1", "assistant"),
        part("p1", "First paragraph."),
        part("p2", "Second paragraph."),
        event("message.completed", None, json!({ "info": info })),
    ]));
    let rebuilt = turns(&agent.conversation(""));
    assert_eq!(rebuilt.len(), 1, "one message, one turn: {rebuilt:?}");
    let content = rebuilt[0]["content"].as_str().unwrap_or_default();
    let first = content.find("First paragraph.");
    let second = content.find("Second paragraph.");
    assert!(
        first.is_some() && second.is_some() && first < second,
        "both parts, in order: {content:?}"
    );
}

#[test]
fn an_unfinished_last_message_is_kept_and_marked() {
    let agent = Agent::fresh("conversation-unfinished");
    let mut all = user_message(None, "u1", "Summarise the logs");
    all.push(streamed_start(None, "a1", "assistant"));
    all.push(delta(None, "a1", "assistant", "The logs show three err"));
    agent.log.append(Value::Array(all));
    assert_eq!(
        turns(&agent.conversation("")),
        vec![
            turn("user", "Summarise the logs"),
            json!({"role": "assistant", "content": "The logs show three err", "unfinished": true}),
        ]
    );
}

#[test]
fn malformed_message_events_are_skipped() {
    let agent = Agent::fresh("conversation-malformed");
    let mut all = user_message(None, "u1", "Hello");
    all.extend([
        json!({"type": "message.created", "data": 5}),
        json!({"type": "message_part.updated", "data": "not an object"}),
        json!({"type": "message_part.updated", "data": {"delta": "no message id"}}),
        json!({"type": "message_part.updated", "data": {"info": {"id": 7}, "delta": 3}}),
        json!({"type": "message.completed"}),
        json!({"type": "assistant.completed", "data": [1, 2]}),
    ]);
    all.extend(streamed(None, "a1", "assistant", &["Hi ", "there"]));
    agent.log.append(Value::Array(all));
    assert_eq!(
        turns(&agent.conversation("")),
        vec![turn("user", "Hello"), turn("assistant", "Hi there")]
    );
}

#[test]
fn session_id_narrows_the_conversation_to_one_session() {
    let agent = Agent::fresh("conversation-session");
    agent.log.append(Value::Array(user_message(
        Some("old"),
        "u1",
        "From the old session",
    )));
    let expected = chat(&agent, Some("new"));
    assert_eq!(turns(&agent.conversation("session_id=new")), expected);
    assert_eq!(
        turns(&agent.conversation("session_id=old")),
        vec![turn("user", "From the old session")]
    );
    assert_eq!(
        turns(&agent.conversation("")).len(),
        5,
        "all sessions by default"
    );
    assert_eq!(
        turns(&agent.conversation("session_id=none")),
        Vec::<Value>::new()
    );
}

#[test]
fn max_turns_keeps_the_newest_and_counts_the_rest() {
    let agent = Agent::fresh("conversation-max-turns");
    let expected = chat(&agent, None);
    let one = agent.conversation("max_turns=1");
    assert_eq!(turns(&one), vec![expected[3].clone()]);
    assert_eq!(one["omitted_turns"], json!(3));
    assert_eq!(one["truncated"], json!(true));
    let three = agent.conversation("max_turns=3");
    assert_eq!(turns(&three), expected[1..].to_vec());
    assert_eq!(three["omitted_turns"], json!(1));
    let all = agent.conversation("max_turns=1000");
    assert_eq!(turns(&all), expected);
    assert_eq!(all["omitted_turns"], json!(0));
    assert_eq!(all["truncated"], json!(false));
}

#[test]
fn the_default_budget_keeps_fifty_turns() {
    let agent = Agent::fresh("conversation-default-turns");
    let all: Vec<Value> = (0..60)
        .flat_map(|n| user_message(None, &format!("u{n}"), &format!("message {n}")))
        .collect();
    agent.log.append(Value::Array(all));
    let conversation = agent.conversation("");
    let kept = turns(&conversation);
    assert_eq!(kept.len(), 50, "{conversation}");
    assert_eq!(conversation["omitted_turns"], json!(10));
    assert_eq!(kept[0], turn("user", "message 10"));
    assert_eq!(kept[49], turn("user", "message 59"));
}

#[test]
fn max_tokens_keeps_the_newest_turns_within_the_estimate() {
    let agent = Agent::fresh("conversation-max-tokens");
    let expected = chat(&agent, None);
    let full = agent.conversation("");
    let estimate = num(&full, "token_estimate");
    assert_eq!(
        agent.conversation("")["token_estimate"],
        json!(estimate),
        "the estimate is consistent"
    );
    let exact = agent.conversation(&format!("max_tokens={estimate}"));
    assert_eq!(
        turns(&exact),
        expected,
        "a budget equal to the estimate keeps all"
    );
    let tight = agent.conversation(&format!("max_tokens={}", estimate - 1));
    let kept = turns(&tight);
    let omitted = num(&tight, "omitted_turns");
    assert!(omitted >= 1, "one token less leaves a turn out: {tight}");
    assert_eq!(kept.len() as u64 + omitted, 4);
    assert_eq!(
        kept,
        expected[expected.len() - kept.len()..].to_vec(),
        "the newest"
    );
    assert!(num(&tight, "token_estimate") < estimate);
    assert_eq!(tight["truncated"], json!(true));
}

#[test]
fn bad_budget_parameters_are_invalid_requests() {
    let agent = Agent::fresh("conversation-bad-params");
    chat(&agent, None);
    for (query, field) in [
        ("max_turns=0", "max_turns"),
        ("max_turns=1001", "max_turns"),
        ("max_turns=-1", "max_turns"),
        ("max_turns=x", "max_turns"),
        ("max_turns=1.5", "max_turns"),
        ("max_tokens=0", "max_tokens"),
        ("max_tokens=1000001", "max_tokens"),
        ("max_tokens=lots", "max_tokens"),
    ] {
        let reply = agent.conversation_reply(query);
        assert_eq!(reply.status, 400, "query {query:?}: {}", reply.text());
        let error = assert_error(&reply, 400, "invalid_request");
        assert_message_names(&error, field);
    }
    assert_error(
        &agent.conversation_reply("session_id=a%20b"),
        400,
        "invalid_id",
    );
}

#[test]
fn the_bounds_of_the_budget_are_accepted() {
    let agent = Agent::fresh("conversation-bounds");
    chat(&agent, None);
    assert_eq!(
        turns(&agent.conversation("max_turns=1000&max_tokens=1000000")).len(),
        4
    );
    let smallest = agent.conversation("max_turns=1&max_tokens=1");
    assert!(turns(&smallest).len() <= 1, "{smallest}");
}

#[test]
fn other_methods_are_not_allowed() {
    let agent = Agent::fresh("conversation-methods");
    for method in ["POST", "PUT", "DELETE"] {
        let reply = call(method, &agent.path("/conversation"))
            .json(&json!({}))
            .send();
        assert_not_allowed(&reply, &["GET"]);
    }
}

#[test]
fn wrong_or_foreign_tokens_are_refused() {
    let agent = Agent::fresh("conversation-auth");
    chat(&agent, None);
    let path = agent.path("/conversation");
    let foreign = call("GET", &path).token(&foreign_token()).send();
    assert_error(&foreign, 401, "unauthorized");
    let elsewhere = call("GET", &path)
        .token(&town_token(&unique_id("elsewhere")))
        .send();
    assert_error(&elsewhere, 403, "forbidden");
    let own = call("GET", &path)
        .token(&town_token(&agent.log.town))
        .send();
    assert_eq!(turns(&own.ok()).len(), 4);
}
