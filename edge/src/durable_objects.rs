//! The two Durable Object classes, each running the domain over its own
//! SQLite one atomic call at a time: the agent's (with the live tails of
//! its log, and the ranges of snapshot chunks a whole-file read asks for)
//! and the town's.
#![allow(
    missing_docs,
    reason = "#[durable_object] generates wasm-bindgen glue without docs"
)]

use crate::{
    do_sql::{DoSql, atomically},
    settings,
    snapshots::{ChunkRange, WorkersKv},
};
use futures::{StreamExt as _, channel::oneshot};
use stasis_api::{Objects, sse::Tail};
use stasis_domain::{
    DomainError,
    agent::{self, AgentCall, AgentReply, ObjectEnv},
    event_log,
    fence::Fence,
    ids::AgentKey,
    limits,
    operation::{agent::AgentOperation, town::TownOperation},
    town::{self, TownEnv},
    wire,
};
use std::{cell::RefCell, rc::Rc, time::Duration};
use wasm_bindgen::JsValue;
use worker::{DurableObject, Env, Request, Response, Result, State, durable_object};

/// One agent: its log, sessions, checkpoint, memory and snapshot metadata (the
/// snapshot bytes live in Workers KV).
#[durable_object]
pub struct AgentObject {
    core: Rc<AgentCore>,
    /// For the KV namespace a range of chunks is read from.
    env: Env,
}

/// What the object's handlers and its open tails share.
struct AgentCore {
    sql: DoSql,
    /// `ctx.storage`, for `transactionSync`.
    storage: JsValue,
    max_events: u64,
    /// How long superseded versions are kept.
    retention: stasis_domain::history::RetentionPolicy,
    /// Tails waiting for the next append.
    waiters: RefCell<Vec<oneshot::Sender<()>>>,
}

impl DurableObject for AgentObject {
    fn new(state: State, env: Env) -> Self {
        let (sql, storage) = crate::do_sql::open(state);
        // The schema is created before any event is delivered.
        if let Err(err) = agent::migrate(&sql) {
            worker::console_error!("creating the agent schema failed: {err}");
        }
        Self {
            core: Rc::new(AgentCore {
                sql,
                storage,
                // A refused setting never reaches here: the worker answers
                // 503 `not_configured` before it calls any object.
                max_events: settings::storage(&env)
                    .map_or(limits::DEFAULT_MAX_EVENTS, |s| s.max_events_per_agent),
                retention: settings::storage(&env)
                    .map_or_else(|_| Default::default(), |s| s.history_retention),
                waiters: RefCell::new(Vec::new()),
            }),
            env,
        }
    }

    async fn fetch(&self, mut req: Request) -> Result<Response> {
        match req.path().as_str() {
            "/call" => {
                let request = req.text().await?;
                let reply = self.core.answer(request);
                Response::ok(wire::encode(&reply).map_err(storage_error)?)
            }
            "/tail" => {
                let tail: Tail = serde_json::from_str(&req.text().await?)?;
                let frames = stasis_api::sse::stream(LocalAgent(Rc::clone(&self.core)), tail)
                    .map(Ok::<_, worker::Error>);
                let response = Response::from_stream(frames)?;
                let headers = worker::Headers::new();
                for (name, value) in stasis_api::event_stream_head().headers() {
                    if let Ok(value) = value.to_str() {
                        headers.set(name.as_str(), value)?;
                    }
                }
                Ok(response.with_headers(headers))
            }
            "/ready" => Response::from_json(&self.core.probe()),
            "/chunks" => {
                let range: ChunkRange = serde_json::from_str(&req.text().await?)?;
                let blobs = WorkersKv::open(&self.env).map_err(storage_error)?;
                let chunks =
                    stasis_api::snapshot_ranges::read_chunks(blobs, range.key_prefix, range.chunks)
                        .map(|chunk| chunk.map(Vec::from).map_err(storage_error));
                Response::from_stream(chunks)
            }
            other => Response::error(format!("no such object route {other}"), 404),
        }
    }
}

/// A chunk read that failed mid-range errors the stream, which cuts the
/// worker's download; the cause goes to the log.
fn storage_error(err: DomainError) -> worker::Error {
    worker::console_error!("reading a range of chunks failed: {err}");
    worker::Error::RustError(err.to_string())
}

