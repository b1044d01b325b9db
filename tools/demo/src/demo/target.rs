//! The server the demo runs against: a fresh host inside this process (the
//! default), or one given by `--url`.

use anyhow::Context;
use stasis_host::config::{ObjectLimits, ServeConfig, ServerLimits};
use std::{
    net::SocketAddr,
    path::{Path, PathBuf},
    time::Duration,
};

/// Where requests go, and the in-process host when there is one.
pub struct Target {
    /// `http://127.0.0.1:<port>` or the `--url` given.
    pub base_url: String,
    /// The bearer token, when one is needed.
    pub token: Option<String>,
    /// Said once at the start.
    pub description: String,
    local: Option<tokio::runtime::Runtime>,
}

impl Target {
    /// A server someone else runs.
    pub fn remote(url: &str, token: Option<String>) -> anyhow::Result<Self> {
        let base_url = url.trim().trim_end_matches('/').to_owned();
        if base_url.starts_with("https://") && !cfg!(feature = "tls") {
            anyhow::bail!(
                "this stasis was built without HTTPS: rebuild with `--features tls` to reach {base_url}"
            );
        }
        Ok(Self {
            description: format!("{base_url} (given by --url)"),
            base_url,
            token,
            local: None,
        })
    }

    /// A fresh host on a free loopback port over `data_dir`, with no secret
    /// (loopback only, no token needed), its compiled components in `cache_dir`
    /// (else in the data folder). `temp_root` is removed if the demo
    /// is interrupted (the server owns Ctrl-C while it runs), unless kept.
    pub fn in_process(
        data_dir: PathBuf,
        cache_dir: Option<PathBuf>,
        temp_root: Option<PathBuf>,
    ) -> anyhow::Result<Self> {
        let config = ServeConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            data_dir,
            cache_dir,
            durability: stasis_sqlite::Durability::Fsync,
            max_events_per_agent: stasis_domain::limits::DEFAULT_MAX_EVENTS,
            snapshot_inline_limit: stasis_domain::snapshot::DEFAULT_INLINE_LIMIT,
            snapshot_limit: stasis_domain::snapshot::DEFAULT_SNAPSHOT_LIMIT,
            workspace_limit: stasis_domain::workspace::DEFAULT_WORKSPACE_LIMIT,
            snapshot_pending_ttl: std::time::Duration::from_secs(3600),
            snapshot_grace: std::time::Duration::ZERO,
            liveness_timeout_secs: 60,
            history_retention: Default::default(),
            keys: None,
            summariser: None,
            server: ServerLimits::default(),
            objects: ObjectLimits::default(),
        };
        config.check()?;
        let runtime =
            stasis_host::runtime::async_runtime().context("starting the async runtime")?;
        let (listener, api) = runtime.block_on(async {
            let listener = tokio::net::TcpListener::bind(config.listen).await?;
            let api = stasis_host::server::build_api(&config)?;
            anyhow::Ok((listener, api))
        })?;
        let address = listener.local_addr()?;
        runtime.spawn(async move {
            // `serve` returns only when Ctrl-C or SIGTERM stops it; the demo
            // cannot go on without its server, so it ends here too.
            let _ = stasis_host::server::serve(listener, api, ServerLimits::default()).await;
            eprintln!("stasis-demo: interrupted");
            if let Some(root) = temp_root {
                remove_quietly(&root);
            }
            std::process::exit(130);
        });
        Ok(Self {
            base_url: format!("http://{address}"),
            token: None,
            description: format!(
                "http://{address} (a fresh host in this process, data in {})",
                config.data_dir.display()
            ),
            local: Some(runtime),
        })
    }
}

impl Drop for Target {
    /// Stops the in-process host, if any.
    fn drop(&mut self) {
        if let Some(runtime) = self.local.take() {
            // Every acknowledged write is committed; idle workers need no wait.
            runtime.shutdown_timeout(Duration::from_millis(200));
        }
    }
}

/// Removes a temporary folder; what cannot be removed stays (it is under
/// the system's temporary folder).
pub fn remove_quietly(root: &Path) {
    let _ = std::fs::remove_dir_all(root);
}
