//! The agent coming back by itself, with the real Kilo CLI on the host: each round plays the
//! supervision story (`stasis_kilo_harness::supervision`: a supervised kilo SIGKILLed and
//! served again; a container killed whole mid-reply and the next one's `stasis-client up`
//! finishing the cut reply) and the resume story (`stasis_kilo_harness::story::resume`:
//! Mayor messages posted into a running kilo by `follow_inbox`). Every figure comes with
//! kilo's own figure measured in the same round: kilo alone, restarted by hand ([`bare_kilo`]).

use super::{Stasis, bare_kilo};
use crate::stats::Latency;
use anyhow::{Context, Result};
use stasis_kilo_harness::story::{StoryOptions, client_bin, resume};
use stasis_kilo_harness::supervision::{self, SupervisionOptions};
use std::path::Path;
use std::time::Duration;

/// The figures of the rounds.
#[derive(Debug, Clone, Copy)]
pub struct Supervised {
    /// kill -9 of a supervised kilo to its session served again.
    pub crash_to_served: Latency,
    /// Of that: the exit collected to the new kilo spawned (stasis's share: the restart decided
    /// and the process started), from the supervisor's log.
    pub share: Latency,
    /// Of that: the SIGKILL to the supervisor collecting the exit (the kernel ending kilo).
    pub kill_to_exit: Latency,
    /// Of that: what kilo alone, restarted by hand, does not take (its start on the busier
    /// container included).
    pub over_bare: Latency,
    /// kilo alone, restarted by hand after a SIGKILL: spawn to the session served.
    pub bare_restart: Latency,
    /// The next container's `up` to the continuation of the cut reply reaching the model.
    pub to_continuation: Latency,
    /// kilo alone: spawn to a prompt (sent as soon as it is healthy) at the model.
    pub bare_to_model: Latency,
    /// Of `to_continuation`: what `bare_to_model` does not take.
    pub continuation_over: Latency,
    /// Of `to_continuation`: stasis's own part, from the Mayor's log (all but kilo's start and
    /// its answer to the sidecar's first request).
    pub continuation_share: Latency,
    /// A Mayor message posted to delivered into the running kilo.
    pub inbox: Latency,
    /// Of `inbox`: kilo accepting the message (its `prompt_async` round trip).
    pub inbox_runtime: Latency,
    /// Of `inbox`: the rest, stasis's share.
    pub inbox_stasis: Latency,
}

/// `rounds` rounds of both stories against `stasis`, whose secret is `secret`.
pub fn rounds(stasis: &Stasis, secret: &str, rounds: usize, dir: &Path) -> Result<Supervised> {
    let client = client_bin()?;
    let kilo = stasis_kilo_harness::kilo_bin()?;
    let mut samples: [Vec<Duration>; 12] = Default::default();
    for round in 0..rounds {
        eprintln!("  round {}: kilo alone, restarted by hand", round + 1);
        let bare = bare_kilo::measure(&dir.join(format!("bare-{round}")))?;
        eprintln!("  round {}: the supervision story", round + 1);
        let options = SupervisionOptions {
            url: stasis.url.clone(),
            secret: secret.to_owned(),
            client_bin: client.clone(),
            kilo_bin: kilo.clone(),
        };
        let report = supervision::play(&options, &|_| {})?;
        samples[0].push(report.crash_to_served);
        samples[1].push(report.kill_to_respawn.saturating_sub(report.kill_to_exit));
        samples[9].push(report.kill_to_exit);
        samples[8].push(
            report
                .crash_to_served
                .saturating_sub(bare.restart_to_served),
        );
        samples[2].push(bare.restart_to_served);
        samples[3].push(report.revived_to_continuation);
        samples[11].push(report.revived_stasis_share);
        samples[4].push(bare.start_to_model);
        samples[5].push(
            report
                .revived_to_continuation
                .saturating_sub(bare.start_to_model),
        );
        eprintln!("  round {}: the resume story", round + 1);
        let work = dir.join(format!("resume-{round}"));
        std::fs::create_dir_all(&work)?;
        let options = StoryOptions {
            url: stasis.url.clone(),
            secret: secret.to_owned(),
            client_bin: client.clone(),
            kilo_bin: Some(kilo.clone()),
            work: Some(work),
        };
        let report = resume::play(&options, &|_| {})?;
        samples[6].extend(report.latencies.total.iter().copied());
        samples[7].extend(report.latencies.runtime.iter().copied());
        samples[10].extend(report.latencies.stasis.iter().copied());
    }
    let [
        crash,
        share,
        bare_restart,
        continuation,
        bare_to_model,
        continuation_over,
        inbox,
        inbox_runtime,
        over_bare,
        kill_to_exit,
        inbox_stasis,
        continuation_share,
    ] = samples.map(|s| Latency::of(s).context("no rounds"));
    Ok(Supervised {
        crash_to_served: crash?,
        share: share?,
        over_bare: over_bare?,
        kill_to_exit: kill_to_exit?,
        bare_restart: bare_restart?,
        to_continuation: continuation?,
        bare_to_model: bare_to_model?,
        continuation_over: continuation_over?,
        continuation_share: continuation_share?,
        inbox: inbox?,
        inbox_runtime: inbox_runtime?,
        inbox_stasis: inbox_stasis?,
    })
}
