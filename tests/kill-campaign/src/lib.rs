//! SIGKILL campaigns against a real `stasis serve`.
//!
//! A trial starts the host on the campaign's data folder (`--durability
//! fsync` and `os` in turn), puts it under load — three producers appending
//! stamped batches to two agents (two share one, so their appends share
//! group commits), a quarter of them retried at once, one pusher of
//! snapshots (whole files on both sides of the 1 MiB inline limit, SQL and
//! KV, and pushes by chunks that upload again what the push before
//! superseded), and two readers of the whole snapshot (none may be cut or
//! refused while the host lives; no upload may wait long for a
//! collection) — kills
//! it with SIGKILL at a random moment, restarts it on the same folder and
//! checks ([`verify`]): every acknowledged event is there with its seq and
//! data, the log has no gap, a batch is whole or absent and never stored
//! twice however often it was sent (retries of acknowledged and of
//! in-flight batches included, after the restart too); the current
//! snapshot is a body that was sent, whole and matching its sha256, no
//! older than the newest acknowledged; and after one more push the KV
//! folder holds no partial or stale file.
//!
//! `host/tests/kill_campaign.rs` runs a few trials in every test run; the
//! `stasis-kill-campaign` command runs hundreds and prints the totals.

mod client;
mod delta;
mod host;
mod load;
mod verify;

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use fastrand::Rng;

use delta::Reads;
use host::{Host, HostConfig};
use load::{Appends, Pushes};
use verify::Checked;

/// A campaign: how many trials, for how long at most, where.
#[derive(Debug, Clone)]
pub struct Campaign {
    /// The `stasis` binary.
    pub stasis_bin: PathBuf,
    /// The host's data folder and log go here.
    pub work_dir: PathBuf,
    /// Trials to run.
    pub trials: u32,
    /// No trial starts after this long.
    pub time_limit: Duration,
    /// The seed of kill moments, batch sizes and snapshot bodies.
    pub seed: u64,
    /// How long the load runs before the kill, in ms (drawn per trial).
    pub kill_after_ms: std::ops::RangeInclusive<u64>,
    /// Print a line per trial on stderr.
    pub verbose: bool,
}

/// What a campaign checked.
#[derive(Debug, Default, Clone)]
pub struct Totals {
    /// Trials run.
    pub trials: u32,
    /// Acknowledged events found with their seq and data after a kill.
    pub events: u64,
    /// Immediate retries of acknowledged batches that appended nothing.
    pub retries_live: u64,
    /// Retries after a restart (acknowledged and in-flight batches).
    pub retries_after: u64,
    /// Acknowledged snapshot pushes.
    pub snapshot_pushes: u64,
    /// Snapshots read back whole after a kill.
    pub snapshots: u64,
    /// Of the acknowledged pushes, pushes by chunks.
    pub pushes_by_chunks: u64,
    /// Whole snapshots read and verified beside the pushes.
    pub reads: u64,
    /// The longest a chunk upload waited for a collection (ms).
    pub blocked_ms: u64,
    /// Everything lost, changed, duplicated or left behind.
    pub losses: Vec<String>,
    /// How long the campaign ran.
    pub elapsed: Duration,
}

impl Totals {
    /// One line of figures.
    pub fn summary(&self) -> String {
        format!(
            "kill -9 campaign: {} trials in {:.0} s; acknowledged events checked: {}; retried stamps \
             checked: {} live + {} after restarts; snapshot pushes acknowledged: {} ({} by chunks); \
             whole reads beside them: {}; longest upload wait: {} ms; snapshots read back whole: {}; \
             losses: {}",
            self.trials,
            self.elapsed.as_secs_f64(),
            self.events,
            self.retries_live,
            self.retries_after,
            self.snapshot_pushes,
            self.pushes_by_chunks,
            self.reads,
            self.blocked_ms,
            self.snapshots,
            self.losses.len()
        )
    }
}

impl Campaign {
    /// Runs the trials; an error when the host cannot be started at all.
    pub fn run(&self) -> Result<Totals, String> {
        let started = Instant::now();
        std::fs::create_dir_all(&self.work_dir)
            .map_err(|e| format!("creating {}: {e}", self.work_dir.display()))?;
        let config = HostConfig {
            bin: self.stasis_bin.clone(),
            data_dir: self.work_dir.join("data"),
            log: self.work_dir.join("host.log"),
            secret: format!("kill-campaign-secret-{}", self.seed),
        };
        let mut rng = Rng::with_seed(self.seed);
        let mut totals = Totals::default();
        while totals.trials < self.trials && started.elapsed() < self.time_limit {
            self.trial(totals.trials, &mut rng, &config, &mut totals)?;
            totals.trials += 1;
        }
        totals.elapsed = started.elapsed();
        Ok(totals)
    }