impl AgentCore {
    /// Runs one encoded request (`stasis_domain::wire`) atomically: inside
    /// `transactionSync`, so that a refused call (its fence included) rolls
    /// back every write it made.
    fn answer(&self, request: String) -> std::result::Result<AgentReply, DomainError> {
        let env = self.env();
        let sql = self.sql.clone();
        let reply = atomically(&self.storage, move || {
            wire::answer_agent(&sql, &request, &env)
        });
        self.woken_by(reply)
    }

    /// Runs one call atomically, unfenced (the object's own tails).
    fn execute(&self, call: AgentCall) -> std::result::Result<AgentReply, DomainError> {
        let env = self.env();
        let sql = self.sql.clone();
        let reply = atomically(&self.storage, move || agent::execute(&sql, &call, &env));
        self.woken_by(reply)
    }

    fn env(&self) -> ObjectEnv {
        ObjectEnv {
            now_ms: settings::now_ms(),
            max_events: self.max_events,
            retention: self.retention,
        }
    }

    /// Wakes the tails waiting for an append, if `reply` is an append's.
    fn woken_by(
        &self,
        reply: std::result::Result<AgentReply, DomainError>,
    ) -> std::result::Result<AgentReply, DomainError> {
        if matches!(reply, Ok(AgentReply::Appended(_))) {
            for waiter in self.waiters.borrow_mut().drain(..) {
                let _ = waiter.send(());
            }
        }
        reply
    }

    /// Readiness: one read of the object's SQLite.
    fn probe(&self) -> std::result::Result<(), DomainError> {
        event_log::state(&self.sql).map(drop)
    }
}

/// The [`Objects`] port inside the agent's own object, for its live tails:
/// calls run locally, and waiting is woken by the next append.
#[derive(Clone)]
struct LocalAgent(Rc<AgentCore>);

/// Tails rebuild no conversation: no summariser inside an object.
impl stasis_api::Summariser for LocalAgent {}

impl Objects for LocalAgent {
    async fn agent<R: Send + 'static>(
        &self,
        _key: &AgentKey,
        op: AgentOperation<R>,
    ) -> std::result::Result<R, DomainError> {
        op.run_with(|call| self.0.execute(call))
    }

    /// Tails never reach a town.
    async fn town<R: Send + 'static>(
        &self,
        town: &str,
        _op: TownOperation<R>,
    ) -> std::result::Result<R, DomainError> {
        Err(DomainError::Storage(format!(
            "town {town} is not reachable from inside an agent object"
        )))
    }

    async fn wait_for_events(&self, _key: &AgentKey, last_seq: u64, timeout: Duration) {
        let current = event_log::state(&self.0.sql)
            .map(|s| s.last_seq)
            .unwrap_or(0);
        if current > last_seq {
            return;
        }
        let (wake, woken) = oneshot::channel();
        self.0.waiters.borrow_mut().push(wake);
        let delay = worker::Delay::from(timeout);
        futures::future::select(woken, delay).await;
    }

    /// The probe the worker's readiness runs in its own object.
    async fn ready(&self) -> std::result::Result<(), DomainError> {
        self.0.probe()
    }

    fn now_ms(&self) -> i64 {
        settings::now_ms()
    }

    /// Tails only read.
    fn fenced(&self, _fence: Fence) -> Self {
        self.clone()
    }
}

/// One town: its state, registry, log and deferred dispatches.
#[durable_object]
pub struct TownObject {
    sql: DoSql,
    /// `ctx.storage`, for `transactionSync`.
    storage: JsValue,
}

impl DurableObject for TownObject {
    fn new(state: State, _env: Env) -> Self {
        let (sql, storage) = crate::do_sql::open(state);
        // The schema is created before any call is delivered.
        if let Err(err) = town::migrate(&sql) {
            worker::console_error!("creating the town schema failed: {err}");
        }
        Self { sql, storage }
    }

    async fn fetch(&self, mut req: Request) -> Result<Response> {
        if req.path() != "/call" {
            return Response::error(format!("no such object route {}", req.path()), 404);
        }
        let request = req.text().await?;
        let sql = self.sql.clone();
        let env = TownEnv {
            now_ms: settings::now_ms(),
        };
        let reply = atomically(&self.storage, move || {
            wire::answer_town(&sql, &request, &env)
        });
        let encoded =
            wire::encode(&reply).map_err(|err| worker::Error::RustError(err.to_string()))?;
        Response::ok(encoded)
    }
}
