//! The agent coming back by itself, with the real Kilo CLI on the host: each round plays the
//! supervision story (`stasis_kilo_harness::supervision`: a supervised kilo SIGKILLed and
//! served again; a container killed whole mid-reply and the next one's `stasis-client up`
//! finishing the cut reply) and the resume story (`stasis_kilo_harness::story::resume`:
//! Mayor messages posted into a running kilo by `follow_inbox`). Every figure comes with
//! kilo's own start measured in the same round.

use super::Stasis;
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
    /// Of that: what is neither kilo's own start nor the restart delay (stasis's share).
    pub share: Latency,
    /// kilo's own start in that restart (spawn to its listening line).
    pub kilo_restart: Latency,
    /// The next container's `up` to the continuation of the cut reply reaching the model.
    pub to_continuation: Latency,
    /// kilo's own start in that container.
    pub kilo_revived: Latency,
    /// A Mayor message posted to delivered into the running kilo.
    pub inbox: Latency,
    /// kilo's own start on the resume story's container B.
    pub kilo_resume: Latency,
}

/// `rounds` rounds of both stories against `stasis`, whose secret is `secret`.
pub fn rounds(stasis: &Stasis, secret: &str, rounds: usize, dir: &Path) -> Result<Supervised> {
    let client = client_bin()?;
    let kilo = stasis_kilo_harness::kilo_bin()?;
    let mut samples: [Vec<Duration>; 7] = Default::default();
    for round in 0..rounds {
        eprintln!("  round {}: the supervision story", round + 1);
        let options = SupervisionOptions {
            url: stasis.url.clone(),
            secret: secret.to_owned(),
            client_bin: client.clone(),
            kilo_bin: kilo.clone(),
        };
        let report = supervision::play(&options, &|_| {})?;
        samples[0].push(report.crash_to_served);
        samples[1].push(
            report
                .crash_to_served
                .saturating_sub(report.kilo_start + report.restart_delay),
        );
        samples[2].push(report.kilo_start);
        samples[3].push(report.revived_to_continuation);
        samples[4].push(report.revived_kilo_start);
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
        samples[5].extend(report.latencies.total.iter().copied());
        samples[6].push(report.kilo_start_b);
    }
    let [
        crash,
        share,
        restart,
        continuation,
        revived,
        inbox,
        resume_start,
    ] = samples.map(|s| Latency::of(s).context("no rounds"));
    Ok(Supervised {
        crash_to_served: crash?,
        share: share?,
        kilo_restart: restart?,
        to_continuation: continuation?,
        kilo_revived: revived?,
        inbox: inbox?,
        kilo_resume: resume_start?,
    })
}
