//! Idempotent retries: remembered batches per producer.
//!
//! Each producer's newest [`PRODUCER_WINDOW`] batches are remembered. A stamp
//! seen before answers with its original seqs. A stamp older than every
//! remembered one, once the window is full, is refused (409): it cannot be
//! told apart from a retry whose record was already forgotten, and appending
//! it could duplicate events. Stamps may arrive out of order inside the
//! window, so pipelined batches are fine.
//!
//! Across all producers an agent remembers at most [`MAX_REMEMBERED_BATCHES`];
//! a producer silent for that many batches of others loses its window, and a
//! retry from it after that would append again.

use super::{AppendOutcome, ProducerStamp};
use crate::{
    DomainError, Refusal,
    limits::{MAX_REMEMBERED_BATCHES, PRODUCER_WINDOW},
    params,
    sql::{RowExt, SqlStore},
};

/// The outcome of an earlier append with this stamp, if remembered.
pub(super) fn earlier_outcome(
    store: &impl SqlStore,
    stamp: &ProducerStamp,
) -> Result<Option<AppendOutcome>, DomainError> {
    let found = store.first_row(
        "SELECT first_seq, last_seq FROM producer_batches WHERE producer_id = ?1 AND producer_seq = ?2",
        params![stamp.producer_id.as_str(), stamp.producer_seq],
    )?;
    if let Some(row) = found {
        return Ok(Some(AppendOutcome {
            first_seq: row.uint(0)?,
            last_seq: row.uint(1)?,
            duplicate: true,
        }));
    }
    let window = store.first_row(
        "SELECT COUNT(*), COALESCE(MIN(producer_seq), 0) FROM producer_batches WHERE producer_id = ?1",
        params![stamp.producer_id.as_str()],
    )?;
    if let Some(row) = window {
        let (remembered, oldest) = (row.uint(0)?, row.uint(1)?);
        if remembered >= PRODUCER_WINDOW && stamp.producer_seq < oldest {
            return Err(DomainError::Conflict(Refusal::new(
                "producer_seq_stale",
                format!(
                    "producer_seq {} of producer {:?} is older than the {PRODUCER_WINDOW} batches \
                     remembered (oldest {oldest}); it cannot be checked for duplicates",
                    stamp.producer_seq, stamp.producer_id
                ),
            )));
        }
    }
    Ok(None)
}

/// Remembers a fresh batch and forgets what fell out of the producer's
/// window and out of the agent-wide bound.
pub(super) fn remember(
    store: &impl SqlStore,
    stamp: &ProducerStamp,
    outcome: &AppendOutcome,
) -> Result<(), DomainError> {
    store.run(
        "INSERT INTO producer_batches (producer_id, producer_seq, first_seq, last_seq) VALUES (?1, ?2, ?3, ?4)",
        params![
            stamp.producer_id.as_str(),
            stamp.producer_seq,
            outcome.first_seq,
            outcome.last_seq
        ],
    )?;
    store.run(
        "DELETE FROM producer_batches WHERE producer_id = ?1 AND producer_seq < (
            SELECT producer_seq FROM producer_batches WHERE producer_id = ?1
            ORDER BY producer_seq DESC LIMIT 1 OFFSET ?2)",
        params![stamp.producer_id.as_str(), PRODUCER_WINDOW - 1],
    )?;
    store.run(
        "DELETE FROM producer_batches WHERE last_seq < (
            SELECT last_seq FROM producer_batches ORDER BY last_seq DESC LIMIT 1 OFFSET ?1)",
        params![MAX_REMEMBERED_BATCHES - 1],
    )?;
    Ok(())
}
