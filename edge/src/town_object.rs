//! The town's Durable Object: the domain's town rules over the object's own
//! SQLite, one atomic call at a time.
#![allow(
    missing_docs,
    reason = "#[durable_object] generates wasm-bindgen glue without docs"
)]

use crate::{do_sql::DoSql, settings, transaction::atomically};
use stasis_domain::{
    town::{self, TownEnv},
    wire,
};
use wasm_bindgen::JsValue;
use worker::{DurableObject, Env, Request, Response, Result, State, durable_object};

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
