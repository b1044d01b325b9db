use super::*;
use crate::events::page_json;
use serde_json::Value;
use stasis_domain::event_log::{Event, ReadPage};

fn parsed() -> Value {
    serde_json::from_slice(document()).expect("the document is JSON")
}

/// A validator for the schema at `pointer` in the document: the document
/// itself with a `$ref` at its root (its other fields are no keywords).
fn validator(pointer: &str) -> jsonschema::Validator {
    let mut document = parsed();
    let fragment = pointer.replace('{', "%7B").replace('}', "%7D");
    document["$ref"] = Value::String(format!("#{fragment}"));
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .build(&document)
        .expect("the schema compiles")
}

const EVENTS: &str = "/paths/~1api~1towns~1{town}~1rigs~1{rig}~1agents~1{agent}~1events";

#[test]
fn the_document_lists_every_route_and_method() {
    let document = parsed();
    assert_eq!(document["openapi"], "3.1.0");
    for route in table::routes() {
        let item = &document["paths"][route.template];
        for method in route.methods() {
            let op = &item[method.as_str().to_ascii_lowercase()];
            assert!(op["responses"].is_object(), "{method} {}", route.template);
        }
    }
    let public = &document["paths"]["/openapi.json"]["get"]["security"];
    assert_eq!(public, &Value::Array(Vec::new()));
}

#[test]
fn an_event_page_as_written_matches_its_schema() {
    let page = ReadPage {
        events: vec![Event {
            seq: 3,
            event_type: "t".into(),
            session_id: Some("s".into()),
            data: r#"{"a":[1]}"#.into(),
            created_at_ms: 9,
        }],
        next_after: 3,
        has_more: false,
        first_seq: 1,
        last_seq: 3,
    };
    let body: Value = serde_json::from_str(&page_json(&page)).expect("json");
    let schema = format!("{EVENTS}/get/responses/200/content/application~1json/schema");
    let check = validator(&schema);
    assert!(check.is_valid(&body), "{body}");
    let mut renamed = body.clone();
    renamed["events"][0]["sequence"] = renamed["events"][0]["seq"].take();
    assert!(!check.is_valid(&renamed), "a renamed field is refused");
}

#[test]
fn errors_as_rendered_match_the_error_schema_with_their_codes_only() {
    let schema = format!("{EVENTS}/get/responses/410/content/application~1json/schema");
    let check = validator(&schema);
    let rendered = |err: crate::ApiError| -> Value {
        serde_json::from_slice(err.into_response().body()).expect("json")
    };
    let expired = crate::ApiError::from(stasis_domain::DomainError::CursorExpired { first_seq: 4 });
    let expired = rendered(expired);
    let errors: Vec<String> = check.iter_errors(&expired).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{expired}: {errors:?}");
    let other = crate::ApiError::new(http::StatusCode::GONE, "gone_elsewhere", "no");
    assert!(
        !check.is_valid(&rendered(other)),
        "a code not listed is refused"
    );
}
