//! The open-file limit: raised to the hard limit at start, and compared
//! with what the caps may need at full load.

use crate::{config::ServeConfig, runtime::MAX_GROUPS};
use rlimit::Resource;

/// Descriptors needed besides connections and open objects: the listener,
/// stdio, the component cache, the readiness probe, and a KV file for each
/// call group that may run at once.
const BASE_NEED: u64 = 64 + MAX_GROUPS as u64;
/// Descriptors an open object holds: its database, `-wal` and `-shm`.
const PER_OBJECT: u64 = 3;
/// Connections over the cap being answered 503 at once (see `accept`).
const REFUSALS: u64 = 64;

/// Raises the soft open-file limit to the hard one; returns the limit in
/// force, if it can be read.
pub fn raise() -> Option<u64> {
    match rlimit::increase_nofile_limit(u64::MAX) {
        Ok(limit) => Some(limit),
        Err(err) => {
            tracing::warn!(%err, "could not raise the open-file limit");
            Resource::NOFILE.get().ok().map(|(soft, _)| soft)
        }
    }
}

/// Warns when the caps could need more descriptors than `limit`.
pub fn warn_if_short(limit: Option<u64>, config: &ServeConfig) {
    let connections = u64::try_from(config.server.max_connections).unwrap_or(u64::MAX);
    let objects = u64::try_from(config.objects.max_open).unwrap_or(u64::MAX);
    let need = BASE_NEED
        .saturating_add(connections)
        .saturating_add(REFUSALS)
        .saturating_add(objects.saturating_mul(PER_OBJECT));
    if let Some(limit) = limit.filter(|limit| *limit < need) {
        tracing::warn!(
            open_file_limit = limit,
            needed_at_full_load = need,
            "the open-file limit is lower than --max-connections and --max-open-objects may \
             need; when it runs out, new connections wait until others close (lower those \
             settings or raise the hard limit)"
        );
    }
}
