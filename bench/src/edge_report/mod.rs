//! The edge section of BENCHMARKS.md: the host and the edge worker under
//! `wrangler dev --local`, workload by workload, from the same run, with the
//! CPU time each side's processes used and why a row is close.

mod chunk_rows;
mod explanations;
mod per_op;
mod rows;
mod section;
mod state_rows;
mod table;
#[cfg(test)]
mod tests;

pub use explanations::explanations;
pub use rows::rows;
pub use section::{EdgeInfo, section};
pub use table::{EdgeRow, table};

pub use crate::report::EDGE;

/// "Several times faster": a row where the host's advantage is below this
/// is flagged as not several times faster.
pub const SEVERAL: f64 = 3.0;
