//! What JSON from outside may hold, so that everything stored can be read
//! back as JSON by any reader.
//!
//! stasis stores JSON values (event data, checkpoints, memory, metadata) as
//! the text it received and serves that text back byte for byte. Two kinds
//! of valid JSON text still break ordinary readers, ours included (serde's
//! `Value`, JavaScript's `JSON.parse` turns them into `Infinity` or stack
//! overflows): numbers outside the range of a 64-bit float (`1e999`,
//! `-1e400`), and nesting deeper than a parser's recursion limit. Such
//! values are refused at the door, naming where they are, instead of being
//! accepted and breaking a later read, export or dispatch.
//!
//! [`check`] is one pass over the bytes with no allocation, run on every
//! value before it is stored; only a refusal pays for a second pass that
//! finds the path.

/// The deepest nesting of arrays and objects a stored value may have. A
/// value at the top level is at depth 1, `{"a":[1]}` reaches depth 2.
/// serde_json stops at 128, and some JavaScript engines lower; agent
/// runtimes' events nest about 6 levels deep.
pub const MAX_JSON_DEPTH: usize = 64;

/// The deepest nesting of a request body that carries stored values: the
/// values are checked against [`MAX_JSON_DEPTH`] on their own, and the body
/// wraps them a few levels deeper (`{"events":[{"data":...}]}` adds three),
/// so a value the rule allows is never refused for its envelope. Still far
/// below any parser's recursion limit.
pub const MAX_BODY_DEPTH: usize = MAX_JSON_DEPTH + 8;

/// A refusal's path is cut after this many characters (a path 64 levels
/// deep into arrays would be longer than is useful).
const MAX_PATH_CHARS: usize = 120;

/// Why a value was refused, and where inside it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonBreach {
    /// The path inside the value, in the style `.info.parts[2]` (empty for
    /// the value itself).
    pub path: String,
    /// What is wrong there.
    pub why: String,
}

impl JsonBreach {
    /// The refusal's wording, to follow a field's name:
    /// `holds a number out of range at .a[2] (1e999): ...`.
    pub fn describe(&self) -> String {
        let at = if self.path.is_empty() {
            String::new()
        } else {
            format!(" at {}", self.path)
        };
        format!("{}{at}", self.why)
    }
}

/// Checks `text`, which must already be valid JSON (the caller parsed it):
/// every number is a finite 64-bit float, nesting stays within
/// [`MAX_JSON_DEPTH`], and every surrogate escape in a string is half of a
/// pair. Text that is not valid JSON never panics here; it
/// may pass or be refused.
pub fn check(text: &str) -> Result<(), JsonBreach> {
    check_to_depth(text, MAX_JSON_DEPTH)
}

/// [`check`] for a whole request body, whose stored values are checked on
/// their own: nesting may reach [`MAX_BODY_DEPTH`].
pub fn check_body(text: &str) -> Result<(), JsonBreach> {
    check_to_depth(text, MAX_BODY_DEPTH)
}

fn check_to_depth(text: &str, max_depth: usize) -> Result<(), JsonBreach> {
    let mut fast = NoPath;
    match scan(text.as_bytes(), max_depth, &mut fast) {
        None => Ok(()),
        Some(problem) => {
            let mut tracker = PathTracker::default();
            scan(text.as_bytes(), max_depth, &mut tracker);
            Err(JsonBreach {
                path: tracker.rendered,
                why: problem.describe(max_depth),
            })
        }
    }
}

/// What the scan found wrong.
enum Problem {
    Depth,
    Number(String),
    Surrogate(String),
}

impl Problem {
    fn describe(&self, max_depth: usize) -> String {
        match self {
            Self::Depth => format!(
                "nests arrays and objects deeper than {max_depth} levels (the most a stored \
                 value may have is {MAX_JSON_DEPTH})"
            ),
            Self::Number(number) => format!(
                "holds the number {number}, which is out of range: JSON numbers must fit a 64-bit \
                 float (about ±1.8e308)"
            ),
            Self::Surrogate(escape) => format!(
                "holds the string escape {escape}, a lone UTF-16 surrogate: it is not text, and \
                 JSON readers refuse it"
            ),
        }
    }
}

/// Follows the scan's structure; the fast pass ignores it all.
trait Tracker {
    fn open(&mut self, is_object: bool);
    fn close(&mut self);
    fn comma(&mut self);
    fn string(&mut self, raw: &[u8]);
    fn colon(&mut self);
    /// The scan stopped at a problem: keep the path as it is now.
    fn stop(&mut self);
}

struct NoPath;

impl Tracker for NoPath {
    fn open(&mut self, _: bool) {}
    fn close(&mut self) {}
    fn comma(&mut self) {}
    fn string(&mut self, _: &[u8]) {}
    fn colon(&mut self) {}
    fn stop(&mut self) {}
}

/// One open array or object.
enum Frame {
    Array { index: usize },
    Object { key: String, in_key: bool },
}

