//! The results table (markdown) and the BENCHMARKS.md section holding it.

mod figure;
mod format;
mod notes;
mod record;
mod section;
mod table;

pub use figure::{Figure, pick};
pub use format::{millis, one_line, size, thousands_sep};
pub use record::{EDGE, EVENT_LOG, Marks, SNAPSHOTS, record};
pub use section::{RunInfo, section, snapshots_section};
pub use table::{Goal, Row, table};
