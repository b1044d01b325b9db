//! What identifies a file's state without reading it: size, mtime, ctime, inode and device.
//! Any write changes mtime and ctime (ctime cannot be set back by `touch`), a replacement by
//! rename changes the inode.

use std::fs::Metadata;
use std::os::unix::fs::MetadataExt;
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

/// A file's identity and state as `stat` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileStamp {
    /// Bytes.
    pub size: u64,
    /// Last modification, ns since the epoch.
    pub mtime_ns: i64,
    /// Last status change, ns since the epoch.
    pub ctime_ns: i64,
    /// Inode number.
    pub ino: u64,
    /// Device number.
    pub dev: u64,
}

impl FileStamp {
    /// The stamp of `meta`.
    pub fn of(meta: &Metadata) -> Self {
        Self {
            size: meta.size(),
            mtime_ns: meta
                .mtime()
                .saturating_mul(1_000_000_000)
                .saturating_add(meta.mtime_nsec()),
            ctime_ns: meta
                .ctime()
                .saturating_mul(1_000_000_000)
                .saturating_add(meta.ctime_nsec()),
            ino: meta.ino(),
            dev: meta.dev(),
        }
    }

    /// How long after the file's last change `now` is (zero when the change looks later: a
    /// clock step, or a change in the same tick).
    pub fn age_at(&self, now: SystemTime) -> Duration {
        let now_ns = now
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX));
        let changed = self.mtime_ns.max(self.ctime_ns);
        Duration::from_nanos(u64::try_from(now_ns.saturating_sub(changed)).unwrap_or(0))
    }
}

/// Whether `meta` is executable by its owner (what git keeps of a file's mode).
pub fn is_executable(meta: &Metadata) -> bool {
    meta.mode() & 0o100 != 0
}
