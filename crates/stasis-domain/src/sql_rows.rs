//! Many rows written by one statement: each row a JSON array, the rows
//! one JSON array bound as a single text parameter (`?1`) that SQLite's
//! `json_each` unpacks (both runtimes' SQLite has it). A bulk write then
//! costs one call into the store per group instead of one per row: on the
//! host each call crosses from the component into the host, on the edge
//! into Durable Object SQL, and those crossings, not SQLite, were what a
//! fork's or an import's thousands of rows cost.

use crate::{
    DomainError,
    sql::{SqlStore, SqlValue},
};
use serde::Serialize;

/// The most JSON text bound per statement: far under the 2,000,000 bytes
/// a Durable Object value may hold.
pub const GROUP_BYTES: usize = 1_000_000;

/// A group being gathered for `statement`, which reads its rows as
/// `json_each(?1)` and may take more parameters after it (`rest`).
pub struct JsonRows<'a, S: SqlStore> {
    store: &'a S,
    statement: &'a str,
    rest: Vec<SqlValue>,
    text: String,
}

impl<'a, S: SqlStore> JsonRows<'a, S> {
    /// An empty group for `statement`.
    pub fn new(store: &'a S, statement: &'a str, rest: Vec<SqlValue>) -> Self {
        Self {
            store,
            statement,
            rest,
            text: String::new(),
        }
    }

    /// Adds a row (its JSON array), writing the group first when the row
    /// would take it past [`GROUP_BYTES`]. A row that is larger alone is
    /// refused (`Ok(false)`): the caller writes it with a statement of its own.
    pub fn push(&mut self, row: &impl Serialize) -> Result<bool, DomainError> {
        let json = serde_json::to_string(row)
            .map_err(|err| DomainError::Storage(format!("a row as JSON: {err}")))?;
        if json.len() + 2 > GROUP_BYTES {
            return Ok(false);
        }
        if self.text.len() + json.len() + 2 > GROUP_BYTES {
            self.flush()?;
        }
        self.text.push(if self.text.is_empty() { '[' } else { ',' });
        self.text.push_str(&json);
        Ok(true)
    }

    /// Writes what is gathered, if anything.
    pub fn flush(&mut self) -> Result<(), DomainError> {
        if self.text.is_empty() {
            return Ok(());
        }
        self.text.push(']');
        let mut params = vec![SqlValue::Text(std::mem::take(&mut self.text))];
        params.extend(self.rest.iter().cloned());
        self.store.run(self.statement, params)?;
        Ok(())
    }
}
