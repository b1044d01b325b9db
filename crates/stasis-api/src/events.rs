//! The event-log endpoints: parsing appends and reads, rendering pages.

use crate::{error::ApiError, query::Query, reply};
use bytes::Bytes;
use http::{Response, StatusCode};
use stasis_domain::{
    event_log::{AppendBatch, AppendOutcome, Event, ReadPage, ReadQuery},
    limits,
};
use std::fmt::Write as _;

/// Parses an append body into a batch (the domain validates the rest).
pub fn parse_append(body: &[u8]) -> Result<AppendBatch, ApiError> {
    crate::append_body::parse(body)
}

/// Parses `after`, `limit`, `session_id` and `type`; `Last-Event-ID`
/// (given as `last_event_id`) overrides `after`.
pub fn parse_read(query: &Query, last_event_id: Option<u64>) -> Result<ReadQuery, ApiError> {
    let after = query.u64("after")?.unwrap_or(0);
    let limit = query
        .u64("limit")?
        .unwrap_or(u64::from(limits::DEFAULT_READ_LIMIT));
    if limit == 0 || limit > u64::from(limits::MAX_READ_LIMIT) {
        return Err(ApiError::invalid_request(format!(
            "limit must be 1 to {}",
            limits::MAX_READ_LIMIT
        )));
    }
    let session_id = query.id("session_id")?;
    let event_type = query.text("type").map(str::to_owned);
    Ok(ReadQuery {
        after: last_event_id.unwrap_or(after),
        limit: u32::try_from(limit).unwrap_or(limits::MAX_READ_LIMIT),
        session_id,
        event_type,
    })
}

/// An append's outcome as the endpoint's JSON.
pub fn render_appended(outcome: &AppendOutcome) -> Response<Bytes> {
    reply::json(StatusCode::OK, outcome)
}

/// A page of events as the endpoint's JSON.
pub fn render_page(page: &ReadPage) -> Response<Bytes> {
    reply::raw_json(StatusCode::OK, page_json(page).into_bytes())
}

/// A page as JSON. Event data is stored as JSON text and written as is,
/// without parsing it again.
pub fn page_json(page: &ReadPage) -> String {
    let mut out =
        String::with_capacity(64 + page.events.iter().map(|e| e.data.len() + 96).sum::<usize>());
    out.push_str(r#"{"events":["#);
    for (index, event) in page.events.iter().enumerate() {
        if index > 0 {
            out.push(',');
        }
        write_event(&mut out, event);
    }
    let _ = write!(
        out,
        r#"],"next_after":{},"has_more":{},"first_seq":{},"last_seq":{}}}"#,
        page.next_after, page.has_more, page.first_seq, page.last_seq
    );
    out
}

/// One event as JSON: `{"seq","type","session_id","data","created_at"}`.
pub fn write_event(out: &mut String, event: &Event) {
    let _ = write!(out, r#"{{"seq":{},"type":"#, event.seq);
    push_json_string(out, &event.event_type);
    out.push_str(r#","session_id":"#);
    match &event.session_id {
        Some(session) => push_json_string(out, session),
        None => out.push_str("null"),
    }
    out.push_str(r#","data":"#);
    out.push_str(&event.data);
    let _ = write!(out, r#","created_at":{}}}"#, event.created_at_ms);
}

fn push_json_string(out: &mut String, value: &str) {
    // Types and session ids rarely need escaping: copy them as they are
    // (serde_json escapes exactly these bytes, and nothing else).
    if !value.bytes().any(|b| b < 0x20 || b == b'"' || b == b'\\') {
        out.push('"');
        out.push_str(value);
        out.push('"');
        return;
    }
    // serde_json's escaping of a plain string cannot fail.
    match serde_json::to_string(value) {
        Ok(quoted) => out.push_str(&quoted),
        Err(_) => out.push_str("null"),
    }
}

/// The body limit of an append request.
pub const APPEND_BODY_LIMIT: u64 = limits::MAX_BATCH_BYTES;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rendered_pages_are_valid_json_with_data_verbatim() {
        let page = ReadPage {
            events: vec![Event {
                seq: 3,
                event_type: "t\"q".into(),
                session_id: None,
                data: r#"{"a":[1,"\u00e9"]}"#.into(),
                created_at_ms: 9,
            }],
            next_after: 3,
            has_more: false,
            first_seq: 1,
            last_seq: 3,
        };
        let value: serde_json::Value = serde_json::from_str(&page_json(&page)).expect("valid json");
        assert_eq!(value["events"][0]["type"], "t\"q");
        assert_eq!(value["events"][0]["data"]["a"][1], "é");
        assert_eq!(value["last_seq"], 3);
    }

    #[test]
    fn strings_are_escaped_as_serde_json_escapes_them() {
        for text in [
            "message.created",
            "",
            "t\"q",
            "back\\slash",
            "line\nbreak",
            "\u{1}\u{1f}",
            "\u{7f} é ✓",
            "</script>",
        ] {
            let mut out = String::new();
            push_json_string(&mut out, text);
            assert_eq!(Some(out), serde_json::to_string(text).ok(), "{text:?}");
        }
    }

    #[test]
    fn missing_data_is_stored_as_null_and_stamps_come_in_pairs() {
        let batch = parse_append(br#"{"events":[{"type":"x"}]}"#).map_err(|e| e.code);
        assert_eq!(
            batch.map(|b| b.events[0].data.clone()),
            Ok("null".to_owned())
        );
        let half = parse_append(br#"{"events":[{"type":"x"}],"producer_id":"p"}"#);
        assert_eq!(half.map_err(|e| e.code), Err("invalid_request".to_owned()));
    }
}
