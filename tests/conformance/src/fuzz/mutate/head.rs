//! Mutations of a request's head: its token, method, path, query, content
//! type, declared length, headers and framing.

use fastrand::Rng;

use crate::fuzz::catalog::Route;
use crate::fuzz::request::{Request, Stage};
use crate::fuzz::world::World;
use crate::raw::Framing;
use crate::{admin_token, foreign_token, town_token};

/// A missing, malformed, foreign or other-town token.
pub fn auth(rng: &mut Rng, world: &World, request: &mut Request) {
    let admin = admin_token();
    let (value, kind, stage) = match rng.u8(..9) {
        0 => (None, "no token", Some(Stage::Auth)),
        1 => (
            Some("Bearer".to_owned()),
            "'Bearer' alone",
            Some(Stage::Auth),
        ),
        2 => (
            Some(format!("Basic {admin}")),
            "a Basic header",
            Some(Stage::Auth),
        ),
        3 => (
            Some(format!("Bearer {}", foreign_token())),
            "a token of another secret",
            Some(Stage::Auth),
        ),
        4 => (
            Some(format!("Bearer {}", tampered(&admin))),
            "a tampered token",
            Some(Stage::Auth),
        ),
        5 => (
            Some("Bearer stasis_v1.admin.zz".to_owned()),
            "a malformed token",
            Some(Stage::Auth),
        ),
        6 => (
            Some(format!("Bearer {}", town_token("t-elsewhere"))),
            "another town's token",
            Some(Stage::Scope),
        ),
        7 => (
            Some(format!("Bearer {}", town_token(&world.town.id))),
            "this town's token",
            None,
        ),
        _ => (Some(format!("bearer {admin}")), "a lower-case scheme", None),
    };
    request.auth = value.map(|v| (v, kind));
    request.auth_breaks = stage;
    request.notes.push(kind.to_owned());
}

fn tampered(token: &str) -> String {
    let mut tampered = token.to_owned();
    let last = if tampered.ends_with('0') { '1' } else { '0' };
    tampered.pop();
    tampered.push(last);
    tampered
}

/// A method the route does not take (now and then one it does; the
/// request knows which).
pub fn method(rng: &mut Rng, request: &mut Request) {
    const METHODS: &[&str] = &[
        "PATCH", "OPTIONS", "TRACE", "PROPFIND", "FOO", "GET", "PUT", "POST", "DELETE",
    ];
    let method = METHODS[rng.usize(..METHODS.len())];
    request.notes.push(format!("method {method}"));
    request.method = method.to_owned();
}

/// An id of the path replaced by an invalid one, or by the same id fully
/// percent-encoded (which names the same object).
pub fn path_id(rng: &mut Rng, request: &mut Request) {
    let ids: Vec<usize> = (0..request.segments.len())
        .filter(|&i| request.segments[i].1)
        .collect();
    if ids.is_empty() {
        return head_note(request, "no id to mutate");
    }
    let at = ids[rng.usize(..ids.len())];
    let last = at + 1 == request.segments.len();
    let (replacement, stage) = invalid_id(rng, &request.segments[at].0, last);
    request.notes.push(format!("id {replacement:?}"));
    request.segments[at].0 = replacement;
    if let Some(stage) = stage {
        request.stages.push(stage);
    }
}

fn invalid_id(rng: &mut Rng, id: &str, last: bool) -> (String, Option<Stage>) {
    const INVALID: &[&str] = &[
        "a%2Fb",
        "%FF",
        "%zz",
        "%",
        "a%20b",
        "%C3%A9t%C3%A9",
        "a+b",
        "a%00b",
        "a*b",
        "~x",
    ];
    const DOTS: &[&str] = &["..", ".", "%2E%2E", "%2e", ".%2E"];
    match rng.u8(..6) {
        0 => (percent_encoded(id), None),
        1 => (DOTS[rng.usize(..DOTS.len())].to_owned(), Some(Stage::DotId)),
        // An empty last segment reads as a trailing slash (another route).
        2 if !last => (String::new(), Some(Stage::Id)),
        3 => ("x".repeat(129), Some(Stage::Id)),
        _ => (
            INVALID[rng.usize(..INVALID.len())].to_owned(),
            Some(Stage::Id),
        ),
    }
}

fn percent_encoded(id: &str) -> String {
    id.bytes().map(|b| format!("%{b:02X}")).collect()
}

/// A path no route has, or the same path with a trailing slash.
pub fn path_shape(rng: &mut Rng, request: &mut Request) {
    match rng.u8(..3) {
        0 => {
            request.trailing_slash = true;
            return head_note(request, "a trailing slash");
        }
        1 => {
            request.segments.push(("zz-extra".to_owned(), false));
            request.segments.push(("more".to_owned(), false));
        }
        _ => {
            let fixed: Vec<usize> = (0..request.segments.len())
                .filter(|&i| !request.segments[i].1)
                .collect();
            let at = fixed[rng.usize(..fixed.len())];
            let renamed = format!("{}x", request.segments[at].0);
            request.segments[at].0 = renamed;
        }
    }
    request.notes.push("a path no route has".to_owned());
    request.stages.push(Stage::Route);
    request.shape_kept = false;
}

