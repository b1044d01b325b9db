//! How a whole-file read of many chunks is split across invocations: Workers
//! KV allows [`KV_OPS_PER_INVOCATION`] operations per invocation, so a file
//! of more chunks than one invocation may read is read in consecutive ranges
//! of at most [`RANGE_CHUNKS`], each by an invocation of its own (on the
//! edge, a request to the agent's Durable Object). The runtime without such
//! a budget (the host) reads the whole file in one.

use std::ops::Range;

/// Workers KV operations one invocation may make.
pub const KV_OPS_PER_INVOCATION: usize = 1_000;

/// The most chunks one invocation reads: one KV read each, leaving room
/// for the reads a chunk not yet visible retries
/// ([`crate::chunk_store::ports::BlobStore::propagation_delays_ms`]) and for the
/// invocation's other operations.
pub const RANGE_CHUNKS: usize = 900;

/// KV operations a range leaves for retries and the invocation's other
/// calls; checked when this compiles.
const RESERVE: usize = 100;
const _: () = assert!(RANGE_CHUNKS + RESERVE <= KV_OPS_PER_INVOCATION);

/// Chunks `from..total` as consecutive ranges of at most `per_range`
/// chunks (at least one per range), in order, together covering them once.
pub fn ranges(from: usize, total: usize, per_range: usize) -> Vec<Range<usize>> {
    let per_range = per_range.max(1);
    (from..total)
        .step_by(per_range)
        .map(|start| start..total.min(start.saturating_add(per_range)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_cover_every_chunk_once_in_order_within_the_budget() {
        for total in [0, 1, 2, 899, 900, 901, 1_800, 1_801, 3_052, 32_768] {
            for from in [0, 1] {
                let planned = ranges(from, total, RANGE_CHUNKS);
                let mut next = from;
                for range in &planned {
                    assert_eq!(range.start, next, "{total} chunks from {from}");
                    assert!(!range.is_empty());
                    assert!(range.len() <= RANGE_CHUNKS);
                    next = range.end;
                }
                assert_eq!(next, total.max(from), "{total} chunks from {from}");
                let expected = total.saturating_sub(from).div_ceil(RANGE_CHUNKS);
                assert_eq!(planned.len(), expected);
            }
        }
    }

    #[test]
    fn a_range_holds_at_least_one_chunk() {
        assert_eq!(ranges(0, 3, 0), vec![0..1, 1..2, 2..3]);
    }
}
