//! A seeded HTTP fuzz over every endpoint of `docs/http-api.md`.
//!
//! Each of a few threads fuzzes a town of its own (a [`world::World`]: a
//! Mayor and three agents, seeded with events, a checkpoint, memory, a
//! snapshot, a heartbeat and a registry). A request starts valid for a
//! random route ([`generate`]); most then get one or two mutations
//! ([`mutate`]): hostile bodies (truncated, not UTF-8, `1e999`, 200 levels
//! of nesting, lone surrogates, wrong types, unknown fields), wrong content
//! types, bad ids and percent-encodings, bad, absent or foreign tokens, odd
//! methods, a declared length far past a small body, stray and bad query
//! parameters. Every request goes over a raw socket, and for each:
//!
//! - an answer came (no dropped connection, no timeout);
//! - it is documented for that route and method, comes from the first check
//!   the request broke in the contract's order, has the error shape with a
//!   code its status lists (and `limit`, `first_seq`, `allowed` or
//!   `retry_after` where due), a success body parses, and no 500 appears
//!   ([`oracle`]);
//! - a refused request, and any read, leaves the town and the agent it
//!   aimed at exactly as they were ([`state`]).
//!
//! After the fuzz, every read of every fuzzed agent and town still answers
//! ([`after`]). The seed is fixed (`STASIS_FUZZ_SEED` overrides it, and
//! `STASIS_FUZZ_REQUESTS` the count), so a failure replays; each failure
//! names its request.

mod after;
mod bodies;
mod catalog;
mod generate;
mod mutate;
mod oracle;
mod report;
mod request;
mod state;
mod values;
mod world;

use std::collections::HashMap;
use std::time::Instant;

use fastrand::Rng;

pub use report::Report;
use request::{Request, Target};
use state::Visible;
use world::World;

/// How much to fuzz, and with which seed.
#[derive(Debug, Clone, Copy)]
pub struct Config {
    /// The seed of every world's generator.
    pub seed: u64,
    /// Requests in all, shared among the worlds.
    pub requests: usize,
    /// Towns fuzzed at once, one thread each.
    pub worlds: usize,
    /// True against the edge (`STASIS_TARGET=edge`).
    pub on_edge: bool,
}

impl Config {
    /// The seed a run uses unless `STASIS_FUZZ_SEED` says otherwise.
    pub const SEED: u64 = 20_260_415;

    /// The defaults, overridden by `STASIS_FUZZ_SEED` and
    /// `STASIS_FUZZ_REQUESTS`.
    pub fn from_env(requests: usize) -> Config {
        let number = |name: &str| std::env::var(name).ok().and_then(|v| v.trim().parse().ok());
        Config {
            seed: number("STASIS_FUZZ_SEED").unwrap_or(Self::SEED),
            requests: number("STASIS_FUZZ_REQUESTS")
                .map_or(requests, |n: u64| usize::try_from(n).unwrap_or(requests)),
            worlds: 4,
            on_edge: crate::on_edge(),
        }
    }
}

/// Fuzzes `config.worlds` towns at once and returns what was seen.
pub fn run(config: Config) -> Report {
    let started = Instant::now();
    let threads: Vec<_> = (0..config.worlds)
        .map(|index| std::thread::spawn(move || fuzz_world(config, index)))
        .collect();
    let mut report = Report::default();
    for thread in threads {
        match thread.join() {
            Ok(world) => report.merge(world),
            Err(panic) => report.fail(format!(
                "a fuzz thread stopped: {}",
                state::panic_text(&panic)
            )),
        }
    }
    report.elapsed = started.elapsed();
    report
}

fn fuzz_world(config: Config, index: usize) -> Report {
    let offset = u64::try_from(index)
        .unwrap_or(0)
        .wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let mut rng = Rng::with_seed(config.seed.wrapping_add(offset));
    let limits = mutate::Limits {
        declared_lengths: !config.on_edge,
    };
    let share =
        config.requests / config.worlds + usize::from(index < config.requests % config.worlds);
    let mut run = Run {
        world: World::seeded(index),
        report: Report::default(),
        before: HashMap::new(),
        on_edge: config.on_edge,
    };
    for n in 0..share {
        let route = catalog::ROUTES[rng.usize(..catalog::ROUTES.len())];
        let mut request = generate::valid(&mut rng, &mut run.world, route);
        if rng.u8(..10) < 3 {
            run.report.valid += 1;
        } else {
            mutate::mutate(&mut rng, &run.world, limits, &mut request);
        }
        run.step(index, n, &request);
    }
    after::check(&run.world, &mut run.report);
    run.report
}

/// One world being fuzzed, with the last state read around each target
/// (still true while no request was accepted since).
struct Run {
    world: World,
    report: Report,
    before: HashMap<Target, Option<Visible>>,
    on_edge: bool,
}

impl Run {
    fn step(&mut self, world: usize, n: usize, request: &Request) {
        self.report.requests += 1;
        let label = format!("town {world} request {n}: {}", request.describe());
        let before = match self.visible(request.target) {
            Ok(before) => before,
            Err(error) => {
                return self.fail(&label, format!("reading the state before broke: {error}"));
            }
        };
        let reply = match request.send() {
            Ok(reply) => reply,
            Err(error) => {
                self.report.dropped += 1;
                self.before.clear();
                return self.fail(&label, format!("no answer: {error}"));
            }
        };
        self.report.answered(&reply);
        for problem in oracle::check(request, &reply, self.on_edge) {
            self.fail(&label, format!("answered {}: {problem}", reply.status));
        }
        if !request.is_read() && (200..300).contains(&reply.status) {
            let agent = match request.target {
                Target::Agent(i) => Some(i),
                _ => None,
            };
            self.world.learn(agent, &reply);
            self.before.clear();
            return;
        }
        self.unchanged(&label, request.target, before);
    }

    /// Checks that a refused request or a read changed nothing.
    fn unchanged(&mut self, label: &str, target: Target, before: Option<Visible>) {
        self.before.remove(&target);
        match state::read(&self.world, target) {
            Ok(after) => {
                self.report.unchanged_checked += 1;
                if let (Some(b), Some(a)) = (&before, &after)
                    && let Some(difference) = state::difference(b, a)
                {
                    self.fail(label, format!("it was refused or a read, yet {difference}"));
                    self.before.clear();
                    return;
                }
                self.before.insert(target, after);
            }
            Err(error) => self.fail(label, format!("reading the state after broke: {error}")),
        }
    }

    /// The state around `target`, read now unless still known.
    fn visible(&mut self, target: Target) -> Result<Option<Visible>, String> {
        if let Some(known) = self.before.get(&target) {
            return Ok(known.clone());
        }
        let visible = state::read(&self.world, target)?;
        self.before.insert(target, visible.clone());
        Ok(visible)
    }

    fn fail(&mut self, label: &str, problem: String) {
        self.report.fail(format!("{label}\n    {problem}"));
    }
}