#[derive(Default)]
struct PathTracker {
    frames: Vec<Frame>,
    rendered: String,
}

impl Tracker for PathTracker {
    fn open(&mut self, is_object: bool) {
        self.frames.push(if is_object {
            Frame::Object {
                key: String::new(),
                in_key: true,
            }
        } else {
            Frame::Array { index: 0 }
        });
    }

    fn close(&mut self) {
        self.frames.pop();
    }

    fn comma(&mut self) {
        match self.frames.last_mut() {
            Some(Frame::Array { index }) => *index += 1,
            Some(Frame::Object { in_key, .. }) => *in_key = true,
            None => {}
        }
    }

    fn string(&mut self, raw: &[u8]) {
        if let Some(Frame::Object { key, in_key: true }) = self.frames.last_mut() {
            *key = String::from_utf8_lossy(raw).into_owned();
        }
    }

    fn colon(&mut self) {
        if let Some(Frame::Object { in_key, .. }) = self.frames.last_mut() {
            *in_key = false;
        }
    }

    fn stop(&mut self) {
        let mut rendered = String::new();
        for frame in &self.frames {
            match frame {
                Frame::Array { index } => rendered.push_str(&format!("[{index}]")),
                Frame::Object { key, in_key: false } => {
                    rendered.push('.');
                    rendered.push_str(key);
                }
                Frame::Object { in_key: true, .. } => {}
            }
        }
        self.rendered = match rendered.char_indices().nth(MAX_PATH_CHARS) {
            Some((cut, _)) => format!("{}…", &rendered[..cut]),
            None => rendered,
        };
    }
}

/// One pass over valid JSON text: the first problem, if any.
fn scan(bytes: &[u8], max_depth: usize, tracker: &mut impl Tracker) -> Option<Problem> {
    let mut depth = 0usize;
    let mut at = 0usize;
    while let Some(&byte) = bytes.get(at) {
        match byte {
            b'"' => {
                let end = string_end(bytes, at + 1);
                let raw = bytes.get(at + 1..end).unwrap_or_default();
                tracker.string(raw);
                // Only an escape can be a surrogate: most strings hold none,
                // and skip the escape walk.
                if raw.contains(&b'\\')
                    && let Some(escape) = unpaired_surrogate(raw)
                {
                    tracker.stop();
                    return Some(Problem::Surrogate(escape));
                }
                at = end + 1;
                continue;
            }
            b'{' | b'[' => {
                depth += 1;
                tracker.open(byte == b'{');
                if depth > max_depth {
                    tracker.stop();
                    return Some(Problem::Depth);
                }
            }
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                tracker.close();
            }
            b',' => tracker.comma(),
            b':' => tracker.colon(),
            b'-' | b'0'..=b'9' => {
                let end = number_end(bytes, at);
                let number = bytes.get(at..end).unwrap_or_default();
                if !number_fits(number) {
                    tracker.stop();
                    return Some(Problem::Number(shorten(number)));
                }
                at = end;
                continue;
            }
            _ => {}
        }
        at += 1;
    }
    None
}

/// The index of the quote that closes a string whose contents start at
/// `from` (or the end of the text).
fn string_end(bytes: &[u8], from: usize) -> usize {
    let mut at = from;
    while let Some(&byte) = bytes.get(at) {
        match byte {
            b'\\' => at += 2,
            b'"' => return at,
            _ => at += 1,
        }
    }
    bytes.len()
}

/// The first `\uXXXX` escape in a string's raw contents that is a UTF-16
/// surrogate without its other half (`\ud83d\ude00` is one character;
/// `\ud800` alone, or `\udc00` first, is not).
fn unpaired_surrogate(raw: &[u8]) -> Option<String> {
    let mut high: Option<&[u8]> = None;
    let mut at = 0;
    while at < raw.len() {
        let (unit, width) = match raw.get(at..at + 2) {
            Some(b"\\u") => (raw.get(at + 2..at + 6).and_then(hex_unit), 6),
            Some([b'\\', _]) => (None, 2),
            _ => (None, 1),
        };
        let escape = raw.get(at..at + width).unwrap_or_default();
        match (high, unit) {
            (Some(_), Some(0xDC00..=0xDFFF)) => high = None,
            (Some(lone), _) => return Some(String::from_utf8_lossy(lone).into_owned()),
            (None, Some(0xD800..=0xDBFF)) => high = Some(escape),
            (None, Some(0xDC00..=0xDFFF)) => {
                return Some(String::from_utf8_lossy(escape).into_owned());
            }
            (None, _) => {}
        }
        at += width;
    }
    high.map(|lone| String::from_utf8_lossy(lone).into_owned())
}

/// Four hex digits as a UTF-16 code unit.
fn hex_unit(digits: &[u8]) -> Option<u16> {
    u16::from_str_radix(std::str::from_utf8(digits).ok()?, 16).ok()
}

