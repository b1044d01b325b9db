//! The agent's home: the environment its runtime gets (every place a runtime writes lies under
//! `{root}/agent-home-{agent}`), and its kilo.db hydrated from stasis when the home has none.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::http::Client;
use crate::ids::AgentRef;
use crate::snapshot::{self, PullOptions, PullOutcome};

/// The variables that point a runtime at its home, and the folder each names under it.
/// `KILO_TEST_HOME` alone does not move kilo's database: the `XDG_*` ones do.
const HOME_VARIABLES: [(&str, &str); 7] = [
    ("HOME", ""),
    ("KILO_TEST_HOME", ""),
    ("XDG_DATA_HOME", ".local/share"),
    ("XDG_STATE_HOME", ".local/state"),
    ("XDG_CONFIG_HOME", ".config"),
    ("XDG_CACHE_HOME", ".cache"),
    ("TMPDIR", "tmp"),
];

/// The runtime's environment over the supervisor's own: the home variables set, and every
/// `STASIS_*` variable removed (the agent has no business holding stasis's token).
#[derive(Debug, Clone)]
pub(crate) struct HomeEnv {
    pub(crate) set: Vec<(&'static str, PathBuf)>,
    pub(crate) removed: Vec<OsString>,
}

/// Creates `home`'s folders and answers its environment.
pub(crate) fn prepare(home: &Path) -> Result<HomeEnv> {
    let mut set = Vec::with_capacity(HOME_VARIABLES.len());
    for (name, relative) in HOME_VARIABLES {
        let dir = if relative.is_empty() {
            home.to_owned()
        } else {
            home.join(relative)
        };
        std::fs::create_dir_all(&dir)
            .map_err(|e| Error::io(format!("creating {}", dir.display()), e))?;
        set.push((name, dir));
    }
    let removed = std::env::vars_os()
        .map(|(name, _)| name)
        .filter(|name| name.to_string_lossy().starts_with("STASIS_"))
        .collect();
    Ok(HomeEnv { set, removed })
}

/// What hydrating did.
#[derive(Debug)]
pub(crate) enum Hydrated {
    /// kilo.db was there already (`boot` or an earlier run put it there).
    AlreadyThere,
    /// Pulled: its size.
    Pulled(u64),
    /// stasis has no snapshot: the agent starts fresh.
    Fresh,
}

/// Pulls the agent's kilo.db into `db` unless a database is there already.
pub(crate) fn hydrate_if_empty(client: &Client, agent: &AgentRef, db: &Path) -> Result<Hydrated> {
    if db.exists() {
        return Ok(Hydrated::AlreadyThere);
    }
    match snapshot::pull(client, agent, db, &PullOptions::default())? {
        PullOutcome::Pulled(pulled) => Ok(Hydrated::Pulled(pulled.size)),
        PullOutcome::NoSnapshot => Ok(Hydrated::Fresh),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_place_the_runtime_writes_is_under_its_home() {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let home = dir.path().join("agent-home-mayor");
        let env = prepare(&home).expect("prepared");
        let names: Vec<&str> = env.set.iter().map(|(name, _)| *name).collect();
        for name in ["HOME", "KILO_TEST_HOME", "XDG_DATA_HOME", "TMPDIR"] {
            assert!(names.contains(&name), "{name} is set");
        }
        for (name, dir) in &env.set {
            assert!(dir.starts_with(&home), "{name} = {}", dir.display());
            assert!(dir.is_dir(), "{} exists", dir.display());
        }
    }
}
