//! HTTP in, [`stasis_api::Api`] calls, HTTP out, with what a client can
//! hold bounded:
//!
//! - [`accept`]: a cap on connections, and accept failures (a full
//!   descriptor table) logged with a count at most every few seconds, with
//!   a growing pause between attempts;
//! - [`capacity`]: the places of request connections (a new one replaces
//!   the oldest that sent no request head; else 503) and of live tails,
//!   each under its own cap;
//! - [`connection`]: one connection under hyper, closed when its request
//!   head is late or it idles too long ([`clock`] keeps its time);
//! - [`body`]: request bodies read up to their limit, and cut when they
//!   arrive slower than a minimum rate;
//! - [`disk`]: a reserve released when the disk fills, so that reads and
//!   deletes go on while writes are refused;
//! - [`respond`]: request ids, a panic turned into a 500, and every 5xx
//!   logged with its cause;
//! - [`exchange`]: each request's metrics and its log line;
//! - [`open_files`]: the open-file limit, raised at start, and the caps
//!   that fit it.

mod accept;
mod body;
mod capacity;
mod clock;
mod connection;
mod disk;
mod exchange;
mod log_throttle;
mod open_files;
mod respond;

pub use open_files::{FittedCaps, fit as fit_caps, raise as raise_open_file_limit};

use crate::{
    config::{ServeConfig, ServerLimits},
    runtime::{HostObjects, components::Components},
};
use anyhow::Context;
use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use stasis_api::Api;
use std::{future::Future, sync::Arc};
use tokio::{net::TcpListener, sync::watch};

/// Every response body the server sends.
pub type Body = BoxBody<Bytes, Cut>;

/// A streamed response body that failed after its head was sent: hyper
/// then ends the response without its final chunk, so the client sees it
/// cut. The cause is logged where it happened.
#[derive(Debug)]
pub struct Cut;

impl std::fmt::Display for Cut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the response body was cut; the server log holds the cause")
    }
}

impl std::error::Error for Cut {}

/// What every connection shares: the API, the limits it serves under, the
/// places under the caps, whether the server is shutting down, and whether
/// its grace period is over.
pub(crate) struct Site {
    api: Arc<Api<HostObjects>>,
    limits: ServerLimits,
    capacity: Arc<capacity::Capacity>,
    disk: Arc<disk::Disk>,
    shutdown: watch::Sender<bool>,
    grace_over: watch::Sender<bool>,
}

impl Site {
    /// Resolves once shutdown has begun (live tails then end).
    fn shutting_down(&self) -> impl Future<Output = ()> + Send + 'static {
        let mut shutdown = self.shutdown.subscribe();
        async move {
            let _ = shutdown.wait_for(|down| *down).await;
        }
    }
}

/// Opens the data folder, loads the components and serves until a signal.
pub async fn run(config: ServeConfig) -> anyhow::Result<()> {
    let open_file_limit = open_files::raise();
    let listener = TcpListener::bind(config.listen)
        .await
        .with_context(|| format!("binding {}", config.listen))?;
    let api = build_api(&config)?;
    tracing::info!(
        listen = %listener.local_addr()?,
        data_dir = %config.data_dir.display(),
        durability = ?config.durability,
        max_events_per_agent = config.max_events_per_agent,
        snapshot_inline_limit = config.snapshot_inline_limit,
        open_file_limit = open_file_limit.map_or_else(|| "unknown".to_owned(), |l| l.to_string()),
        server = ?config.server,
        objects = ?config.objects,
        "stasis is serving"
    );
    open_files::warn_if_short(open_file_limit, &config);
    match &config.keys {
        Some(keys) => tracing::info!(
            key_ids = ?keys.key_ids().collect::<Vec<_>>(),
            signing_key_id = keys.signing_key_id(),
            "tokens are verified with these keys"
        ),
        None => tracing::warn!(
            "no key configured (STASIS_SECRET, STASIS_KEYS or their files): serving on loopback \
             only, and every request is accepted without a token"
        ),
    }
    serve(listener, api, config.server).await
}

/// Builds the API over this config's data folder.
pub fn build_api(config: &ServeConfig) -> anyhow::Result<Arc<Api<HostObjects>>> {
    std::fs::create_dir_all(&config.data_dir)
        .with_context(|| format!("creating the data folder {}", config.data_dir.display()))?;
    let cache_dir = config
        .cache_dir
        .clone()
        .unwrap_or_else(|| config.data_dir.join("cache"));
    let components = Components::load(&cache_dir)?;
    let objects = HostObjects::new(components, config);
    let api =
        Api::new(objects, config.keys.clone()).with_import_limit(config.server.max_import_bytes);
    Ok(Arc::new(api))
}

/// Accepts connections until SIGTERM or SIGINT. Then it stops accepting
/// (the listener closes, so new connections are refused), ends the live
/// tails cleanly (a client resumes from its cursor elsewhere or later),
/// and lets requests in flight finish within `limits.shutdown_grace`.
pub async fn serve(
    listener: TcpListener,
    api: Arc<Api<HostObjects>>,
    limits: ServerLimits,
) -> anyhow::Result<()> {
    api.objects().spawn_idle_closer();
    let grace = limits.shutdown_grace;
    let reserve = api.objects().data_dir().join("disk-reserve");
    let disk = tokio::task::spawn_blocking({
        let size = limits.disk_reserve;
        move || disk::Disk::open(reserve, size)
    })
    .await?;
    let site = Arc::new(Site {
        api,
        disk: Arc::new(disk),
        capacity: capacity::Capacity::new(limits.max_connections, limits.max_tails),
        limits,
        shutdown: watch::Sender::new(false),
        grace_over: watch::Sender::new(false),
    });
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    accept::accept_until(listener, Arc::clone(&site), &graceful, shutdown_signal()).await;
    tracing::info!(grace = %humantime::format_duration(grace), "shutting down: no new connections; live tails end; requests in flight may finish");
    site.shutdown.send_replace(true);
    let mut finished = std::pin::pin!(graceful.shutdown());
    if tokio::time::timeout(grace, &mut finished).await.is_ok() {
        tracing::info!("every connection finished; exiting");
        return Ok(());
    }
    // Bodies still arriving are answered 503 now; the rest get a moment.
    site.grace_over.send_replace(true);
    match tokio::time::timeout(LAST_ANSWERS, finished).await {
        Ok(()) => tracing::warn!(
            "the grace period ended; requests whose bodies were still arriving were answered \
             503 shutting_down; exiting"
        ),
        Err(_) => tracing::warn!(
            "requests were still in flight when the grace period ended; exiting without them"
        ),
    }
    Ok(())
}

/// After the grace period, how long the 503s for bodies still arriving get
/// to be written.
const LAST_ANSWERS: std::time::Duration = std::time::Duration::from_secs(2);

async fn shutdown_signal() {
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = terminate => {}
    }
}
