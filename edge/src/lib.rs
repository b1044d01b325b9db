//! The stasis Cloudflare Worker.
//!
//! Workers cannot load WASI components, so the domain (`stasis-domain`) and
//! the HTTP contract (`stasis-api`) compile straight into this worker's wasm.
//! This crate only adapts: requests to and from `http` types ([`convert`]),
//! the [`stasis_api::Objects`] port over Durable Object stubs
//! ([`objects`]), and the agent's and the town's Durable Objects running the
//! domain over their own SQLite ([`durable_objects`], [`do_sql`]). Snapshots run the domain's saga in the worker, over the
//! agent's object and Workers KV ([`snapshots`]); a whole-file read of more
//! chunks than one invocation's KV budget allows asks the agent's object
//! for them range by range (its `/chunks` route), each a fresh invocation.
//! The summariser of omitted turns is reached with `fetch` ([`summariser`]).

mod convert;
mod do_sql;
mod durable_objects;
mod objects;
mod request_log;
mod settings;
mod snapshots;
mod summariser;

use request_log::Answered;
use stasis_api::{Api, ApiError, Reply};
use worker::{Context, Env, Request, Response, Result, event};

pub use durable_objects::{AgentObject, TownObject};

#[event(fetch)]
async fn fetch(req: Request, env: Env, _ctx: Context) -> Result<Response> {
    let head = convert::head_of(&req)?;
    let entry = request_log::Entry::start(&head);
    let analytics = request_log::analytics(&env);
    entry.finish(serve(req, env, &head).await, analytics.as_ref())
}

/// Answers one request through the API.
async fn serve(mut req: Request, env: Env, head: &http::request::Parts) -> Result<Answered> {
    let keys = match settings::keys(&env) {
        Ok(Some(keys)) => keys,
        Ok(None) => {
            return not_configured(
                "this worker has no key (wrangler secret put STASIS_SECRET, or STASIS_KEYS; \
                 .dev.vars locally); it refuses to serve without one"
                    .to_owned(),
            );
        }
        Err(err) => return not_configured(format!("this worker's keys are refused: {err}")),
    };
    let storage = match settings::storage(&env) {
        Ok(storage) => storage,
        Err(err) => return not_configured(format!("this worker's settings are refused: {err}")),
    };
    let summariser = match settings::summariser(&env) {
        Ok(summariser) => summariser,
        Err(err) => return not_configured(format!("this worker's summariser is refused: {err}")),
    };
    let objects = objects::EdgeObjects::new(env.clone(), storage, summariser);
    let api = Api::new(objects, Some(keys));
    let admitted = match api.admit(head) {
        Ok(admitted) => admitted,
        Err(err) => return Answered::full(err.into_response()),
    };
    if admitted.streams_body() {
        let mut chunks = convert::body_chunks(&mut req)?;
        let body = convert::limited(&mut chunks, &admitted);
        let answer = api.handle_streamed(admitted, body).await;
        convert::discard_rest(&mut chunks).await;
        return reply(&api, answer, head).await;
    }
    let Some(body) = convert::read_body(&mut req, admitted.body_limit()).await? else {
        return Answered::full(admitted.body_too_large().into_response());
    };
    reply(&api, api.handle(admitted, body.into()).await, head).await
}

/// The API's reply as the worker's response: whole, a live tail served by
/// the agent's object, or an export streamed from here.
async fn reply(
    api: &Api<objects::EdgeObjects>,
    reply: Reply,
    head: &http::request::Parts,
) -> Result<Answered> {
    let objects = api.objects().clone();
    match reply {
        Reply::Full(response) => Answered::full(response),
        Reply::Stream(tail) => Ok(Answered::streamed(api.objects().open_tail(&tail).await?)),
        Reply::Export(export) => {
            convert::export_response(objects, export, head).map(Answered::streamed)
        }
        Reply::Snapshot(download) => {
            convert::snapshot_response(objects, download, head).map(Answered::streamed)
        }
        Reply::Metrics => Answered::full(
            stasis_api::metrics_not_served(
                "the worker's requests, errors and logs are in Workers observability \
                 (wrangler.toml [observability]; README, \"Operating\")",
            )
            .into_response(),
        ),
    }
}

/// 503 `not_configured`: the worker serves nothing until its keys are set.
fn not_configured(message: String) -> Result<Answered> {
    let refusal = ApiError::new(
        http::StatusCode::SERVICE_UNAVAILABLE,
        "not_configured",
        message,
    )
    .with("retry_after", 60)
    .with_header(http::header::RETRY_AFTER, "60");
    Answered::full(refusal.into_response())
}