fn number_end(bytes: &[u8], from: usize) -> usize {
    let mut at = from;
    while bytes
        .get(at)
        .is_some_and(|b| matches!(b, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E'))
    {
        at += 1;
    }
    at
}

/// Whether a JSON number is a finite 64-bit float. Short plain numbers
/// always are; only an exponent or hundreds of digits can overflow, so only
/// those are parsed.
fn number_fits(number: &[u8]) -> bool {
    let short_plain = number.len() < 300 && !number.iter().any(|b| matches!(b, b'e' | b'E'));
    if short_plain {
        return true;
    }
    std::str::from_utf8(number)
        .ok()
        .and_then(|text| text.parse::<f64>().ok())
        .is_some_and(f64::is_finite)
}

/// A number as a refusal quotes it: at most 40 characters.
fn shorten(number: &[u8]) -> String {
    let text = String::from_utf8_lossy(number);
    match text.char_indices().nth(40) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.into_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(text: &str) -> Option<(String, String)> {
        check(text).err().map(|breach| (breach.path, breach.why))
    }

    #[test]
    fn ordinary_values_pass() {
        for text in [
            "null",
            r#"{"a":[1,2.5,-3e10,1e308,-1.7976931348623157e308,"1e999",{"b":"]]]"}]}"#,
            r#""escaped \" quote [ { ""#,
            "1e-999",
            "123456789012345678901234567890",
        ] {
            assert_eq!(check(text), Ok(()), "{text}");
        }
    }

    #[test]
    fn numbers_out_of_range_are_refused_with_their_path() {
        let (path, why) = refusal(r#"{"a":{"b":[0,{"c":1e999}]}}"#).unwrap_or_default();
        assert_eq!(path, ".a.b[1].c");
        assert!(why.contains("1e999"), "{why}");
        assert_eq!(refusal("-1e400").map(|(path, _)| path), Some(String::new()));
        assert!(refusal(&"9".repeat(400)).is_some());
        assert!(refusal(r#"[1,2,1E+999]"#).is_some_and(|(path, _)| path == "[2]"));
    }

    #[test]
    fn lone_surrogate_escapes_are_refused_with_their_path() {
        for text in [
            r#""\ud83d\ude00 a pair""#,
            r#""\\ud800 is an escaped backslash""#,
            r#"{"\uD83D\uDE00":"\u00e9\ud7ff\ue000"}"#,
        ] {
            assert_eq!(check(text), Ok(()), "{text}");
        }
        let (path, why) = refusal(r#"{"a":["ok","x\ud800y"]}"#).unwrap_or_default();
        assert_eq!(path, ".a[1]");
        assert!(
            why.contains(r"\ud800") && why.contains("surrogate"),
            "{why}"
        );
        for lone in [
            r#""\ud800""#,
            r#""\udc00\ud800""#,
            r#""\ud800\u0041""#,
            r#""\ud800\n\udc00""#,
            r#"{"\udfff":1}"#,
        ] {
            assert!(refusal(lone).is_some(), "{lone}");
        }
    }

    #[test]
    fn nesting_past_the_bound_is_refused() {
        let deepest = format!(
            "{}{}",
            "[".repeat(MAX_JSON_DEPTH),
            "]".repeat(MAX_JSON_DEPTH)
        );
        assert_eq!(check(&deepest), Ok(()));
        let deeper = format!(
            "{{\"k\":{}{}}}",
            "[".repeat(MAX_JSON_DEPTH),
            "]".repeat(MAX_JSON_DEPTH)
        );
        let (path, why) = refusal(&deeper).unwrap_or_default();
        assert!(path.starts_with(".k[0][0]"), "{path}");
        assert!(why.contains("deeper than 64"), "{why}");
    }

    #[test]
    fn a_body_may_wrap_a_value_at_the_deepest_allowed_nesting() {
        let value = format!(
            "{}{}",
            "[".repeat(MAX_JSON_DEPTH),
            "]".repeat(MAX_JSON_DEPTH)
        );
        assert_eq!(check(&value), Ok(()));
        let metadata = format!(r#"{{"metadata":{value}}}"#);
        assert_eq!(check_body(&metadata), Ok(()));
        let event = format!(r#"{{"events":[{{"type":"t","data":{value}}}]}}"#);
        assert_eq!(check_body(&event), Ok(()));
        let too_deep = format!(
            "{}{}",
            "[".repeat(MAX_BODY_DEPTH + 1),
            "]".repeat(MAX_BODY_DEPTH + 1)
        );
        assert!(check_body(&too_deep).is_err());
    }

    #[test]
    fn keys_after_commas_are_tracked() {
        let (path, _) = refusal(r#"{"a":1,"b":[1,2,{"x":0,"y":-1e999}]}"#).unwrap_or_default();
        assert_eq!(path, ".b[2].y");
    }

    #[test]
    fn broken_text_never_panics() {
        for text in [
            "\"", "\"\\", "[", "]]]", "{\"a\":", "-", "1e", "\u{0}", "{:,}",
        ] {
            let _ = check(text);
        }
    }
}
