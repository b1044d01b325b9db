//! Readiness (`GET /healthz`): whether the data folder takes a small
//! durable write and SQLite can open and commit a database in it.
//!
//! The probe creates its files anew each time, directly in the data folder,
//! so that a folder that became read-only, full or gone is noticed even
//! though files already in it may still be writable.

use stasis_domain::DomainError;
use stasis_sqlite::{Durability, SqliteStore};
use std::{
    fs::File,
    io::Write,
    path::{Path, PathBuf},
    sync::{Mutex, PoisonError},
    time::{Duration, Instant},
};

/// A probe's answer is reused this long, so that however often readiness
/// is asked, the disk sees at most one probe a second.
const REUSE_FOR: Duration = Duration::from_secs(1);

/// The probe's plain file, under the data folder.
const PROBE_FILE: &str = ".ready-probe";
/// The probe's SQLite database, under the data folder.
const PROBE_DB: &str = ".ready-probe.sqlite";

/// Probes the data folder, remembering the last answer for a moment.
pub struct Readiness {
    data_dir: PathBuf,
    durability: Durability,
    last: Mutex<Option<(Instant, Result<(), DomainError>)>>,
    /// One probe at a time: two at once would remove each other's file
    /// and answer 503 for a folder that is fine.
    probing: tokio::sync::Mutex<()>,
}

impl Readiness {
    /// Readiness of `data_dir`, written with `durability`.
    pub fn new(data_dir: PathBuf, durability: Durability) -> Self {
        Self {
            data_dir,
            durability,
            last: Mutex::new(None),
            probing: tokio::sync::Mutex::new(()),
        }
    }

    /// Ok when the data folder took the probe's writes; the error names
    /// what failed (with paths: for the log only).
    pub async fn check(&self) -> Result<(), DomainError> {
        if let Some(recent) = self.recent() {
            return recent;
        }
        let _probing = self.probing.lock().await;
        // Another request may have probed while this one waited.
        if let Some(recent) = self.recent() {
            return recent;
        }
        let (dir, durability) = (self.data_dir.clone(), self.durability);
        let result = tokio::task::spawn_blocking(move || probe(&dir, durability))
            .await
            .unwrap_or_else(|err| {
                Err(DomainError::Storage(format!(
                    "the readiness probe stopped: {err}"
                )))
            });
        *self.last.lock().unwrap_or_else(PoisonError::into_inner) =
            Some((Instant::now(), result.clone()));
        result
    }

    fn recent(&self) -> Option<Result<(), DomainError>> {
        let last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
        last.as_ref()
            .filter(|(at, _)| at.elapsed() < REUSE_FOR)
            .map(|(_, result)| result.clone())
    }
}

/// Writes and fsyncs a new small file, then commits a row in a SQLite
/// database (both created in `dir` if missing).
fn probe(dir: &Path, durability: Durability) -> Result<(), DomainError> {
    let file = dir.join(PROBE_FILE);
    let failed = |err: std::io::Error| {
        DomainError::Storage(format!("readiness probe {}: {err}", file.display()))
    };
    // Removed first so that creating it needs the folder to be writable.
    let _ = std::fs::remove_file(&file);
    let mut probe = File::options()
        .write(true)
        .create_new(true)
        .open(&file)
        .map_err(failed)?;
    probe
        .write_all(b"stasis readiness probe\n")
        .and_then(|()| probe.sync_all())
        .map_err(failed)?;
    let db_path = dir.join(PROBE_DB);
    let sql_failed =
        |err: String| DomainError::Storage(format!("readiness probe {}: {err}", db_path.display()));
    let db = SqliteStore::open(&db_path, durability).map_err(|err| sql_failed(err.to_string()))?;
    db.connection()
        .execute_batch(
            "BEGIN IMMEDIATE;
             CREATE TABLE IF NOT EXISTS probe (id INTEGER PRIMARY KEY, at TEXT NOT NULL);
             INSERT OR REPLACE INTO probe (id, at) VALUES (1, datetime('now', 'subsec'));
             COMMIT;",
        )
        .map_err(|err| sql_failed(err.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_writable_folder_is_ready() {
        let dir = tempfile::tempdir().expect("temp dir");
        assert!(probe(dir.path(), Durability::Fsync).is_ok());
        assert!(probe(dir.path(), Durability::Fsync).is_ok(), "and again");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn many_checks_at_once_all_find_a_writable_folder_ready() {
        let dir = tempfile::tempdir().expect("temp dir");
        let readiness =
            std::sync::Arc::new(Readiness::new(dir.path().to_path_buf(), Durability::Fsync));
        for round in 0..5 {
            let checks: Vec<_> = (0..16)
                .map(|_| {
                    let readiness = readiness.clone();
                    tokio::spawn(async move { readiness.check().await })
                })
                .collect();
            for check in checks {
                let answer = check.await.expect("the check ran");
                assert!(answer.is_ok(), "round {round}: {answer:?}");
            }
            // Past the reuse window, so the next round probes again.
            *readiness
                .last
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = None;
        }
    }

    #[test]
    fn a_folder_that_is_gone_is_not_ready() {
        let missing = std::env::temp_dir().join("stasis-readiness-missing/nested");
        assert!(matches!(
            probe(&missing, Durability::Fsync),
            Err(DomainError::Storage(detail)) if detail.contains("stasis-readiness-missing")
        ));
    }
}
