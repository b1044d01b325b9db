//! JSON texts for the places where stasis stores a value as it came (event
//! data, checkpoints, memory, metadata): ordinary ones, legal ones that
//! break careless readers, and ones the contract refuses at the door.

use fastrand::Rng;

/// Legal JSON that a careless reader might choke on. Each must be accepted
/// where a stored value goes, and must not break any later read.
const AWKWARD: &[&str] = &[
    "1e308",
    "-1.7976931348623157e308",
    "1e-999",
    "-0",
    "0.000000000000000000000000000001",
    "18446744073709551616",
    "-9223372036854775809",
    "123456789012345678901234567890123456789",
    r#""\u0000""#,
    r#""\ud800""#,
    r#""\udc00\ud800 lone surrogates""#,
    r#""<prior-conversation>hi</prior-conversation>""#,
    r#""é漢😀 \"quoted\" \\ back\nslash""#,
    r#"{"a":1,"a":2}"#,
    r#"{"":""}"#,
    "[]",
    "{}",
    "null",
    "true",
    r#"{"info":{"id":"m1","role":"user"},"part":{"id":"p1","text":"hello"}}"#,
    r#"{"sessionID":"s1","messageID":"m1","partID":"p1","field":"text","delta":7}"#,
    r#"{"info":{"id":null,"role":[1]},"part":{"text":{"x":1}}}"#,
];

/// Valid JSON the contract refuses where a stored value goes: numbers out
/// of a 64-bit float's range and nesting past 64 levels.
const REFUSED: &[&str] = &["1e999", "-1e400", "[1,2,-5e309]", r#"{"n":{"m":[9e999]}}"#];

/// Text that is not JSON at all.
const NOT_JSON: &[&str] = &[
    "NaN",
    "Infinity",
    "{'a':1}",
    "{\"a\":01}",
    "[1,]",
    "{\"a\":1,}",
    "/* c */ {}",
    "{\"a\":\"\\x\"}",
    "{\"a\":\"\u{1}\"}",
    "{\"a\" 1}",
    "tru",
    "\"unterminated",
];

/// An ordinary or awkward value, as JSON text; never one that is refused.
pub fn acceptable(rng: &mut Rng) -> String {
    match rng.u8(..10) {
        0..=3 => ordinary(rng),
        4..=7 => pick(rng, AWKWARD).to_owned(),
        8 => nested(rng.usize(2..=64)),
        _ => long_string(rng.usize(1..20_000)),
    }
}

/// A value the contract refuses at the door (400 naming where it is).
pub fn refused(rng: &mut Rng) -> String {
    match rng.u8(..3) {
        0 => pick(rng, REFUSED).to_owned(),
        1 => nested(rng.usize(65..=200)),
        _ => format!(r#"{{"deep":{}}}"#, nested(rng.usize(64..=100))),
    }
}

/// A text that is not JSON.
pub fn not_json(rng: &mut Rng) -> String {
    pick(rng, NOT_JSON).to_owned()
}

/// A plain JSON value of a few fields.
pub fn ordinary(rng: &mut Rng) -> String {
    let n = rng.u32(..1_000_000);
    match rng.u8(..4) {
        0 => n.to_string(),
        1 => format!(r#""text {n}""#),
        2 => format!(r#"{{"n":{n},"tags":["a","b"],"nested":{{"ok":true}}}}"#),
        _ => format!(r#"[{n},"x",null,{{"k":{}}}]"#, f64::from(n) / 7.0),
    }
}

/// Arrays nested `depth` levels (a value at the top is at depth 1).
pub fn nested(depth: usize) -> String {
    format!("{}{}", "[".repeat(depth), "]".repeat(depth))
}

/// A JSON string of `len` ASCII letters.
pub fn long_string(len: usize) -> String {
    format!("\"{}\"", "x".repeat(len))
}

/// One of `items` (which is never empty).
pub fn pick<'a>(rng: &mut Rng, items: &[&'a str]) -> &'a str {
    items[rng.usize(..items.len())]
}
