//! The manifest reader against bodies cut anywhere.

use super::reader::{Item, ManifestReader};
use crate::error::ApiError;

/// Every item of `body` fed in chunks of `chunk` bytes, or the refusal.
fn read(body: &[u8], chunk: usize) -> Result<Vec<String>, ApiError> {
    let mut reader = ManifestReader::new();
    let mut items = Vec::new();
    for piece in body.chunks(chunk.max(1)) {
        reader.push(piece);
        while let Some(item) = reader.next()? {
            items.push(describe(item));
        }
    }
    reader.end();
    while let Some(item) = reader.next()? {
        items.push(describe(item));
    }
    reader.finish()?;
    Ok(items)
}

fn describe(item: Item) -> String {
    match item {
        Item::Format(format) => format!("format {format}"),
        Item::Agent(agent) => format!("agent {agent:?}"),
        Item::Checkpoint(text) => format!("checkpoint {text:?}"),
        Item::Event(event, _) => format!("event {} {} {}", event.seq, event.event_type, event.data),
        Item::Session(session, _) => format!("session {}", session.session_id),
        Item::Memory(entry, _) => format!("memory {}={}", entry.key, entry.value),
        Item::SnapshotBegin(size) => format!("snapshot begins {size:?}"),
        Item::SnapshotData(bytes) => format!("snapshot bytes {}", hex::encode(bytes)),
        Item::Snapshot(None) => "snapshot none".to_owned(),
        Item::Snapshot(Some(head)) => format!(
            "snapshot {} {} {}",
            head.sha256, head.size, head.event_watermark
        ),
        Item::Workspace(head) => format!("workspace {head:?}"),
        Item::WorkspaceChunk(chunk, index) => format!("workspace chunk {index} {}", chunk.sha256),
    }
}

fn refusal(body: &str) -> (String, String) {
    match read(body.as_bytes(), 7) {
        Ok(items) => (format!("accepted {items:?}"), String::new()),
        Err(err) => (err.code, err.message),
    }
}

const SHA: &str = "b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9";

fn manifest() -> String {
    format!(
        r#" {{"snapshot": {{"size": 5, "data_base64": "\/\/79aGk=", "sha256": "{SHA}", "event_watermark": 12345}},
        "format": "stasis.agent.v1", "agent": {{"role": "mayor", "metadata": {{"a": [1, 2]}}}},
        "events": [ {{"seq": 1, "type": "t", "data": {{"x": "a \"quoted\" ]}} text"}}}},
                    {{"seq": 1234567, "type": "u", "session_id": "s", "data": 1e5}} ],
        "sessions": [], "checkpoint": [true, null], "memory": [{{"key": "k", "value": "v"}}] }} "#
    )
}

#[test]
fn any_cut_of_the_body_reads_the_same_items_in_order() {
    let body = manifest();
    let whole = read(body.as_bytes(), body.len()).expect("reads whole");
    assert_eq!(
        whole,
        vec![
            "snapshot begins Some(5)".to_owned(),
            "snapshot bytes fffefd6869".to_owned(),
            format!("snapshot {SHA} 5 12345"),
            "format stasis.agent.v1".to_owned(),
            r#"agent Some(ManifestAgent { role: "mayor", metadata: "{\"a\": [1, 2]}" })"#
                .to_owned(),
            r#"event 1 t {"x": "a \"quoted\" ]} text"}"#.to_owned(),
            "event 1234567 u 1e5".to_owned(),
            "checkpoint Some(\"[true, null]\")".to_owned(),
            "memory k=\"v\"".to_owned(),
        ]
    );
    for chunk in [1, 2, 3, 5, 13, 64] {
        assert_eq!(
            read(body.as_bytes(), chunk).expect("reads"),
            whole,
            "{chunk}"
        );
    }
}

