//! The SQL port: one object's database, statement by statement.
//!
//! Synchronous on purpose: Durable Object SQL is synchronous, and so is a
//! component's `sql` import. The adapter wraps each domain call in one
//! transaction, so the rules never say BEGIN or COMMIT.

/// One SQLite value.
#[derive(Debug, Clone, PartialEq)]
pub enum SqlValue {
    /// SQL NULL.
    Null,
    /// A 64-bit signed integer.
    Integer(i64),
    /// A float.
    Real(f64),
    /// UTF-8 text.
    Text(String),
    /// Raw bytes.
    Blob(Vec<u8>),
}

/// One result row.
pub type Row = Vec<SqlValue>;

/// Why a statement failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StorageError {
    /// A constraint refused the write.
    #[error("constraint violation: {0}")]
    ConstraintViolation(String),
    /// A value or row is larger than the store accepts.
    #[error("value too big: {0}")]
    TooBig(String),
    /// The statement is wrong (a bug in the rules).
    #[error("invalid statement: {0}")]
    InvalidStatement(String),
    /// The store failed underneath.
    #[error("i/o: {0}")]
    Io(String),
    /// A row did not have the shape the rules expect.
    #[error("unexpected row shape: {0}")]
    Shape(String),
}

/// One object's SQL database.
pub trait SqlStore {
    /// Runs `statement` with positional parameters and returns its rows.
    fn execute(&self, statement: &str, params: Vec<SqlValue>) -> Result<Vec<Row>, StorageError>;

    /// Runs a statement that returns nothing of interest.
    fn run(&self, statement: &str, params: Vec<SqlValue>) -> Result<(), StorageError> {
        self.execute(statement, params).map(drop)
    }

    /// Runs a query expected to return at most one row.
    fn first_row(
        &self,
        statement: &str,
        params: Vec<SqlValue>,
    ) -> Result<Option<Row>, StorageError> {
        Ok(self.execute(statement, params)?.into_iter().next())
    }
}

impl From<i64> for SqlValue {
    fn from(v: i64) -> Self {
        Self::Integer(v)
    }
}

impl From<u64> for SqlValue {
    /// Seqs and counts stay far below 2^63; saturate rather than wrap.
    fn from(v: u64) -> Self {
        Self::Integer(i64::try_from(v).unwrap_or(i64::MAX))
    }
}

impl From<u32> for SqlValue {
    fn from(v: u32) -> Self {
        Self::Integer(i64::from(v))
    }
}

impl From<&str> for SqlValue {
    fn from(v: &str) -> Self {
        Self::Text(v.to_owned())
    }
}

impl From<String> for SqlValue {
    fn from(v: String) -> Self {
        Self::Text(v)
    }
}

impl From<Vec<u8>> for SqlValue {
    fn from(v: Vec<u8>) -> Self {
        Self::Blob(v)
    }
}

impl<T: Into<SqlValue>> From<Option<T>> for SqlValue {
    fn from(v: Option<T>) -> Self {
        v.map_or(Self::Null, Into::into)
    }
}

/// Typed access to a row's columns, with errors instead of panics.
pub trait RowExt {
    /// The column as an integer.
    fn int(&self, index: usize) -> Result<i64, StorageError>;
    /// The column as a non-negative integer.
    fn uint(&self, index: usize) -> Result<u64, StorageError>;
    /// The column as text.
    fn text(&self, index: usize) -> Result<&str, StorageError>;
    /// The column as text, or `None` when NULL.
    fn opt_text(&self, index: usize) -> Result<Option<&str>, StorageError>;
    /// The column as bytes.
    fn blob(&self, index: usize) -> Result<&[u8], StorageError>;
}

impl RowExt for [SqlValue] {
    fn int(&self, index: usize) -> Result<i64, StorageError> {
        match self.get(index) {
            Some(SqlValue::Integer(v)) => Ok(*v),
            other => Err(shape(index, "integer", other)),
        }
    }

    fn uint(&self, index: usize) -> Result<u64, StorageError> {
        let v = self.int(index)?;
        u64::try_from(v).map_err(|_| StorageError::Shape(format!("column {index}: negative {v}")))
    }

    fn text(&self, index: usize) -> Result<&str, StorageError> {
        match self.get(index) {
            Some(SqlValue::Text(v)) => Ok(v),
            other => Err(shape(index, "text", other)),
        }
    }

    fn opt_text(&self, index: usize) -> Result<Option<&str>, StorageError> {
        match self.get(index) {
            Some(SqlValue::Null) => Ok(None),
            Some(SqlValue::Text(v)) => Ok(Some(v)),
            other => Err(shape(index, "text or null", other)),
        }
    }

    fn blob(&self, index: usize) -> Result<&[u8], StorageError> {
        match self.get(index) {
            Some(SqlValue::Blob(v)) => Ok(v),
            other => Err(shape(index, "blob", other)),
        }
    }
}

fn shape(index: usize, wanted: &str, got: Option<&SqlValue>) -> StorageError {
    StorageError::Shape(format!("column {index}: wanted {wanted}, got {got:?}"))
}

/// Builds a parameter list: `params![a, b, c]`.
#[macro_export]
macro_rules! params {
    ($($value:expr),* $(,)?) => {
        vec![$($crate::sql::SqlValue::from($value)),*]
    };
}
