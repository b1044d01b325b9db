//! The storage settings both runtimes take (and the container liveness
//! timeout), under one set of rules: the host refuses to start on a refused
//! value, the edge answers every request 503 `not_configured` naming it.
//! Neither falls back or clamps silently.

use stasis_domain::{chunk_store, history::RetentionPolicy, limits, snapshot};
use thiserror::Error;

/// How much each agent keeps, and where its snapshots go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StorageSettings {
    /// Events kept per agent (retention); at least 1.
    pub max_events_per_agent: u64,
    /// Snapshots up to this many bytes stay in the agent's SQL; at most
    /// [`snapshot::MAX_INLINE_LIMIT`] (a Durable Object row's size).
    pub snapshot_inline_limit: u64,
    /// The largest snapshot accepted.
    pub snapshot_limit: u64,
    /// The largest workspace accepted, in bytes of files.
    pub workspace_limit: u64,
    /// How long a superseded or deleted snapshot version's chunks stay
    /// readable (ms).
    pub snapshot_grace_ms: u64,
    /// A town's current container counts as alive for this many seconds
    /// after its newest heartbeat (a Mayor message is delivered only to a
    /// live container); at least 1.
    pub liveness_timeout_secs: u64,
    /// How long superseded kilo.db, workspace, checkpoint and memory
    /// versions are kept (`stasis_domain::history`).
    pub history_retention: RetentionPolicy,
}

impl StorageSettings {
    /// [`Self::liveness_timeout_secs`] in ms.
    pub fn liveness_timeout_ms(&self) -> u64 {
        self.liveness_timeout_secs.saturating_mul(1000)
    }
}

/// A setting the rules refuse.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SettingsError {
    /// Not a whole number of the right size.
    #[error("{name} ({flag}) must be a whole number; got {value:?}")]
    NotANumber {
        /// The environment variable.
        name: &'static str,
        /// The host's flag.
        flag: &'static str,
        /// What was given.
        value: String,
    },
    /// Retention of nothing.
    #[error("{RETENTION} ({RETENTION_FLAG}) must be at least 1")]
    ZeroRetention,
    /// A container that is never alive.
    #[error("{LIVENESS} ({LIVENESS_FLAG}) must be at least 1")]
    ZeroLiveness,
    /// A retention policy that does not read.
    #[error("{HISTORY} ({HISTORY_FLAG}) {reason}; got {value:?}")]
    BadHistoryRetention {
        /// What was given.
        value: String,
        /// What is wrong with it.
        reason: String,
    },
    /// An inline limit no Durable Object row can hold.
    #[error(
        "{INLINE} ({INLINE_FLAG}) may be at most {max} bytes (a Durable Object row holds at \
         most 2,000,000 bytes); got {given}",
        max = snapshot::MAX_INLINE_LIMIT
    )]
    InlineAboveCap {
        /// What was given.
        given: u64,
    },
}

const RETENTION: &str = "STASIS_MAX_EVENTS_PER_AGENT";
const RETENTION_FLAG: &str = "--max-events-per-agent";
const INLINE: &str = "STASIS_SNAPSHOT_INLINE_LIMIT";
const INLINE_FLAG: &str = "--snapshot-inline-limit";
const SNAPSHOT_LIMIT: &str = "STASIS_MAX_SNAPSHOT_BYTES";
const SNAPSHOT_LIMIT_FLAG: &str = "--max-snapshot-bytes";
const WORKSPACE_LIMIT: &str = "STASIS_MAX_WORKSPACE_BYTES";
const WORKSPACE_LIMIT_FLAG: &str = "--max-workspace-bytes";
const GRACE: &str = "STASIS_SNAPSHOT_GRACE_MS";
const GRACE_FLAG: &str = "--snapshot-grace";
const LIVENESS: &str = "STASIS_LIVENESS_TIMEOUT_SECS";
const LIVENESS_FLAG: &str = "--liveness-timeout-secs";
const HISTORY: &str = "STASIS_HISTORY_RETENTION";
const HISTORY_FLAG: &str = "--history-retention";

impl Default for StorageSettings {
    fn default() -> Self {
        Self {
            max_events_per_agent: limits::DEFAULT_MAX_EVENTS,
            snapshot_inline_limit: snapshot::DEFAULT_INLINE_LIMIT,
            snapshot_limit: snapshot::DEFAULT_SNAPSHOT_LIMIT,
            workspace_limit: stasis_domain::workspace::DEFAULT_WORKSPACE_LIMIT,
            snapshot_grace_ms: chunk_store::DEFAULT_CHUNK_GRACE_MS.unsigned_abs(),
            liveness_timeout_secs: stasis_domain::town::DEFAULT_LIVENESS_TIMEOUT_MS / 1000,
            history_retention: RetentionPolicy::default(),
        }
    }
}

