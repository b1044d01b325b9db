//! What the tests build on: local SQLite databases whose rows can be checked one by one, the
//! writer process that keeps inserting into one, and requests to the server.

mod db;
mod old_server;
mod server;
mod writer;

pub use db::{
    SEED_ROWS, append_rows, assert_consistent_prefix, create_db, entries, max_id, rows_for,
    sha256_file,
};
pub use old_server::old_server;
pub use server::{admin_token, call, client, head_snapshot, impatient_client, start_server};
pub use writer::{BATCH, WRITER_ENV, start_writer, wait_for_batches, write_until_stopped};
