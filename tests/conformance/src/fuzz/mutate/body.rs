//! Mutations of a request's body: truncated, not UTF-8, not JSON, not an
//! object, a refused value in a stored field, an unknown, missing or
//! mistyped field, or past the route's size limit.

use fastrand::Rng;

use crate::Value;
use crate::fuzz::bodies::Payload;
use crate::fuzz::catalog::Route;
use crate::fuzz::request::{Request, Stage};
use crate::fuzz::values;

/// One body mutation; a request without a JSON body gets a random one.
pub fn mutate(rng: &mut Rng, request: &mut Request) {
    let Payload::Json(json) = &mut request.payload else {
        return other_body(rng, request);
    };
    let object = request.route.takes_object();
    let note = match rng.u8(..12) {
        0 | 1 if json.slots() > 0 => {
            let slot = rng.usize(..json.slots());
            json.fill(slot, values::refused(rng));
            request.stages.push(Stage::Body);
            "a refused value in a stored field"
        }
        2 if object => field(rng, &mut json.value, Field::Unknown),
        3 if object => field(rng, &mut json.value, Field::Missing),
        4 if object => field(rng, &mut json.value, Field::Mistyped),
        5 if object => {
            let text = non_object(rng);
            return finish(request, text.into_bytes(), "not an object", true);
        }
        6 => return oversized(request),
        7 => {
            let text = values::not_json(rng);
            return finish(request, text.into_bytes(), "not JSON", true);
        }
        8 => {
            let text = format!("{} x", json.render());
            return finish(request, text.into_bytes(), "trailing garbage", true);
        }
        _ => return text_damage(rng, request),
    };
    request.notes.push(note.to_owned());
}

/// Damage to the rendered text: cut short, or not UTF-8.
fn text_damage(rng: &mut Rng, request: &mut Request) {
    let mut bytes = request.body_bytes();
    let certain = request.route.takes_object();
    if rng.bool() && bytes.len() > 1 {
        // A proper prefix of an object is never JSON; of a scalar it may be.
        bytes.truncate(rng.usize(1..bytes.len()));
        finish(request, bytes, "truncated", certain);
    } else {
        let at = rng.usize(..=bytes.len());
        let bad: &[u8] = if rng.bool() { &[0xFF] } else { &[0xC3] };
        bytes.splice(at..at, bad.iter().copied());
        finish(request, bytes, "not UTF-8", true);
    }
}

fn finish(request: &mut Request, bytes: Vec<u8>, note: &str, refused: bool) {
    request.payload = Payload::Bytes(bytes);
    request.notes.push(note.to_owned());
    if refused {
        request.stages.push(Stage::Body);
    }
}

fn non_object(rng: &mut Rng) -> String {
    const TEXTS: &[&str] = &[
        "[]",
        "null",
        "1",
        "\"x\"",
        "[{\"role\":\"polecat\"}]",
        "true",
    ];
    values::pick(rng, TEXTS).to_owned()
}

enum Field {
    Unknown,
    Missing,
    Mistyped,
}

/// Adds an unknown field, drops one, or gives one another type. Whether
/// that is refused depends on the field (`data` and `metadata` take any
/// JSON; an append ignores unknown fields), so no refusal is expected.
fn field(rng: &mut Rng, value: &mut Value, change: Field) -> &'static str {
    let Some(object) = value.as_object_mut() else {
        return "not an object already";
    };
    let keys: Vec<String> = object.keys().cloned().collect();
    let key = (!keys.is_empty()).then(|| keys[rng.usize(..keys.len())].clone());
    match (change, key) {
        (Field::Unknown, _) | (_, None) => {
            object.insert("zz_unknown".to_owned(), Value::from(1));
            "an unknown field"
        }
        (Field::Missing, Some(key)) => {
            object.remove(&key);
            "a missing field"
        }
        (Field::Mistyped, Some(key)) => {
            let other = match object.get(&key) {
                Some(Value::String(_)) => Value::from(-1.5),
                Some(Value::Number(_)) => Value::from("7"),
                _ => Value::from(vec![Value::Null]),
            };
            object.insert(key, other);
            "a field of another type"
        }
    }
}

/// A body just past the route's limit, where that limit is small enough
/// to send (413); others get a random few bytes.
fn oversized(request: &mut Request) {
    let limit = match request.route {
        Route::Checkpoint | Route::MemoryEntry => 1 << 20,
        Route::Eviction | Route::Heartbeat => 64 << 10,
        _ => return finish(request, b"{}".to_vec(), "a tiny body", false),
    };
    let text = values::long_string(limit);
    request.payload = Payload::Bytes(text.into_bytes());
    request.notes.push("over the size limit".to_owned());
    request.stages.push(Stage::Size);
}

/// Random bytes for a request that had no JSON body: a write refuses them
/// (they are never UTF-8), a read ignores them, a snapshot stores them
/// (unless a sha256 was sent for other bytes).
fn other_body(rng: &mut Rng, request: &mut Request) {
    let mut bytes = vec![0_u8; rng.usize(1..512)];
    rng.fill(&mut bytes);
    bytes[0] = 0xFF;
    let refused = request.route != Route::Snapshot;
    finish(request, bytes, "random bytes", refused);
}
