//! `sql_rows::JsonRows`: many rows per statement, each exactly as given
//! (texts with quotes, escapes, non-ASCII and NULLs), groups bounded in
//! bytes, a row too large for a group refused to its caller.
#![allow(clippy::expect_used, reason = "a test fails loudly, naming what broke")]

use stasis_domain::{
    sql::{Row, RowExt, SqlStore, SqlValue, StorageError},
    sql_rows::{GROUP_BYTES, JsonRows},
};
use stasis_sqlite::SqliteStore;
use std::cell::Cell;

/// A store that counts the statements run on it.
struct Counting {
    inner: SqliteStore,
    statements: Cell<usize>,
}

impl SqlStore for Counting {
    fn execute(&self, statement: &str, params: Vec<SqlValue>) -> Result<Vec<Row>, StorageError> {
        self.statements.set(self.statements.get() + 1);
        self.inner.execute(statement, params)
    }
}

const INSERT: &str = "INSERT INTO t (n, label, body)
     SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[2]')
     FROM json_each(?1)";

fn store() -> Counting {
    let inner = SqliteStore::in_memory().expect("sqlite opens");
    inner
        .run(
            "CREATE TABLE t (n INTEGER PRIMARY KEY, label TEXT, body TEXT)",
            Vec::new(),
        )
        .expect("table");
    Counting {
        inner,
        statements: Cell::new(0),
    }
}

fn body(n: u64) -> String {
    format!(
        "{{\"n\":{n},\"q\":\"say \\\"hi\\\"\",\"u\":\"é✓\\u2028\",\"pad\":\"{}\"}}",
        "x".repeat(900)
    )
}

#[test]
fn rows_land_whole_in_a_few_bounded_statements() {
    let store = store();
    let count = 2_500u64;
    let mut rows = JsonRows::new(&store, INSERT, Vec::new());
    for n in 1..=count {
        let label = (n % 3 != 0).then(|| format!("l{n}'\\"));
        assert!(rows.push(&(n, label, body(n))).expect("push"));
    }
    rows.flush().expect("flush");
    // ~1,000 bytes a row: three groups under GROUP_BYTES, not 2,500 statements.
    let groups = store.statements.get();
    assert!((2..=4).contains(&groups), "{groups} statements");
    let got = store
        .execute("SELECT n, label, body FROM t ORDER BY n", Vec::new())
        .expect("read");
    assert_eq!(got.len(), usize::try_from(count).expect("fits"));
    for (row, n) in got.iter().zip(1..) {
        assert_eq!(row.uint(0).expect("n"), n);
        let label = (n % 3 != 0).then(|| format!("l{n}'\\"));
        assert_eq!(row.opt_text(1).expect("label"), label.as_deref());
        assert_eq!(row.text(2).expect("body"), body(n));
    }
}

#[test]
fn a_row_larger_than_a_group_is_left_to_the_caller() {
    let store = store();
    let mut rows = JsonRows::new(&store, INSERT, Vec::new());
    assert!(rows.push(&(1, "small", "{}")).expect("push"));
    let huge = "y".repeat(GROUP_BYTES);
    assert!(!rows.push(&(2, "huge", huge)).expect("push"));
    rows.flush().expect("flush");
    let got = store.execute("SELECT n FROM t", Vec::new()).expect("read");
    assert_eq!(got.len(), 1);
}
