//! Reading an agent's log: `after` is an exclusive cursor, `limit` pages with
//! `has_more` / `next_after`, `session_id` and `type` filter, `first_seq` /
//! `last_seq` describe the whole log, and bad parameters are refused.

use stasis_conformance::{
    AgentLog, Value, assert_error, assert_message_names, batch, events, json, limits, num, seqs,
};

#[test]
fn an_agent_with_no_events_reads_as_an_empty_page() {
    let log = AgentLog::fresh("empty");
    let page = log.read("");
    assert_eq!(events(&page), Vec::<Value>::new());
    assert_eq!(page["first_seq"], json!(0));
    assert_eq!(page["last_seq"], json!(0));
    assert_eq!(page["has_more"], json!(false));
    assert_eq!(page["next_after"], json!(0));
}

#[test]
fn after_is_exclusive() {
    let log = AgentLog::fresh("after");
    log.append(batch("x", 5));
    assert_eq!(seqs(&log.read("after=2")), vec![3, 4, 5]);
    assert_eq!(seqs(&log.read("after=0")), vec![1, 2, 3, 4, 5]);
    assert_eq!(seqs(&log.read("after=4")), vec![5]);
    let end = log.read("after=5");
    assert_eq!(seqs(&end), Vec::<u64>::new());
    assert_eq!(end["has_more"], json!(false));
    assert_eq!(end["next_after"], json!(5));
}

#[test]
fn a_cursor_past_the_end_reads_an_empty_page() {
    let log = AgentLog::fresh("past-end");
    log.append(batch("x", 2));
    let page = log.read("after=100");
    assert_eq!(seqs(&page), Vec::<u64>::new());
    assert_eq!(page["has_more"], json!(false));
    assert_eq!(page["last_seq"], json!(2));
}

#[test]
fn first_and_last_seq_describe_the_whole_log() {
    let log = AgentLog::fresh("first-last");
    log.append(batch("x", 3));
    log.append(batch("y", 4));
    for query in [
        "",
        "after=5",
        "limit=1",
        "type=y",
        "type=none",
        "session_id=none",
    ] {
        let page = log.read(query);
        assert_eq!(page["first_seq"], json!(1), "query {query:?}");
        assert_eq!(page["last_seq"], json!(7), "query {query:?}");
    }
}

#[test]
fn limit_pages_visit_every_event_once() {
    let log = AgentLog::fresh("paging");
    for _ in 0..5 {
        log.append(batch("x", 5));
    }
    let mut after = 0;
    let mut seen: Vec<u64> = Vec::new();
    loop {
        let page = log.read(&format!("after={after}&limit=7"));
        let got = seqs(&page);
        assert!(got.len() <= 7, "a page holds at most limit events");
        seen.extend(&got);
        if page["has_more"] == json!(false) {
            break;
        }
        assert_eq!(got.len(), 7, "a page with more to come is full");
        assert_eq!(num(&page, "next_after"), *got.last().unwrap_or(&0));
        after = num(&page, "next_after");
    }
    assert_eq!(seen, (1..=25).collect::<Vec<u64>>());
}

#[test]
fn the_default_limit_is_one_thousand_and_the_maximum_ten_thousand() {
    let log = AgentLog::fresh("default-limit");
    log.append(batch("x", 1000));
    log.append(batch("x", 500));
    let page = log.read("");
    assert_eq!(events(&page).len() as u64, limits::READ_DEFAULT);
    assert_eq!(page["has_more"], json!(true));
    assert_eq!(page["next_after"], json!(1000));
    let rest = log.read("after=1000");
    assert_eq!(seqs(&rest), (1001..=1500).collect::<Vec<u64>>());
    assert_eq!(rest["has_more"], json!(false));
    let max = log.read(&format!("limit={}", limits::READ_MAX));
    assert_eq!(events(&max).len(), 1500);
    assert_eq!(max["has_more"], json!(false));
}

