//! A full disk must not stop reads and deletes, or nobody could free space
//! through the API.
//!
//! SQLite needs room for its `-wal` and `-shm` files to open a database,
//! for a new town's file, and for the WAL frames of any change, deletes
//! included; so on a disk that is full to the last byte, reads of closed
//! objects and every delete fail. The host therefore keeps a reserve: a
//! file of `--disk-reserve` bytes in the data folder. When a request fails
//! because the disk is full, the reserve is released and the host goes
//! read-and-delete-only: requests that may add data (POST, PUT, PATCH) are
//! answered 507 `storage_full`, while reads, the agent list and deletes
//! run in the room the reserve left. Once the reserve can be written again
//! (space was freed, by deletes or by the operator), writes are taken again.

use http::{Method, StatusCode, header};
use stasis_api::ApiError;
use std::{
    io::Write,
    path::PathBuf,
    sync::{
        Arc, Mutex, PoisonError,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

/// How often, while the disk is full, the reserve is tried again.
const RETRY_EVERY: Duration = Duration::from_secs(1);

/// The reserve and whether it is released.
pub struct Disk {
    reserve: PathBuf,
    size: u64,
    full: AtomicBool,
    last_try: Mutex<Option<Instant>>,
}

impl Disk {
    /// Writes the reserve of `size` bytes at `reserve` (kept if already
    /// whole); when it cannot be written the host starts read-and-delete
    /// only. A size of 0 keeps no reserve and never refuses writes.
    pub fn open(reserve: PathBuf, size: u64) -> Self {
        let disk = Self {
            reserve,
            size,
            full: AtomicBool::new(false),
            last_try: Mutex::new(None),
        };
        if size > 0 && !disk.write_reserve() {
            tracing::error!(
                reserve = %disk.reserve.display(),
                bytes = size,
                "the disk reserve could not be written: the disk is full, so only reads and \
                 deletes are taken until space is freed"
            );
            disk.full.store(true, Ordering::Relaxed);
        }
        disk
    }

    /// Whether a request with `method` is refused now: it may add data and
    /// the disk is full (tried again at most every [`RETRY_EVERY`]).
    pub async fn refuses(self: &Arc<Self>, method: &Method) -> bool {
        if !self.full.load(Ordering::Relaxed) || !adds_data(method) {
            return false;
        }
        if self.due_for_a_try() {
            let disk = Arc::clone(self);
            let restored = tokio::task::spawn_blocking(move || disk.write_reserve())
                .await
                .unwrap_or(false);
            if restored {
                self.full.store(false, Ordering::Relaxed);
                tracing::warn!("the disk reserve was written again: writes are taken again");
                return false;
            }
        }
        true
    }

    /// A request failed because the disk is full: releases the reserve so
    /// that reads and deletes have room, and refuses writes from now on.
    pub fn filled(&self) {
        if self.size == 0 || self.full.swap(true, Ordering::Relaxed) {
            return;
        }
        let _ = std::fs::remove_file(&self.reserve);
        *self.last_try.lock().unwrap_or_else(PoisonError::into_inner) = Some(Instant::now());
        tracing::error!(
            reserve = %self.reserve.display(),
            bytes = self.size,
            "the disk is full: released the disk reserve so that reads and deletes go on; \
             writes are answered 507 storage_full until space is freed"
        );
    }

    fn due_for_a_try(&self) -> bool {
        let mut last = self.last_try.lock().unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        if last.is_some_and(|at| now.saturating_duration_since(at) < RETRY_EVERY) {
            return false;
        }
        *last = Some(now);
        true
    }

    /// Writes the whole reserve (real blocks: a sparse file would reserve
    /// nothing); on failure removes what was written.
    fn write_reserve(&self) -> bool {
        if std::fs::metadata(&self.reserve).is_ok_and(|meta| meta.len() == self.size) {
            return true;
        }
        let written = std::fs::File::create(&self.reserve).and_then(|mut file| {
            let block = vec![0u8; 64 << 10];
            let mut left = self.size;
            while left > 0 {
                let n = usize::try_from(left.min(block.len() as u64)).unwrap_or(block.len());
                file.write_all(block.get(..n).unwrap_or(&block))?;
                left -= n as u64;
            }
            file.sync_all()
        });
        if written.is_err() {
            let _ = std::fs::remove_file(&self.reserve);
        }
        written.is_ok()
    }
}

/// Methods whose requests may add data.
fn adds_data(method: &Method) -> bool {
    matches!(*method, Method::POST | Method::PUT | Method::PATCH)
}

/// Whether a failure's cause is a full disk (SQLite's `SQLITE_FULL`, or the
/// OS's `ENOSPC` from a KV file).
pub fn is_full(detail: &str) -> bool {
    [
        "database or disk is full",
        "No space left on device",
        "os error 28",
    ]
    .iter()
    .any(|sign| detail.contains(sign))
}

/// The 507 for a request that may add data while the disk is full.
pub fn storage_full() -> ApiError {
    ApiError::new(
        StatusCode::INSUFFICIENT_STORAGE,
        "storage_full",
        "the server's disk is full: reads and deletes are taken, requests that may add data are \
         not until space is freed (delete snapshots or agents, or add space); nothing was changed",
    )
    .with("retry_after", 60)
    .with_header(header::RETRY_AFTER, "60")
}
