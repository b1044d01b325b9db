//! The open-file limit: raised to the hard limit at start, the caps left
//! unset derived from it, and a warning when caps set by hand could need
//! more descriptors than it allows.
//!
//! What the caps may hold at full load, in descriptors: a socket for each
//! connection and each live tail, and three for each open object (its
//! database, `-wal` and `-shm`). Busy objects stay open past
//! `--max-open-objects` (see `runtime::open_objects`), and every request
//! and tail may hold one, so the objects open at once are at most the
//! larger of the cap and the connections plus tails.

use crate::{config::ServeConfig, runtime::MAX_GROUPS};
use rlimit::Resource;

/// Descriptors needed besides connections and open objects: the listener,
/// stdio, the component cache, the readiness probe, and a KV file for each
/// call group that may run at once.
const BASE_NEED: u64 = 64 + MAX_GROUPS as u64;
/// Descriptors an open object holds: its database, `-wal` and `-shm`.
const PER_OBJECT: u64 = 3;
/// Connections over the cap being answered 503 at once (see `accept`).
pub(super) const REFUSALS: u64 = 64;
/// The derived caps stop here, however high the limit: past them memory,
/// not descriptors, is what runs out.
const MOST_CONNECTIONS: usize = 4096;
const MOST_TAILS: usize = 1024;
const MOST_OBJECTS: usize = 1024;
/// The derived caps never go below these, even when the limit is too low
/// for them (a warning says so).
const FEWEST_CONNECTIONS: usize = 8;
const FEWEST_TAILS: usize = 4;
const FEWEST_OBJECTS: usize = 12;

/// Caps that fit an open-file limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FittedCaps {
    /// Request connections served at once.
    pub connections: usize,
    /// Live tails (event streams) open at once.
    pub tails: usize,
    /// Idle objects kept open.
    pub objects: usize,
}

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

/// The caps that fit `limit` descriptors at full load: a quarter of what
/// is left after the base need goes to sockets (two thirds of it to
/// connections, the rest to tails), three quarters to the objects those
/// and the idle ones hold. An unknown limit gets the highest caps.
pub fn fit(limit: Option<u64>) -> FittedCaps {
    let spare = limit.map_or(u64::MAX, |limit| limit.saturating_sub(BASE_NEED + REFUSALS));
    let quarter = usize::try_from(spare / (1 + PER_OBJECT)).unwrap_or(usize::MAX);
    let connections = quarter / 3 * 2;
    FittedCaps {
        connections: connections.clamp(FEWEST_CONNECTIONS, MOST_CONNECTIONS),
        tails: quarter
            .saturating_sub(connections)
            .clamp(FEWEST_TAILS, MOST_TAILS),
        objects: quarter.clamp(FEWEST_OBJECTS, MOST_OBJECTS),
    }
}

/// Descriptors these caps may need at full load.
fn need(caps: FittedCaps) -> u64 {
    let count = |n: usize| u64::try_from(n).unwrap_or(u64::MAX);
    let sockets = count(caps.connections).saturating_add(count(caps.tails));
    let objects = count(caps.objects).max(sockets);
    BASE_NEED
        .saturating_add(REFUSALS)
        .saturating_add(sockets)
        .saturating_add(objects.saturating_mul(PER_OBJECT))
}

/// Warns when the caps could need more descriptors than `limit`.
pub fn warn_if_short(limit: Option<u64>, config: &ServeConfig) {
    let need = need(FittedCaps {
        connections: config.server.max_connections,
        tails: config.server.max_tails,
        objects: config.objects.max_open,
    });
    if let Some(limit) = limit.filter(|limit| *limit < need) {
        tracing::warn!(
            open_file_limit = limit,
            needed_at_full_load = need,
            "the open-file limit is lower than --max-connections, --max-tails and \
             --max-open-objects may need; when it runs out, idle objects are closed first and \
             new connections wait until others close (leave those settings unset to have them \
             fit the limit, or raise the hard limit)"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fitted_caps_need_no_more_than_the_limit() {
        for limit in [512, 1024, 4096, 65_536, 1 << 20] {
            let caps = fit(Some(limit));
            assert!(need(caps) <= limit, "{limit}: {caps:?}");
        }
        assert_eq!(
            fit(Some(1024)),
            FittedCaps {
                connections: 128,
                tails: 64,
                objects: 192
            }
        );
    }

    #[test]
    fn a_high_or_unknown_limit_gets_the_highest_caps_and_a_tiny_one_the_fewest() {
        let most = FittedCaps {
            connections: MOST_CONNECTIONS,
            tails: MOST_TAILS,
            objects: MOST_OBJECTS,
        };
        assert_eq!(fit(Some(1 << 20)), most);
        assert_eq!(fit(None), most);
        let tiny = fit(Some(64));
        assert_eq!(
            (tiny.connections, tiny.tails, tiny.objects),
            (FEWEST_CONNECTIONS, FEWEST_TAILS, FEWEST_OBJECTS)
        );
    }
}
