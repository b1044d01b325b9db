//! The BENCHMARKS.md section of the sidecar and real-agent rows.

use crate::report::{Marks, Row, RunInfo, table};

/// Where the section goes.
pub const MARKS: Marks = Marks {
    start: "<!-- bench:real-agent:start -->",
    end: "<!-- bench:real-agent:end -->",
    before: None,
};

const NOTES: &str = "\
How these are measured (`bench/src/real_agent/`):

- Forwarding: a synthetic kilo (`host/tests/client_end_to_end/sidecar/fake_kilo.rs`) serves \
`GET /event` on loopback and an in-process `stasis_client::sidecar::Sidecar` (the code \
`stasis-client sidecar` runs) follows it into one agent, in stamped batches with its default \
25 ms linger. The burst is emitted as fast as the source can; its rate counts from the first \
event emitted to the last one readable from stasis's own `GET /events` Server-Sent Events \
stream. The paced events carry their emission time; the delay is emission to readable on that \
stream (`measure.rs`, shared with the host's ignored test). Baselines: the same events \
appended by `POST /events` directly, 1,000 a request for the burst and one a request for the \
paced ones, timed the same way.
- Recovery: container A (the real Kilo CLI with the in-process sidecar) holds two turns with \
the harness's fake model and stops cleanly; then each round starts kilo on an empty home \
(baseline: to its first `GET /session` answer) and boots a container B on the emptied root: \
`stasis_client::boot::boot` (what `stasis-client boot` runs: heartbeat, kilo.db hydrated and \
verified, the Mayor's dispatch requested), then `kilo serve` on the hydrated kilo.db until \
`GET /session/{id}/message` answers with the session. kilo's start dominates both.
- The agent coming back by itself (host only: the stories mint their towns' tokens from the \
secret of the host the bench started; a `--quick` run leaves them out). Each round plays the \
supervision story (`tests/kilo-harness/src/supervision/`) and the resume story \
(`tests/kilo-harness/src/story/resume/`) once, with the real Kilo CLI and the harness's fake \
model. Supervised restart: `stasis-client up` runs kilo under a supervisor (the first restart \
is immediate; the 200 ms delay applies from the second crash in a row); kilo is SIGKILLed and \
the clock stops when `GET /session/{id}/message` answers again; the baseline is kilo alone in \
the same round, SIGKILLed and started again by hand (spawn → served). stasis's share is the \
exit to the new kilo's spawn, from the supervisor's log (`exited_at_ms` of \
`stasis.runtime.exited`, `spawned_at_ms` of `stasis.runtime.started`); the kill to the exit \
collected (the wall-clock instant of the kill against `exited_at_ms`) is the kernel ending kilo, \
shown beside it. \"over kilo alone\" is the total minus the \
baseline: it adds kilo's own start running slower beside a second kilo and the supervisors. \
Continuation: a \
container is SIGKILLed whole while the Mayor's reply streams; the clock runs from the next \
container's `stasis-client up` to the model receiving the continuation, which includes \
hydrating kilo.db and kilo's own start; the baseline is kilo alone, SIGKILLed and started \
again by hand beside a second kilo starting (the container starts the Mayor's and the \
polecat's at once, and on two cores the two starts slow each other), with a prompt sent as \
soon as it is healthy, to the model receiving it. stasis's share of it comes from the Mayor's \
log: the whole less kilo's start (spawn → its listening line: `spawned_at_ms` and `ready_ms` of \
`stasis.runtime.started`) and less kilo's answer to the sidecar's `GET /event` (`stream` of \
`stasis.sidecar.resync`: kilo's first request after a start, its instance bootstrap, 0.45–0.6 \
s here whatever the request, which kilo alone pays on its first prompt), up to the cut reply's \
decision stored (`stasis.resume.cut_reply`; the continuation is posted right after). So it \
holds boot, hydration, the supervisor's and the sidecar's starts, kilo's health answer, the \
ready hook and resume's reads. The aim is judged on the share: the total over kilo alone also \
carries kilo starting slower on the busier container, and moved by 2.4 s across four runs of 3 \
rounds. Inbox: 50 \
Mayor messages a round, each posted once kilo is idle after the previous one's turn, from the \
start of its `POST /mayor/message` to `follow_inbox`'s delivery into the running kilo; the \
baseline is kilo's own part of each delivery (its `prompt_async` round trip), and stasis's \
share is the total less it.
- Reading the ratios: the sidecar batches, waiting up to its 25 ms linger for more events before it sends, where the paced baseline sends each event at once, so its delay is about the linger; a burst goes through the sidecar's one batch in flight at a time. A recovery is boot (tens of milliseconds) plus kilo's own start, so it meets 3 s only where kilo starts in under 3 s.
";

/// The section for `rows`; `edge` is the edge's URL when it ran.
pub fn section(info: &RunInfo, rows: &[Row], edge: Option<&str>) -> String {
    let edge = edge.map_or_else(String::new, |url| {
        format!("; the edge: `wrangler dev --local` at {url}")
    });
    let target = format!("{}{edge}", info.target);
    format!(
        "{}\n## The agent sidecar and a real kilo agent: forwarding and recovery\n\n{}\n\
         {}\n{NOTES}{}\n",
        MARKS.start,
        info.facts(&[("Target", &target)]),
        table(rows),
        MARKS.end,
    )
}