    fn trial(
        &self,
        n: u32,
        rng: &mut Rng,
        config: &HostConfig,
        totals: &mut Totals,
    ) -> Result<(), String> {
        let durability = if n.is_multiple_of(2) { "fsync" } else { "os" };
        let town = format!("kill-{n}");
        let paths: Vec<String> = (0..2)
            .map(|a| format!("/api/towns/{town}/rigs/r/agents/a{a}/events"))
            .collect();
        let snapshot = format!("/api/towns/{town}/rigs/r/agents/mayor/db-snapshot");
        let kill_after = Duration::from_millis(rng.u64(self.kill_after_ms.clone()));
        let (appends, pushes, reads) =
            load_until_killed(config, durability, &paths, &snapshot, kill_after, rng)?;
        let host = Host::start(config, durability)?;
        let mut checked = Checked::default();
        verify::appends(&host.client, &paths, &appends, &mut checked);
        let kv = (
            config.data_dir.join("kv/snapshots"),
            format!("{town}/r/mayor"),
        );
        verify::snapshot(
            &host.client,
            &snapshot,
            (&kv.0, &kv.1),
            &pushes,
            rng,
            &mut checked,
        );
        host.kill();
        let lost = checked.losses.len()
            + appends.violations.len()
            + pushes.violations.len()
            + reads.violations.len();
        if lost == 0 {
            forget_town(config, &town);
        }
        if self.verbose {
            eprintln!(
                "trial {n} ({durability}): killed after {} ms; {} acknowledged events and {} snapshot \
                 pushes checked; losses: {}",
                kill_after.as_millis(),
                checked.events,
                pushes.acked,
                lost
            );
        }
        totals.events += checked.events;
        totals.retries_live += appends.retries_checked;
        totals.retries_after += checked.retries;
        totals.snapshot_pushes += pushes.acked;
        totals.snapshots += checked.snapshots;
        totals.pushes_by_chunks += pushes.by_chunks;
        totals.reads += reads.whole;
        totals.blocked_ms = totals.blocked_ms.max(pushes.blocked_ms);
        let trial_losses = appends
            .violations
            .into_iter()
            .chain(pushes.violations)
            .chain(reads.violations)
            .chain(checked.losses);
        for loss in trial_losses {
            let loss = format!("trial {n}: {loss}");
            if self.verbose {
                // At once: a long campaign's first loss is worth reading before its end.
                eprintln!("  LOSS {loss}");
            }
            totals.losses.push(loss);
        }
        Ok(())
    }
}

/// Removes a checked trial's files (tens of megabytes each; hundreds of
/// trials would fill a disk). A trial that lost something keeps them.
fn forget_town(config: &HostConfig, town: &str) {
    let _ = std::fs::remove_dir_all(config.data_dir.join("towns").join(town));
    let _ = std::fs::remove_dir_all(config.data_dir.join("kv/snapshots").join(town));
}

/// Starts the host, loads it, kills it after `kill_after`, and returns what
/// the producers, the pusher and the two readers saw.
fn load_until_killed(
    config: &HostConfig,
    durability: &str,
    paths: &[String],
    snapshot: &str,
    kill_after: Duration,
    rng: &mut Rng,
) -> Result<(Appends, Pushes, Reads), String> {
    let host = Host::start(config, durability)?;
    let stop = Arc::new(AtomicBool::new(false));
    let producers: Vec<JoinHandle<Appends>> = (0..3)
        .map(|w| {
            let (client, stop, seed) = (host.client.clone(), Arc::clone(&stop), rng.u64(..));
            let path = paths[w % paths.len()].clone();
            std::thread::spawn(move || load::produce(&client, &path, &format!("w{w}"), seed, &stop))
        })
        .collect();
    let sent = Arc::new(Mutex::new(HashSet::new()));
    let pusher = {
        let (client, stop, seed, path, sent) = (
            host.client.clone(),
            Arc::clone(&stop),
            rng.u64(..),
            snapshot.to_owned(),
            Arc::clone(&sent),
        );
        std::thread::spawn(move || load::push(&client, &path, seed, &sent, &stop))
    };
    let readers: Vec<JoinHandle<Reads>> = (0..2)
        .map(|_| {
            let (client, stop, path, sent) = (
                host.client.clone(),
                Arc::clone(&stop),
                snapshot.to_owned(),
                Arc::clone(&sent),
            );
            std::thread::spawn(move || delta::read(&client, &path, &sent, &stop))
        })
        .collect();
    std::thread::sleep(kill_after);
    host.kill();
    stop.store(true, Ordering::Relaxed);
    let mut appends = Appends::default();
    for producer in producers {
        let log = producer
            .join()
            .map_err(|_| "a producer thread panicked".to_owned())?;
        appends.acked.extend(log.acked);
        appends.in_flight.extend(log.in_flight);
        appends.retries_checked += log.retries_checked;
        appends.violations.extend(log.violations);
    }
    let pushes = pusher
        .join()
        .map_err(|_| "the pusher thread panicked".to_owned())?;
    let mut reads = Reads::default();
    for reader in readers {
        let seen = reader
            .join()
            .map_err(|_| "a reader thread panicked".to_owned())?;
        reads.whole += seen.whole;
        reads.violations.extend(seen.violations);
    }
    Ok((appends, pushes, reads))
}
