//! Appending events: seqs start at 1 and run on without gaps across batches,
//! `data` of any JSON type comes back exactly, and every malformed body is
//! refused with the documented code and changes nothing.

use stasis_conformance::{
    AgentLog, Value, assert_error, assert_message_names, batch, call, events, json, now_ms, num,
    seqs,
};

#[test]
fn seqs_start_at_one_and_are_contiguous_across_batches() {
    let log = AgentLog::fresh("contiguous");
    let first = log.append(batch("a", 3));
    assert_eq!(
        first,
        json!({"first_seq": 1, "last_seq": 3, "duplicate": false})
    );
    let second = log.append(batch("b", 2));
    assert_eq!(
        second,
        json!({"first_seq": 4, "last_seq": 5, "duplicate": false})
    );
    let third = log.append(batch("c", 1));
    assert_eq!(
        third,
        json!({"first_seq": 6, "last_seq": 6, "duplicate": false})
    );
    let page = log.read("");
    assert_eq!(seqs(&page), vec![1, 2, 3, 4, 5, 6]);
    let kinds: Vec<Value> = events(&page).iter().map(|e| e["type"].clone()).collect();
    assert_eq!(
        kinds,
        vec![
            json!("a"),
            json!("a"),
            json!("a"),
            json!("b"),
            json!("b"),
            json!("c")
        ]
    );
    let order: Vec<Value> = events(&page)
        .iter()
        .map(|e| e["data"]["i"].clone())
        .collect();
    assert_eq!(
        order,
        vec![json!(0), json!(1), json!(2), json!(0), json!(1), json!(0)]
    );
}

#[test]
fn data_of_every_json_type_round_trips_exactly() {
    let log = AgentLog::fresh("round-trip");
    let values = vec![
        json!({"nested": {"deep": [1, {"x": null}], "empty": {}}, "list": []}),
        json!([1, "two", 3.5, true, false, null, [], {}]),
        json!("plain"),
        json!(
            "unicode é ß 漢字 🦀 and escapes \" \\ / \n \r \t \u{0008} \u{000c} \u{0000} \u{001f} \u{2028}"
        ),
        json!(""),
        json!(0),
        json!(-42),
        json!(9_007_199_254_740_991_u64),
        json!(3.25),
        json!(-0.000_125),
        json!(1.5e300),
        json!(true),
        json!(false),
        Value::Null,
    ];
    let mut deep = json!("bottom");
    for level in 0..40 {
        deep = if level % 2 == 0 {
            json!([deep])
        } else {
            json!({"k": deep})
        };
    }
    let mut all = values.clone();
    all.push(deep);
    let batch: Vec<Value> = all
        .iter()
        .map(|d| json!({"type": "t", "data": d}))
        .collect();
    log.append(Value::Array(batch));
    let read: Vec<Value> = events(&log.read(""))
        .iter()
        .map(|e| e["data"].clone())
        .collect();
    assert_eq!(read, all);
}

#[test]
fn missing_data_reads_back_as_null_and_session_is_optional() {
    let log = AgentLog::fresh("missing-data");
    log.append(json!([{"type": "bare"}, {"type": "with", "session_id": "s1", "data": {"a": 1}}]));
    let page = log.read("");
    let events = events(&page);
    assert_eq!(events[0]["data"], Value::Null);
    assert_eq!(events[0]["session_id"], Value::Null);
    assert_eq!(events[1]["session_id"], json!("s1"));
    assert_eq!(events[1]["data"], json!({"a": 1}));
}

#[test]
fn a_read_event_has_the_documented_fields() {
    let log = AgentLog::fresh("event-shape");
    let before = now_ms();
    log.append(json!([{"type": "x.y", "session_id": "s", "data": [1]}]));
    let after = now_ms();
    let event = events(&log.read(""))[0].clone();
    assert_eq!(event["seq"], json!(1));
    assert_eq!(event["type"], json!("x.y"));
    assert_eq!(event["session_id"], json!("s"));
    assert_eq!(event["data"], json!([1]));
    let created = num(&event, "created_at");
    // Milliseconds since the epoch, allowing a minute of clock skew.
    assert!(
        created + 60_000 >= before && created <= after + 60_000,
        "created_at {created} should be a time in ms near {before}..{after}"
    );
}

#[test]
fn unknown_fields_are_ignored() {
    let log = AgentLog::fresh("unknown-fields");
    let body = json!({"events": [{"type": "x", "data": 1, "colour": "red"}], "extra": {"y": 2}});
    assert_eq!(log.post(&body).ok()["first_seq"], json!(1));
    assert_eq!(events(&log.read(""))[0]["data"], json!(1));
}

#[test]
fn a_type_of_256_bytes_is_accepted_and_257_refused() {
    let log = AgentLog::fresh("type-length");
    let long = "t".repeat(256);
    log.append(json!([{"type": long}]));
    assert_eq!(events(&log.read(""))[0]["type"], json!(long));
    let before = log.state();
    let reply = log.post(&json!({"events": [{"type": "t".repeat(257)}]}));
    let error = assert_error(&reply, 400, "invalid_request");
    assert_message_names(&error, "type");
    log.assert_unchanged(&before);
}

