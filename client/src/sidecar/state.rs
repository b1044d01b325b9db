//! The producer's stamp state, kept in `{state dir}/producer.json` so that a restarted
//! sidecar never reuses a `producer_seq` and re-sends the batch it had in flight under its
//! original stamp (stasis answers `duplicate: true` when that batch was already stored).
//!
//! It is written atomically (temporary file, fsync, rename) before every batch is sent. Reusing
//! a stamp would be silent loss: stasis would answer the new events `duplicate: true` and
//! store nothing. So a state file that cannot be read stops the sidecar rather than starting
//! a new producer over it; delete it by hand to start one.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::batch::Batch;
use crate::atomic_write::AtomicFile;
use crate::error::{Error, Result};

/// The file's format version.
const FORMAT: u32 = 1;

/// What survives a restart.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct ProducerState {
    pub(crate) format: u32,
    /// The container this producer ran in.
    pub(crate) container_id: String,
    pub(crate) producer_id: String,
    /// The next unused `producer_seq`.
    pub(crate) next_seq: u64,
    /// Every event the sidecar read before this time (ms since the epoch) is in a stamped
    /// batch; a restart resyncs messages that changed after it.
    pub(crate) covered_until_ms: u64,
    /// The batch sent last, until the next one replaces it (sent again on a restart).
    pub(crate) in_flight: Option<Batch>,
}

impl ProducerState {
    /// A new producer for `container_id`, its id random.
    pub(crate) fn new(container_id: &str, now_ms: u64) -> Self {
        ProducerState {
            format: FORMAT,
            container_id: container_id.to_owned(),
            producer_id: new_producer_id(),
            next_seq: 0,
            covered_until_ms: now_ms,
            in_flight: None,
        }
    }

    /// Takes the next `producer_seq`.
    pub(crate) fn take_seq(&mut self) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        seq
    }

    /// Starts a new producer (after stasis forgot this one's window): new id, seqs from 0.
    pub(crate) fn rotate(&mut self) {
        self.producer_id = new_producer_id();
        self.next_seq = 0;
    }
}

/// `sc-` and 32 random hex digits.
fn new_producer_id() -> String {
    let container_like = crate::town::new_container_id();
    let random = container_like.trim_start_matches("c-");
    format!("sc-{random}")
}

/// The state file in a state directory.
#[derive(Debug, Clone)]
pub(crate) struct StateFile {
    path: PathBuf,
}

impl StateFile {
    pub(crate) fn in_dir(dir: &Path) -> Self {
        StateFile {
            path: dir.join("producer.json"),
        }
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The saved state, `None` when there is no file yet.
    pub(crate) fn load(&self) -> Result<Option<ProducerState>> {
        let bytes = match std::fs::read(&self.path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io(format!("reading {}", self.path.display()), e)),
        };
        let state: ProducerState = serde_json::from_slice(&bytes).map_err(|e| {
            Error::Config(format!(
                "the sidecar state file {} is unreadable ({e}); reusing its stamps could lose \
                 events, so it is not replaced: delete it to start a new producer",
                self.path.display()
            ))
        })?;
        if state.format != FORMAT {
            return Err(Error::Config(format!(
                "the sidecar state file {} has format {}, this sidecar writes {FORMAT}",
                self.path.display(),
                state.format
            )));
        }
        Ok(Some(state))
    }

    /// Replaces the file with `state`, atomically and durably.
    pub(crate) fn save(&self, state: &ProducerState) -> Result<()> {
        let bytes = serde_json::to_vec(state)
            .map_err(|e| Error::Config(format!("encoding the sidecar state: {e}")))?;
        let mut file = AtomicFile::create(&self.path)?;
        file.write_all(&bytes)
            .map_err(|e| Error::io(format!("writing {}", self.path.display()), e))?;
        file.commit()
    }
}

/// An exclusive lock on the state directory, held for the sidecar's life: two sidecars for
/// one agent would race on the stamps.
#[derive(Debug)]
pub(crate) struct DirLock {
    _file: File,
}

impl DirLock {
    /// Creates `dir` when missing and locks it; another holder is an error.
    pub(crate) fn acquire(dir: &Path) -> Result<Self> {
        std::fs::create_dir_all(dir)
            .map_err(|e| Error::io(format!("creating the state directory {}", dir.display()), e))?;
        let path = dir.join("lock");
        let file = File::create(&path)
            .map_err(|e| Error::io(format!("creating {}", path.display()), e))?;
        match file.try_lock() {
            Ok(()) => Ok(DirLock { _file: file }),
            Err(std::fs::TryLockError::WouldBlock) => Err(Error::Config(format!(
                "another sidecar holds {}: one sidecar per agent",
                dir.display()
            ))),
            Err(std::fs::TryLockError::Error(e)) => {
                Err(Error::io(format!("locking {}", path.display()), e))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::expect_used, reason = "tests fail loudly")]

    use super::*;

    #[test]
    fn a_saved_state_reads_back_with_its_batch_in_flight_byte_for_byte() {
        let dir = tempfile::tempdir().expect("dir");
        let file = StateFile::in_dir(dir.path());
        assert!(file.load().expect("no file yet").is_none());
        let mut state = ProducerState::new("c-1", 1_000);
        let event = r#"{"type":"x","data":{"text":"é \u0000 \"q\""}}"#;
        let first = state.take_seq();
        state.in_flight = Some(Batch {
            seq: first,
            events: vec![serde_json::from_str(event).expect("raw")],
            ends_turn: true,
            newest_received_ms: 1_500,
        });
        state.covered_until_ms = 2_000;
        file.save(&state).expect("saved");

        let back = file.load().expect("readable").expect("a state");
        assert_eq!(back.producer_id, state.producer_id);
        assert_eq!((back.next_seq, back.covered_until_ms), (1, 2_000));
        let batch = back.in_flight.expect("in flight");
        assert_eq!((batch.seq, batch.ends_turn), (0, true));
        assert_eq!(batch.events[0].get(), event);
    }

    #[test]
    fn every_producer_gets_its_own_id_and_rotation_changes_it() {
        let mut state = ProducerState::new("c-1", 0);
        let other = ProducerState::new("c-1", 0);
        assert_ne!(state.producer_id, other.producer_id);
        assert!(crate::ids::check_id("producer", &state.producer_id).is_ok());
        let before = state.producer_id.clone();
        state.take_seq();
        state.rotate();
        assert_ne!(state.producer_id, before);
        assert_eq!(state.next_seq, 0);
    }

    #[test]
    fn an_unreadable_state_file_is_an_error_not_a_fresh_start() {
        let dir = tempfile::tempdir().expect("dir");
        let file = StateFile::in_dir(dir.path());
        std::fs::write(file.path(), b"{\"format\":1,\"produ").expect("write");
        let error = file.load().expect_err("refused");
        assert!(error.to_string().contains("delete it"), "{error}");
    }

    #[test]
    fn a_second_lock_on_the_state_dir_is_refused_until_the_first_is_dropped() {
        let dir = tempfile::tempdir().expect("dir");
        let first = DirLock::acquire(dir.path()).expect("first");
        let error = DirLock::acquire(dir.path()).expect_err("second");
        assert!(error.to_string().contains("another sidecar"), "{error}");
        drop(first);
        DirLock::acquire(dir.path()).expect("free again");
    }
}
