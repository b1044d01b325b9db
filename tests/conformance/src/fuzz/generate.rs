//! Valid requests: a route of the catalog, one of its methods, a path to
//! one of the world's agents (or its town), a sensible query, the headers
//! a client sends, and a valid body.

use fastrand::Rng;

use super::bodies;
use super::bodies::Payload;
use super::catalog::Route;
use super::request::{Request, Target};
use super::world::{MEMORY_KEYS, SESSIONS, World};
use crate::admin_token;
use crate::raw::Framing;
use crate::snapshot::sha256_hex;
use crate::town::escape;

/// A valid request to `route`, with an admin token.
pub fn valid(rng: &mut Rng, world: &mut World, route: Route) -> Request {
    let methods = route.methods();
    let method = methods[rng.usize(..methods.len())].to_owned();
    let target = match route {
        Route::Health => Target::Nowhere,
        r if r.is_agent() => Target::Agent(rng.usize(..world.agents.len())),
        _ => Target::Town,
    };
    let payload = bodies::valid(rng, world, route, &method);
    let mut request = Request {
        segments: segments(rng, world, route, target),
        trailing_slash: false,
        query: query(rng, route, &method),
        auth: Some((format!("Bearer {}", admin_token()), "admin token")),
        auth_breaks: None,
        headers: Vec::new(),
        payload,
        framing: Framing::Length,
        stages: Vec::new(),
        shape_kept: true,
        notes: Vec::new(),
        method,
        route,
        target,
    };
    content_type(rng, &mut request);
    headers(rng, world, &mut request);
    request
}

/// The path, as segments flagged when they are ids.
fn segments(rng: &mut Rng, world: &World, route: Route, target: Target) -> Vec<(String, bool)> {
    let fixed = |s: &str| (s.to_owned(), false);
    let id = |s: &str| (s.to_owned(), true);
    let mut path = match (route, target) {
        (Route::Health, _) => return vec![fixed("healthz")],
        (_, Target::Agent(i)) => {
            let log = &world.agents[i].log;
            vec![
                fixed("api"),
                fixed("towns"),
                id(&log.town),
                fixed("rigs"),
                id(&log.rig),
                fixed("agents"),
                id(&log.agent),
            ]
        }
        _ => vec![fixed("api"), fixed("towns"), id(&world.town.id)],
    };
    let leaf = match route {
        Route::Session => World::id(rng, &SESSIONS),
        _ => World::id(rng, &MEMORY_KEYS),
    };
    let suffix = route.suffix(&leaf);
    let parts: Vec<&str> = suffix.split('/').filter(|s| !s.is_empty()).collect();
    let last = parts.len();
    for (n, part) in parts.into_iter().enumerate() {
        let is_leaf = n + 1 == last && matches!(route, Route::Session | Route::MemoryEntry);
        path.push((part.to_owned(), is_leaf));
    }
    path
}

/// A valid query for reads that take one.
fn query(rng: &mut Rng, route: Route, method: &str) -> Vec<(String, String)> {
    if !matches!(method, "GET" | "HEAD") {
        return Vec::new();
    }
    let candidates: Vec<(&str, String)> = match route {
        Route::Events | Route::TownEvents => vec![
            ("after", rng.u64(..40).to_string()),
            ("limit", rng.u64(1..=10_000).to_string()),
            ("session_id", escape(&World::id(rng, &SESSIONS))),
            ("type", "message.updated".to_owned()),
        ],
        Route::Conversation => vec![
            ("max_turns", rng.u64(1..=1_000).to_string()),
            ("max_tokens", rng.u64(1..=1_000_000).to_string()),
            ("session_id", escape(&World::id(rng, &SESSIONS))),
        ],
        Route::Memory => vec![
            ("prefix", "k".to_owned()),
            ("q", escape("seeded \"é")),
            ("limit", rng.u64(1..=1_000).to_string()),
        ],
        _ => Vec::new(),
    };
    // The town's log takes no session or type filter.
    let takes = |name: &str| route != Route::TownEvents || matches!(name, "after" | "limit");
    candidates
        .into_iter()
        .filter(|(name, _)| takes(name) && rng.bool())
        .map(|(name, value)| (name.to_owned(), value))
        .collect()
}

/// The content type a client sends with the body (or none, also valid).
fn content_type(rng: &mut Rng, request: &mut Request) {
    let kind = match request.payload {
        Payload::Empty => return,
        Payload::Bytes(_) => "application/octet-stream",
        Payload::Json(_) if rng.bool() => "application/json; charset=utf-8",
        Payload::Json(_) => "application/json",
    };
    if rng.u8(..5) != 0 {
        request.set_header("Content-Type", kind);
    }
}

/// The headers a client sends to this route.
fn headers(rng: &mut Rng, world: &World, request: &mut Request) {
    let agent = match request.target {
        Target::Agent(i) => i,
        _ => 0,
    };
    match (request.route, request.method.as_str()) {
        (Route::Snapshot, "PUT" | "POST") => snapshot_put_headers(rng, world, agent, request),
        (Route::Snapshot, "GET" | "HEAD") => {
            if let Some(etag) = world.etag(agent).filter(|_| rng.u8(..4) == 0) {
                request.set_header("If-None-Match", &etag);
            }
        }
        (Route::Heartbeat | Route::MayorMessage, _) if rng.bool() => {
            request.set_header("Idempotency-Key", &format!("key-{}", rng.u8(..20)));
        }
        (Route::Events, "GET") => match rng.u8(..10) {
            0 => request.set_header("Accept", "text/event-stream"),
            1 => request.set_header("Last-Event-ID", &rng.u8(..30).to_string()),
            _ => {}
        },
        _ => {}
    }
}

fn snapshot_put_headers(rng: &mut Rng, world: &World, agent: usize, request: &mut Request) {
    if rng.u8(..10) < 7 {
        let sha = sha256_hex(&request.body_bytes());
        request.set_header("X-Stasis-Sha256", &sha);
    }
    if rng.u8(..10) < 3 {
        request.set_header("X-Stasis-Event-Seq", &rng.u64(..100).to_string());
    }
    match rng.u8(..10) {
        0..=2 => {
            if let Some(etag) = world.etag(agent) {
                request.set_header("If-Match", &etag);
            }
        }
        3 => request.set_header("If-Match", "*"),
        _ => {}
    }
}