#[test]
fn the_empty_manifest_has_no_items() {
    assert_eq!(read(b"{}", 1).expect("reads"), Vec::<String>::new());
    assert_eq!(
        read(br#"{"snapshot": null, "agent": null}"#, 3).expect("reads"),
        vec!["snapshot none".to_owned(), "agent None".to_owned()]
    );
}

#[test]
fn malformed_json_is_invalid_json() {
    for body in [
        "",
        "  ",
        "manifest",
        r#"{"events": ["#,
        r#"{"events": [{"seq": 1, "type": "t"}"#,
        r#"{"events": [] "memory": []}"#,
        r#"{"events": [],}"#,
        r#"{"events": [{"seq": 1, "type": "t"},]}"#,
        r#"{"checkpoint": tru}"#,
        r#"{} {}"#,
        r#"{5: []}"#,
        r#"{"snapshot": {5: 1}}"#,
        r#"{"snapshot": {"data_base64": "AAAA"#,
    ] {
        assert_eq!(refusal(body).0, "invalid_json", "{body:?}");
    }
}

#[test]
fn well_formed_json_of_the_wrong_shape_is_invalid_manifest_naming_the_path() {
    for (body, path) in [
        ("[]", "manifest"),
        (r#""stasis.agent.v1""#, "manifest"),
        (r#"{"evnets": []}"#, "manifest: unknown field `evnets`"),
        (
            r#"{"memory": [], "memory": []}"#,
            "manifest: duplicate field `memory`",
        ),
        (r#"{"events": {}}"#, "events: must be an array"),
        (
            r#"{"events": [{"seq": "one", "type": "t"}]}"#,
            "events[0].seq",
        ),
        (
            r#"{"events": [{"seq": 1, "type": "t"}, {"type": "t"}]}"#,
            "events[1]",
        ),
        (r#"{"agent": {"role": 5}}"#, "agent.role"),
        (r#"{"snapshot": 5}"#, "snapshot: must be an object or null"),
        (
            r#"{"snapshot": {"size": 1}}"#,
            "snapshot: missing field `sha256`",
        ),
        (
            &format!(
                r#"{{"snapshot": {{"sha256": "{SHA}", "size": 3, "event_watermark": 0, "data_base64": "AA=A"}}}}"#
            ),
            "snapshot.data_base64: must be standard base64",
        ),
        (
            &format!(
                r#"{{"snapshot": {{"sha256": "{SHA}", "size": 3, "event_watermark": 0, "data_base64": "AA=="}}}}"#
            ),
            "snapshot.data_base64: decodes to 1 bytes, not the 3 of size",
        ),
        (
            &format!(
                r#"{{"snapshot": {{"sha256": "{SHA}", "size": 1, "event_watermark": 0, "data_base64": "\nAA=="}}}}"#
            ),
            "snapshot.data_base64: must be standard base64",
        ),
    ] {
        let (code, message) = refusal(body);
        assert_eq!(code, "invalid_manifest", "{body}: {message}");
        assert!(message.starts_with(path), "{body}: {message}");
    }
}

#[test]
fn padding_before_the_end_of_long_base64_is_refused() {
    let mut text = "AA==".to_owned();
    text.push_str(&"A".repeat(200_000));
    let body = format!(
        r#"{{"snapshot": {{"sha256": "{SHA}", "size": 1, "event_watermark": 0, "data_base64": "{text}"}}}}"#
    );
    let err = read(body.as_bytes(), 4096).expect_err("refused");
    assert!(err.message.contains("standard base64"), "{}", err.message);
}

#[test]
fn a_value_past_its_cap_is_refused_before_it_is_buffered_whole() {
    let huge = "x".repeat(5 * 1024 * 1024);
    let body = format!(r#"{{"events": [{{"seq": 1, "type": "t", "data": "{huge}"}}]}}"#);
    let mut reader = ManifestReader::new();
    let mut refused_after = None;
    for (i, piece) in body.as_bytes().chunks(64 * 1024).enumerate() {
        reader.push(piece);
        if let Err(err) = reader.next() {
            assert!(
                err.message
                    .starts_with("events[0]: its JSON text is longer")
            );
            refused_after = Some(i);
            break;
        }
    }
    let refused_after = refused_after.expect("refused");
    assert!(
        refused_after < 80,
        "refused only after {refused_after} chunks"
    );
}

/// `len` pseudo-random bytes (xorshift).
fn noise(len: usize) -> Vec<u8> {
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state.to_le_bytes()[0]
        })
        .collect()
}

/// A manifest whose snapshot carries `bytes`, every `/` of its base64
/// escaped as JSON allows, the header before the data.
fn snapshot_manifest(bytes: &[u8]) -> String {
    use base64::{Engine as _, engine::general_purpose::STANDARD};
    let text = STANDARD.encode(bytes).replace('/', "\\/");
    format!(
        r#"{{"snapshot": {{"sha256": "{SHA}", "size": {}, "event_watermark": 1, "data_base64": "{text}"}}}}"#,
        bytes.len()
    )
}

#[test]
fn snapshot_bytes_decode_the_same_at_every_cut_and_come_in_pieces() {
    // Not a multiple of 3, so the last group is padded.
    let bytes = noise(700_001);
    let body = snapshot_manifest(&bytes);
    for cut in [1, 2, 3, 4, 5, 7, 4093, 65_537, 1 << 20] {
        let items = read(body.as_bytes(), cut).expect("reads");
        assert_eq!(
            items.first().map(String::as_str),
            Some("snapshot begins Some(700001)")
        );
        let decoded: String = items
            .iter()
            .filter_map(|item| item.strip_prefix("snapshot bytes "))
            .collect();
        assert!(
            decoded == hex::encode(&bytes),
            "cut {cut}: the bytes differ"
        );
        let pieces = items.len() - 2;
        assert!(pieces >= 2, "cut {cut}: {pieces} pieces: the bytes stream");
        assert_eq!(
            items.last().map(String::as_str),
            Some(format!("snapshot {SHA} 700001 1").as_str())
        );
    }
}

#[test]
fn snapshot_bytes_past_the_header_size_are_refused_before_the_body_ends() {
    let body = snapshot_manifest(&noise(2_000_000)).replace("\"size\": 2000000", "\"size\": 10");
    let mut reader = ManifestReader::new();
    let pieces: Vec<&[u8]> = body.as_bytes().chunks(64 * 1024).collect();
    let refused_at = pieces.iter().position(|piece| {
        reader.push(piece);
        loop {
            match reader.next() {
                Ok(Some(_)) => {}
                Ok(None) => return false,
                Err(err) => {
                    assert!(
                        err.message.contains("more than the 10 bytes of size"),
                        "{}",
                        err.message
                    );
                    return true;
                }
            }
        }
    });
    let refused_at = refused_at.expect("refused");
    assert!(
        refused_at < 4,
        "refused only after {refused_at} of {} pieces",
        pieces.len()
    );
}

#[test]
fn an_escaped_slash_split_across_reads_decodes() {
    // Every character of the text is '/', escaped: cuts of 1 split each
    // escape in two.
    let bytes = vec![0xff; 3 * 1000];
    let body = snapshot_manifest(&bytes);
    assert!(body.contains("\\/\\/\\/\\/"));
    let items = read(body.as_bytes(), 1).expect("reads");
    let decoded: String = items
        .iter()
        .filter_map(|item| item.strip_prefix("snapshot bytes "))
        .collect();
    assert_eq!(decoded, hex::encode(&bytes));
}
