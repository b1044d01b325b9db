//! HTTP in, [`stasis_api::Api`] calls, HTTP out, with what a client can
//! hold bounded:
//!
//! - [`accept`]: a cap on connections (one more is answered 503), and
//!   accept failures (a full descriptor table) logged with a count at most
//!   every few seconds, with a growing pause between attempts;
//! - [`connection`]: one connection under hyper, closed when its request
//!   head is late or it idles too long ([`clock`] keeps its time);
//! - [`body`]: request bodies read up to their limit, and cut when they
//!   arrive slower than a minimum rate;
//! - [`respond`]: request ids, a panic turned into a 500, and every 5xx
//!   logged with its cause;
//! - [`open_files`]: the open-file limit, raised at start.

mod accept;
mod body;
mod clock;
mod connection;
mod log_throttle;
mod open_files;
mod respond;

use crate::{
    config::{ServeConfig, ServerLimits},
    runtime::{HostObjects, components::Components},
};
use anyhow::Context;
use stasis_api::Api;
use std::{sync::Arc, time::Duration};
use tokio::net::TcpListener;

/// How long in-flight requests get to finish after SIGTERM/SIGINT.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// What every connection shares: the API and the limits it serves under.
pub(crate) struct Site {
    api: Arc<Api<HostObjects>>,
    limits: ServerLimits,
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
    let components = Components::load(&config.data_dir.join("cache"))?;
    let objects = HostObjects::new(components, config);
    let api =
        Api::new(objects, config.keys.clone()).with_import_limit(config.server.max_import_bytes);
    Ok(Arc::new(api))
}

/// Accepts connections until SIGTERM or SIGINT, then drains for a moment.
pub async fn serve(
    listener: TcpListener,
    api: Arc<Api<HostObjects>>,
    limits: ServerLimits,
) -> anyhow::Result<()> {
    api.objects().spawn_idle_closer();
    let site = Arc::new(Site { api, limits });
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    accept::accept_until(listener, site, &graceful, shutdown_signal()).await;
    tracing::info!("shutting down");
    if tokio::time::timeout(SHUTDOWN_GRACE, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::info!("open streams did not finish within the grace period");
    }
    Ok(())
}

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
