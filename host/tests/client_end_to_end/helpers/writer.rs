//! The writer process: this test binary re-run to insert rows until told to stop.

use std::path::Path;
use std::time::{Duration, Instant};

use rusqlite::Connection;

#[path = "../../../../client/tests/support/child_writer.rs"]
mod child_writer;

pub use child_writer::Writer;

use super::db::{max_id, row_body};

/// Set in the writer process: the database it writes to.
pub const WRITER_ENV: &str = "STASIS_E2E_WRITER_DB";
/// Rows per writer transaction.
pub const BATCH: i64 = 5;

pub fn write_until_stopped(path: &Path) {
    child_writer::write_until_stopped(path, |tx| {
        let next = max_id(tx) + 1;
        for id in next..next + BATCH {
            tx.execute(
                "INSERT INTO rows (id, body) VALUES (?1, ?2)",
                rusqlite::params![id, row_body(id)],
            )
            .expect("insert");
        }
    });
}

/// Starts the writer process on `db`.
pub fn start_writer(db: &Path) -> Writer {
    Writer::start(db, WRITER_ENV)
}

/// Waits until the writer has committed `batches` transactions past `from`.
pub fn wait_for_batches(reader: &Connection, from: i64, batches: i64) {
    let until = Instant::now() + Duration::from_secs(30);
    while max_id(reader) < from + batches * BATCH {
        assert!(Instant::now() < until, "the writer process never wrote");
        std::thread::sleep(Duration::from_millis(5));
    }
}