#[test]
fn session_and_type_filters_select_events() {
    let log = AgentLog::fresh("filters");
    log.append(json!([
        {"type": "a", "session_id": "s1"},
        {"type": "b", "session_id": "s1"},
        {"type": "a", "session_id": "s2"},
        {"type": "a"},
        {"type": "b", "session_id": "s2"},
        {"type": "a", "session_id": "s1"},
    ]));
    assert_eq!(seqs(&log.read("session_id=s1")), vec![1, 2, 6]);
    assert_eq!(seqs(&log.read("session_id=s2")), vec![3, 5]);
    assert_eq!(seqs(&log.read("type=a")), vec![1, 3, 4, 6]);
    assert_eq!(seqs(&log.read("type=b&session_id=s2")), vec![5]);
    assert_eq!(seqs(&log.read("type=a&after=3")), vec![4, 6]);
    assert_eq!(seqs(&log.read("type=c")), Vec::<u64>::new());
    for event in events(&log.read("session_id=s1")) {
        assert_eq!(event["session_id"], json!("s1"));
    }
}

#[test]
fn a_filtered_read_pages_through_matches_only() {
    let log = AgentLog::fresh("filtered-paging");
    let events: Vec<Value> = (0..40)
        .map(|i| json!({"type": if i % 4 == 0 { "hit" } else { "miss" }, "data": i}))
        .collect();
    log.append(Value::Array(events));
    let hits: Vec<u64> = log
        .read_all(0, "&type=hit")
        .iter()
        .map(|e| num(e, "seq"))
        .collect();
    assert_eq!(hits, vec![1, 5, 9, 13, 17, 21, 25, 29, 33, 37]);
    let mut after = 0;
    let mut seen = Vec::new();
    for _ in 0..100 {
        let page = log.read(&format!("after={after}&limit=3&type=hit"));
        seen.extend(seqs(&page));
        if page["has_more"] == json!(false) {
            break;
        }
        let next = num(&page, "next_after");
        assert!(next > after, "next_after moves forward: {after} → {next}");
        after = next;
    }
    assert_eq!(seen, hits);
}

#[test]
fn next_after_advances_on_a_filtered_page_with_no_match() {
    let log = AgentLog::fresh("empty-filtered");
    log.append(batch("miss", 30));
    let page = log.read("after=0&limit=5&type=hit");
    assert_eq!(seqs(&page), Vec::<u64>::new());
    let next = num(&page, "next_after");
    assert!(
        next > 0,
        "a filtered read with no match still moves the cursor: {page}"
    );
    assert!(next <= 30, "next_after never passes last_seq: {page}");
    let mut after = next;
    for _ in 0..100 {
        if after == 30 {
            break;
        }
        let page = log.read(&format!("after={after}&limit=5&type=hit"));
        assert_eq!(seqs(&page), Vec::<u64>::new());
        let next = num(&page, "next_after");
        assert!(next > after, "next_after moves forward: {after} → {next}");
        after = next;
    }
    assert_eq!(after, 30, "the cursor reaches the end of the log");
    let last = log.read("after=30&type=hit");
    assert_eq!(last["has_more"], json!(false));
}

#[test]
fn bad_after_or_limit_is_an_invalid_request() {
    let log = AgentLog::fresh("bad-params");
    log.append(batch("x", 3));
    for (query, field) in [
        ("after=-1", "after"),
        ("after=abc", "after"),
        ("after=1.5", "after"),
        ("limit=0", "limit"),
        ("limit=10001", "limit"),
        ("limit=x", "limit"),
        ("limit=-5", "limit"),
    ] {
        let reply = log.read_reply(query);
        assert_eq!(reply.status, 400, "query {query:?}: {}", reply.text());
        let error = assert_error(&reply, 400, "invalid_request");
        assert_message_names(&error, field);
    }
}

#[test]
fn limits_at_the_bounds_are_accepted() {
    let log = AgentLog::fresh("limit-bounds");
    log.append(batch("x", 3));
    let one = log.read("limit=1");
    assert_eq!(seqs(&one), vec![1]);
    assert_eq!(one["has_more"], json!(true));
    assert_eq!(one["next_after"], json!(1));
    assert_eq!(seqs(&log.read("limit=10000")), vec![1, 2, 3]);
}
