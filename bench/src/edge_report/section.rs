//! The BENCHMARKS.md edge section: the run's facts, the table, the
//! explanations and how the numbers were taken.

use super::{EDGE, EdgeRow, explanations, table};
use crate::report::RunInfo;

/// What the section says about the edge besides the common run facts.
#[derive(Debug, Clone)]
pub struct EdgeInfo {
    /// What ran the host side.
    pub host: String,
    /// What ran the edge side (URL, versions).
    pub edge: String,
}

/// How the numbers were taken, printed under the table.
const NOTES: &str = "\
- Both columns come from the same run: each edge workload runs right after the same host workload,
  with the same client, bounds and payloads (see the event-log section for how each is driven).
  Ratios are written so that above 1 means the host is faster: host ÷ edge for rates, edge ÷ host
  for latencies (medians).
- CPU columns read `/proc/PID/stat` before and after each workload (filling the log for a catch-up
  read is not counted): `stasis` is the host process; on the edge, `workerd` runs the worker and
  its Durable Objects, `proxy workerd` is wrangler's own proxy listening on the dev port, `node` is
  wrangler (it also prints a log line per request); `client` is the bench. 100% is one core; the
  machine has the cores stated above, shared by everything. \"Threads queued\" is the server's
  threads' run-queue time (`/proc/PID/task/TID/schedstat`) over the workload's wall time: how many
  of them were, on average, ready to run while no core was free.
- Durability: the host runs `--durability fsync`. workerd's local Durable Object storage also
  syncs each commit: `strace -f -c -e trace=fsync -p <workerd>` counted one `fsync` per
  single-event append (20 for 20) when this bench was written.
";

/// The BENCHMARKS.md edge section for `rows`.
pub fn section(info: &RunInfo, edge: &EdgeInfo, rows: &[EdgeRow]) -> String {
    format!(
        "{}\n## Edge: the host against the edge worker under `wrangler dev --local`\n\n{}\n\
         {}\n{}\n{NOTES}{}\n",
        EDGE.start,
        info.facts(&[("Host", &edge.host), ("Edge", &edge.edge)]),
        table(rows),
        explanations(rows),
        EDGE.end,
    )
}