#[test]
fn malformed_json_is_invalid_json() {
    let log = AgentLog::fresh("malformed");
    log.append(json!([{"type": "seed"}]));
    let before = log.state();
    for body in [
        "{\"events\": [",
        "",
        "not json",
        "{\"events\": []}}",
        "{'events': []}",
    ] {
        let reply = call("POST", &log.path("/events"))
            .header("Content-Type", "application/json")
            .body(body)
            .send();
        assert_eq!(reply.status, 400, "body {body:?}: {}", reply.text());
        assert_error(&reply, 400, "invalid_json");
    }
    log.assert_unchanged(&before);
    assert_eq!(log.append(batch("next", 1))["first_seq"], json!(2));
}

#[test]
fn a_body_without_a_usable_events_array_is_an_invalid_request() {
    let log = AgentLog::fresh("no-events");
    log.append(json!([{"type": "seed"}]));
    let before = log.state();
    let bodies = [
        json!({}),
        json!({"events": null}),
        json!({"events": {"type": "x"}}),
        json!({"events": "x"}),
        json!({"events": []}),
        json!({"events": [1]}),
        json!({"events": [null]}),
        json!([{"type": "x"}]),
        json!("events"),
    ];
    for body in bodies {
        let reply = log.post(&body);
        assert_eq!(reply.status, 400, "body {body}: {}", reply.text());
        assert_error(&reply, 400, "invalid_request");
    }
    log.assert_unchanged(&before);
}

#[test]
fn arrays_in_place_of_the_body_or_an_event_are_invalid_requests() {
    // The body and each event are JSON objects; positional arrays that a
    // lenient decoder could map onto the same fields are refused.
    let log = AgentLog::fresh("array-shapes");
    log.append(json!([{"type": "seed"}]));
    let before = log.state();
    let bodies = [
        json!([[{"type": "x"}], null, null]),
        json!([[{"type": "x"}], "p", 1]),
        json!({"events": [["x", "s", 1]]}),
        json!({"events": [["x", null, null]]}),
    ];
    for body in bodies {
        let reply = log.post(&body);
        assert_eq!(reply.status, 400, "body {body}: {}", reply.text());
        assert_error(&reply, 400, "invalid_request");
    }
    log.assert_unchanged(&before);
}

#[test]
fn an_event_without_a_string_type_is_an_invalid_request() {
    let log = AgentLog::fresh("bad-type");
    log.append(json!([{"type": "seed"}]));
    let before = log.state();
    for event in [
        json!({"data": 1}),
        json!({"type": ""}),
        json!({"type": 5}),
        json!({"type": null}),
        json!({"type": ["x"]}),
    ] {
        // A good event first: the whole batch is refused, not just the bad one.
        let reply = log.post(&json!({"events": [{"type": "ok"}, event]}));
        assert_eq!(reply.status, 400, "event {event}: {}", reply.text());
        let error = assert_error(&reply, 400, "invalid_request");
        assert_message_names(&error, "type");
    }
    log.assert_unchanged(&before);
}

#[test]
fn producer_id_and_producer_seq_come_together_or_not_at_all() {
    let log = AgentLog::fresh("producer-pair");
    log.append(json!([{"type": "seed"}]));
    let before = log.state();
    let bodies = [
        json!({"events": [{"type": "x"}], "producer_id": "p"}),
        json!({"events": [{"type": "x"}], "producer_seq": 1}),
    ];
    for body in bodies {
        let reply = log.post(&body);
        assert_eq!(reply.status, 400, "body {body}: {}", reply.text());
        let error = assert_error(&reply, 400, "invalid_request");
        assert_message_names(&error, "producer");
    }
    log.assert_unchanged(&before);
}

#[test]
fn producer_seq_must_be_an_integer_of_at_least_zero() {
    let log = AgentLog::fresh("producer-seq");
    log.append(json!([{"type": "seed"}]));
    let before = log.state();
    for seq in [
        json!(-1),
        json!(1.5),
        json!("3"),
        json!(null),
        json!(true),
        json!([1]),
    ] {
        let body = json!({"events": [{"type": "x"}], "producer_id": "p", "producer_seq": seq});
        let reply = log.post(&body);
        assert_eq!(reply.status, 400, "producer_seq {seq}: {}", reply.text());
        let error = assert_error(&reply, 400, "invalid_request");
        assert_message_names(&error, "producer_seq");
    }
    log.assert_unchanged(&before);
}

#[test]
fn a_content_type_other_than_json_is_unsupported() {
    let log = AgentLog::fresh("content-type");
    log.append(json!([{"type": "seed"}]));
    let before = log.state();
    let body = json!({"events": [{"type": "x"}]}).to_string();
    for content_type in [
        "text/plain",
        "application/x-www-form-urlencoded",
        "application/octet-stream",
    ] {
        let reply = call("POST", &log.path("/events"))
            .header("Content-Type", content_type)
            .body(body.clone())
            .send();
        assert_error(&reply, 415, "unsupported_media_type");
    }
    log.assert_unchanged(&before);
}

#[test]
fn json_with_parameters_or_no_content_type_is_accepted() {
    let log = AgentLog::fresh("json-accepted");
    let body = json!({"events": [{"type": "x"}]}).to_string();
    let with_charset = call("POST", &log.path("/events"))
        .header("Content-Type", "application/json; charset=utf-8")
        .body(body.clone())
        .send();
    assert_eq!(with_charset.ok()["first_seq"], json!(1));
    let bare = call("POST", &log.path("/events")).body(body).send();
    assert_eq!(bare.ok()["first_seq"], json!(2));
    let answer = bare.header("content-type").unwrap_or_default();
    assert!(
        answer.starts_with("application/json"),
        "the answer is JSON: {answer:?}"
    );
}