impl StorageSettings {
    /// Reads the settings from named variables (the edge's wrangler vars);
    /// an unset one takes its default.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Self, SettingsError> {
        let defaults = Self::default();
        let number = |name, flag, default| match var(name) {
            None => Ok(default),
            Some(value) => value
                .trim()
                .parse::<u64>()
                .map_err(|_| SettingsError::NotANumber { name, flag, value }),
        };
        let settings = Self {
            max_events_per_agent: number(RETENTION, RETENTION_FLAG, defaults.max_events_per_agent)?,
            snapshot_inline_limit: number(INLINE, INLINE_FLAG, defaults.snapshot_inline_limit)?,
            snapshot_limit: number(SNAPSHOT_LIMIT, SNAPSHOT_LIMIT_FLAG, defaults.snapshot_limit)?,
            workspace_limit: number(
                WORKSPACE_LIMIT,
                WORKSPACE_LIMIT_FLAG,
                defaults.workspace_limit,
            )?,
            snapshot_grace_ms: number(GRACE, GRACE_FLAG, defaults.snapshot_grace_ms)?,
            liveness_timeout_secs: number(LIVENESS, LIVENESS_FLAG, defaults.liveness_timeout_secs)?,
            history_retention: match var(HISTORY) {
                None => defaults.history_retention,
                Some(value) => parse_retention(&value)?,
            },
        };
        settings.check()?;
        Ok(settings)
    }

    /// Refuses values that would be meaningless.
    pub fn check(&self) -> Result<(), SettingsError> {
        if self.max_events_per_agent == 0 {
            return Err(SettingsError::ZeroRetention);
        }
        if self.liveness_timeout_secs == 0 {
            return Err(SettingsError::ZeroLiveness);
        }
        if self.snapshot_inline_limit > snapshot::MAX_INLINE_LIMIT {
            return Err(SettingsError::InlineAboveCap {
                given: self.snapshot_inline_limit,
            });
        }
        Ok(())
    }
}

/// Reads a retention policy (`KEEP_ALL[,BUCKET:UNTIL[,BUCKET:UNTIL]]`, in
/// ms), as the host's flag and the edge's var give it.
pub fn parse_retention(value: &str) -> Result<RetentionPolicy, SettingsError> {
    RetentionPolicy::parse(value).map_err(|reason| SettingsError::BadHistoryRetention {
        value: value.to_owned(),
        reason: format!("must be KEEP_ALL[,BUCKET:UNTIL[,BUCKET:UNTIL]] in ms: {reason}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(vars: &[(&str, &str)]) -> Result<StorageSettings, SettingsError> {
        StorageSettings::from_vars(|name| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| (*v).to_owned())
        })
    }

    #[test]
    fn unset_values_take_the_defaults_and_set_ones_are_read() {
        assert_eq!(read(&[]), Ok(StorageSettings::default()));
        let read = read(&[
            (RETENTION, " 50 "),
            (SNAPSHOT_LIMIT, "1000"),
            (WORKSPACE_LIMIT, "2000"),
            (LIVENESS, "5"),
        ]);
        assert_eq!(
            read.map(|s| (
                s.max_events_per_agent,
                s.snapshot_limit,
                s.workspace_limit,
                s.liveness_timeout_ms()
            )),
            Ok((50, 1000, 2000, 5000))
        );
    }

    #[test]
    fn the_refusals_are_the_hosts() {
        assert_eq!(read(&[(RETENTION, "0")]), Err(SettingsError::ZeroRetention));
        assert_eq!(read(&[(LIVENESS, "0")]), Err(SettingsError::ZeroLiveness));
        let above = snapshot::MAX_INLINE_LIMIT + 1;
        assert_eq!(
            read(&[(INLINE, &above.to_string())]),
            Err(SettingsError::InlineAboveCap { given: above })
        );
        let short = read(&[(HISTORY, "30000")]).map(|s| s.history_retention.keep_all_ms);
        assert_eq!(short, Ok(30_000));
        let bad = read(&[(HISTORY, "1d")]);
        assert!(matches!(
            bad,
            Err(SettingsError::BadHistoryRetention { .. })
        ));
        let refused = read(&[(SNAPSHOT_LIMIT, "1 GiB")]);
        assert!(matches!(refused, Err(SettingsError::NotANumber { .. })));
        let message = read(&[(RETENTION, "-1")]).map_err(|e| e.to_string());
        assert_eq!(
            message,
            Err("STASIS_MAX_EVENTS_PER_AGENT (--max-events-per-agent) must be a whole number; got \"-1\"".to_owned())
        );
    }
}