/// A stray or repeated parameter (ignored), or a bad value for one the
/// read uses (400).
pub fn query(rng: &mut Rng, request: &mut Request) {
    let numeric: &[&str] = match request.route {
        Route::Events | Route::TownEvents => &["after", "limit"],
        Route::Conversation => &["max_turns", "max_tokens"],
        Route::Memory => &["limit"],
        _ => &[],
    };
    if numeric.is_empty() || rng.u8(..3) == 0 {
        request.query.push(("zz".to_owned(), "1".to_owned()));
        request.query.push(("after".to_owned(), "2".to_owned()));
        return head_note(request, "stray query parameters");
    }
    let name = numeric[rng.usize(..numeric.len())];
    let value = bad_number(rng, request.route, name);
    request.notes.push(format!("{name}={value}"));
    request.query.push((name.to_owned(), value));
    request.stages.push(Stage::Query);
}

fn bad_number(rng: &mut Rng, route: Route, name: &str) -> String {
    const BAD: &[&str] = &[
        "-1",
        "abc",
        "1.5",
        "1e3",
        "",
        "18446744073709551616",
        "%FF",
        "0x10",
        "+1",
    ];
    if rng.bool() && name != "after" {
        let over = match (route, name) {
            (Route::Memory, _) | (_, "max_turns") => "1001",
            (_, "max_tokens") => "1000001",
            _ => "10001",
        };
        return if rng.bool() { "0" } else { over }.to_owned();
    }
    BAD[rng.usize(..BAD.len())].to_owned()
}

/// A content type the route does not take (415 on a write), or an odd
/// spelling of one it does (the request judges which it ended with).
pub fn content_type(rng: &mut Rng, request: &mut Request) {
    const WRONG: &[&str] = &[
        "text/plain",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        "application/jsonx",
        "",
        "application/json, text/plain",
    ];
    let snapshot = request.route == Route::Snapshot;
    let value = match rng.u8(..4) {
        0 if snapshot => "application/json",
        0 => "application/octet-stream",
        1 if snapshot => "Application/Octet-Stream; x=y",
        1 => "APPLICATION/JSON;charset=latin1",
        _ => WRONG[rng.usize(..WRONG.len())],
    };
    request.set_header("Content-Type", value);
    request.notes.push(format!("Content-Type {value:?}"));
}

/// A `Content-Length` far past any limit on a small body: refused from the
/// head alone.
pub fn declared_length(rng: &mut Rng, request: &mut Request) {
    // An import streams up to 16 GiB, so only lengths past that are
    // refused from the head there.
    let declared = match rng.u8(..3) {
        0 if request.route != Route::Import => 100 << 20,
        0 | 1 => 1 << 40,
        _ => 1 << 62,
    };
    request.framing = Framing::Declared(declared);
    request.notes.push(format!("Content-Length {declared}"));
    request.stages.push(Stage::Size);
}

/// A malformed header the route reads, or one it ignores.
pub fn headers(rng: &mut Rng, request: &mut Request) {
    let (name, value, stage) = match (request.route, request.method.as_str()) {
        (Route::Heartbeat | Route::MayorMessage, "POST") => {
            let long = "k".repeat(256);
            let bad = ["", "a b", long.as_str(), "\"\"", "é"];
            let value = bad[rng.usize(..bad.len())].to_owned();
            ("Idempotency-Key", value, Some(Stage::Body))
        }
        (Route::Snapshot, "PUT" | "POST") => snapshot_header(rng),
        (Route::Events, _) if rng.bool() => ("Last-Event-ID", "abc".to_owned(), Some(Stage::Query)),
        _ => ("Accept", "text/event-stream".to_owned(), None),
    };
    request.set_header(name, &value);
    request.notes.push(format!("{name}: {value:?}"));
    if let Some(stage) = stage {
        request.stages.push(stage);
    }
}

fn snapshot_header(rng: &mut Rng) -> (&'static str, String, Option<Stage>) {
    match rng.u8(..5) {
        0 => ("X-Stasis-Sha256", "0".repeat(64), Some(Stage::Body)),
        1 => ("X-Stasis-Sha256", "XYZ".to_owned(), Some(Stage::Body)),
        2 => ("X-Stasis-Event-Seq", "-1".to_owned(), Some(Stage::Body)),
        3 => (
            "If-Match",
            format!("\"{}\"", "0".repeat(64)),
            Some(Stage::Body),
        ),
        _ => ("If-Match", "garbage".to_owned(), None),
    }
}

/// The same body sent in chunks, with no length known in advance.
pub fn chunked(request: &mut Request) {
    if request.framing == Framing::Length {
        request.framing = Framing::Chunked;
        head_note(request, "chunked");
    }
}

fn head_note(request: &mut Request, note: &str) {
    request.notes.push(note.to_owned());
}
