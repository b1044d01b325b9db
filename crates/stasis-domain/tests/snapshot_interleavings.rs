//! Guards against a collection deleting a chunk that a committed manifest
//! names, and against uploads refused or readers cut by a collection beside
//! them: two sagas (a push, a whole-file PUT, a collection, a sweep, a
//! delete, a reader) run over one agent's object and one KV store, and
//! every step of each (an object call or a KV operation) is a fault point.
//! For every pair of step counts (k, j), the first saga runs k steps, the
//! second j, then either both run to the end (racing: a saga that waits
//! lets the other run) or both die there (a crash: a new process retries
//! the first saga's work). After each run the current snapshot must read
//! whole and verify; after recovery (the pending time passed, a sweep) the
//! KV store must hold exactly the chunks the current manifest names.

#![allow(
    clippy::expect_used,
    clippy::panic,
    clippy::unwrap_used,
    reason = "tests fail loudly"
)]

mod support;

use stasis_domain::{
    DomainError,
    agent::ObjectEnv,
    chunk_store::{
        self, PENDING_CHUNK_TTL_MS, chunk_key,
        operations::ChunkOperation,
        ports::{BlobStore, ChunkObject},
        saga::Upload,
        sha256_hex,
    },
    snapshot::{
        self, PutRequest, SnapshotMeta,
        chunk_saga::{self, CommitRequest},
        manifest::Manifest,
        operations::{SnapshotOperation, chunk_step},
        ports::SnapshotObject,
        saga::{self, Aging},
        whole::{WholeReader, WholeWriter},
    },
};
use stasis_sqlite::SqliteStore;
use std::{
    cell::Cell,
    future::{Future, poll_fn},
    pin::Pin,
    task::{Context, Poll, Waker},
};
use support::{MemoryKv, agent_store, noise};

const PREFIX: &str = "t/r/a/";
/// A client's chunk size.
const CHUNK: usize = 32 * 1024;
const START_MS: i64 = 1_700_000_000_000;

/// One agent's object and KV, and a clock.
struct World {
    store: SqliteStore,
    kv: MemoryKv,
    now: Cell<i64>,
}

/// How far a saga may go: it waits at each step once `allowed` were taken.
#[derive(Default)]
struct Gate {
    taken: Cell<usize>,
    allowed: Cell<usize>,
}

impl Gate {
    fn pass(&self) -> impl Future<Output = ()> + '_ {
        poll_fn(move |_| {
            if self.taken.get() < self.allowed.get() {
                self.taken.set(self.taken.get() + 1);
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        })
    }
}

/// One saga's view of the world: both ports, each step through its gate.
struct Port<'a> {
    world: &'a World,
    gate: &'a Gate,
    /// Claims of collections made before this were abandoned.
    stale_before: i64,
}

impl SnapshotObject for Port<'_> {
    async fn run<R: Send + 'static>(&self, step: SnapshotOperation<R>) -> Result<R, DomainError> {
        self.gate.pass().await;
        let env = ObjectEnv {
            now_ms: self.world.now.get(),
            max_events: 10_000,
            // Superseded versions go at once: these tests check collection
            // (history has tests of its own).
            retention: stasis_domain::history::RetentionPolicy::KEEP_NONE,
        };
        step.run_with(|call| snapshot::execute(&self.world.store, &call, &env))
    }
}

impl ChunkObject for Port<'_> {
    async fn run_chunk<R: Send + 'static>(
        &self,
        step: ChunkOperation<R>,
    ) -> Result<R, DomainError> {
        self.run(chunk_step(step)).await
    }
}

impl BlobStore for Port<'_> {
    async fn put(&self, key: &str, value: &[u8]) -> Result<(), DomainError> {
        self.gate.pass().await;
        self.world.kv.put(key, value).await
    }
    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, DomainError> {
        self.gate.pass().await;
        self.world.kv.get(key).await
    }
    async fn delete(&self, key: &str) -> Result<(), DomainError> {
        self.gate.pass().await;
        self.world.kv.delete(key).await
    }
    async fn list(
        &self,
        prefix: &str,
        cursor: Option<String>,
    ) -> Result<(Vec<String>, Option<String>), DomainError> {
        self.gate.pass().await;
        self.world.kv.list(prefix, cursor).await
    }
    fn propagation_delays_ms(&self) -> &[u64] {
        &[]
    }
    /// Time passes, and the other saga may run meanwhile.
    async fn pause(&self, ms: u64) {
        let now = self.world.now.get();
        self.world.now.set(now + i64::try_from(ms).unwrap_or(0));
        let mut yielded = false;
        poll_fn(|_| {
            if yielded {
                Poll::Ready(())
            } else {
                yielded = true;
                Poll::Pending
            }
        })
        .await;
    }
}

type Saga<'a> = Pin<Box<dyn Future<Output = Result<(), DomainError>> + 'a>>;

/// What a saga does, given its ports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Work {
    /// A client's push of `body` by chunks (missing, uploads, commit).
    Push,
    /// A whole-file PUT of `body`.
    WholePut,
    /// A collection pass.
    Collect,
    /// A listing sweep and a collection.
    Sweep,
    /// The snapshot's DELETE.
    Delete,
    /// A whole-file read of the current snapshot.
    Read,
    /// A push of `body`, then a collection pass.
    PushAndCollect,
}

fn start<'a>(work: Work, port: &'a Port<'a>, body: &'a [u8], grace_ms: i64) -> Saga<'a> {
    let upload = Upload {
        pending_ttl_ms: PENDING_CHUNK_TTL_MS,
        stale_before: port.stale_before,
    };
    match work {
        Work::Push => Box::pin(push(port, body, upload, grace_ms)),
        Work::WholePut => Box::pin(whole_put(port, body, grace_ms)),
        Work::Collect => Box::pin(async move {
            chunk_store::saga::collect_all(port, port, PREFIX, port.stale_before, 20)
                .await
                .map(drop)
        }),
        Work::Sweep => Box::pin(async move {
            saga::sweep(port, port, PREFIX, port.stale_before)
                .await
                .map(drop)
        }),
        Work::Delete => Box::pin(async move {
            let aging = Aging {
                grace_ms,
                stale_before: port.stale_before,
            };
            saga::delete(port, port, PREFIX, aging).await
        }),
        Work::Read => Box::pin(async move { read(port).await.map(drop) }),
        Work::PushAndCollect => Box::pin(async move {
            push(port, body, upload, grace_ms).await?;
            port.world.now.set(port.world.now.get() + 1);
            chunk_store::saga::collect_all(port, port, PREFIX, port.stale_before, 20)
                .await
                .map(drop)
        }),
    }
}

async fn push(
    port: &Port<'_>,
    body: &[u8],
    upload: Upload,
    grace_ms: i64,
) -> Result<(), DomainError> {
    let chunks: Vec<&[u8]> = body.chunks(CHUNK).collect();
    let names: Vec<String> = chunks.iter().map(|c| sha256_hex(c)).collect();
    let missing = chunk_store::saga::missing(port, names.clone(), PENDING_CHUNK_TTL_MS).await?;
    for (name, bytes) in names.iter().zip(&chunks) {
        if missing.contains(name) {
            chunk_store::saga::put_chunk(port, port, PREFIX, name, bytes, upload).await?;
        }
    }
    let manifest = Manifest {
        size: u64::try_from(body.len()).unwrap_or(0),
        sha256: sha256_hex(body),
        chunk_size: CHUNK as u64,
        chunks: names,
    };
    let request = CommitRequest {
        manifest,
        precondition: None,
        event_watermark: Some(1),
        limit: 1 << 30,
        sha256_from_chunks: false,
        grace_ms,
    };
    chunk_saga::commit(port, port, request).await.map(drop)
}

async fn whole_put(port: &Port<'_>, body: &[u8], grace_ms: i64) -> Result<(), DomainError> {
    let request = PutRequest {
        expected_sha256: None,
        precondition: None,
        event_watermark: Some(1),
        inline_limit: 1024,
        key_prefix: PREFIX.into(),
        limit: 1 << 30,
        pending_ttl_ms: PENDING_CHUNK_TTL_MS,
        stale_before: port.stale_before,
        grace_ms,
    };
    let size = u64::try_from(body.len()).ok();
    let mut writer = WholeWriter::new(request, size, port.min_split_chunk_size());
    writer.write(port, port, body).await?;
    writer.finish(port, port).await.map(drop)
}

/// The current snapshot read whole and verified, if there is one.
async fn read(port: &Port<'_>) -> Result<Option<(SnapshotMeta, Vec<u8>)>, DomainError> {
    let Some(plan) = chunk_saga::plan(port, true).await? else {
        return Ok(None);
    };
    let meta = plan.meta.clone();
    let bytes = WholeReader::new(plan, PREFIX.into()).read_all(port).await?;
    Ok(Some((meta, bytes)))
}

/// Polls `saga` until it waits at a gate or ends.
fn poll(saga: &mut Option<Saga<'_>>) -> Option<Result<(), DomainError>> {
    let mut context = Context::from_waker(Waker::noop());
    let Poll::Ready(result) = saga.as_mut()?.as_mut().poll(&mut context) else {
        return None;
    };
    *saga = None;
    Some(result)
}

/// Runs a future whose every step is allowed to its end.
fn finish<T>(future: impl Future<Output = T>) -> T {
    let mut future = std::pin::pin!(future);
    match future
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
    {
        Poll::Ready(value) => value,
        Poll::Pending => panic!("an ungated future waited"),
    }
}

/// A gate that lets every step through.
fn open_gate() -> Gate {
    let gate = Gate::default();
    gate.allowed.set(usize::MAX);
    gate
}

/// How a run ends after the first k and j steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ending {
    /// Both run to their end, each letting the other run while it waits.
    Race,
    /// Both die: a new process takes over.
    Crash,
}

/// The results of the two sagas (`None`: it died before its end).
type Outcome = (
    Option<Result<(), DomainError>>,
    Option<Result<(), DomainError>>,
);

fn interleave(
    sagas: [&mut Option<Saga<'_>>; 2],
    gates: [&Gate; 2],
    k: usize,
    j: usize,
    ending: Ending,
) -> Outcome {
    let [first, second] = sagas;
    gates[0].allowed.set(k);
    let mut one = poll(first);
    gates[1].allowed.set(j);
    let mut two = poll(second);
    if ending == Ending::Crash {
        return (one, two);
    }
    gates[0].allowed.set(usize::MAX);
    gates[1].allowed.set(usize::MAX);
    for _ in 0..10_000 {
        if first.is_none() && second.is_none() {
            break;
        }
        one = one.or_else(|| poll(first));
        two = two.or_else(|| poll(second));
    }
    assert!(first.is_none() && second.is_none(), "a saga never ended");
    (one, two)
}

/// The bodies the sagas write: a client's push of a few chunks; a
/// whole-file PUT's of a few server chunks.
struct Bodies {
    pushed: Vec<u8>,
    whole: Vec<u8>,
}

impl Bodies {
    fn new() -> Self {
        Self {
            pushed: noise(3 * CHUNK + 100, 7),
            whole: noise(2 * 1024 * 1024 + 100, 8),
        }
    }

    fn of(&self, work: Work) -> &[u8] {
        if work == Work::WholePut {
            &self.whole
        } else {
            &self.pushed
        }
    }
}

/// The agent before each run: the first saga's body committed once, then
/// superseded (grace 0), so that all its chunks are up for collection (or,
/// when `collected`, collected already).
fn prepared(work: Work, bodies: &Bodies, collected: bool) -> World {
    let world = World {
        store: agent_store(),
        kv: MemoryKv::default(),
        now: Cell::new(START_MS),
    };
    let gate = open_gate();
    let port = Port {
        world: &world,
        gate: &gate,
        stale_before: START_MS - 1,
    };
    let maker = if work == Work::WholePut {
        Work::WholePut
    } else {
        Work::Push
    };
    let other = noise(bodies.of(maker).len() / 2 + 3, 99);
    for payload in [bodies.of(maker), &other[..]] {
        let mut saga = Some(start(maker, &port, payload, 0));
        assert!(matches!(poll(&mut saga), Some(Ok(()))), "the setup commits");
    }
    world.now.set(START_MS + 1);
    if collected {
        let mut collection = Some(start(Work::Collect, &port, &[], 0));
        assert!(
            matches!(poll(&mut collection), Some(Ok(()))),
            "the setup collects"
        );
    }
    world
}

/// Checks the current snapshot reads whole; then recovers (a new process
/// once the pending time passed: a sweep) and checks KV holds exactly the
/// chunks the current snapshot names. Returns the current sha256.
fn check(world: &World, what: &str) -> Option<String> {
    let gate = open_gate();
    let port = Port {
        world,
        gate: &gate,
        stale_before: 0,
    };
    let current = match finish(read(&port)) {
        Ok(current) => current,
        Err(err) => panic!("{what}: the current snapshot does not read whole: {err}"),
    };
    let chunk_size = finish(chunk_saga::plan(&port, false))
        .ok()
        .flatten()
        .map(|p| p.chunk_size);
    world
        .now
        .set(world.now.get() + PENDING_CHUNK_TTL_MS + chunk_store::DEFAULT_CLAIM_LEASE_MS + 1);
    let recovery = Port {
        world,
        gate: &gate,
        stale_before: world.now.get(),
    };
    let swept = finish(saga::sweep(
        &recovery,
        &recovery,
        PREFIX,
        recovery.stale_before,
    ));
    assert!(swept.is_ok(), "{what}: the recovery sweep: {swept:?}");
    let mut named: Vec<String> = match (&current, chunk_size) {
        (Some((meta, bytes)), Some(size)) if meta.size > 1024 => bytes
            .chunks(usize::try_from(size).unwrap_or(CHUNK))
            .map(|c| chunk_key(PREFIX, &sha256_hex(c)))
            .collect(),
        _ => Vec::new(),
    };
    named.sort();
    named.dedup();
    assert_eq!(
        world.kv.keys_under(PREFIX),
        named,
        "{what}: KV holds exactly the named chunks"
    );
    current.map(|(meta, _)| meta.sha256)
}

fn refused_as_busy(result: &Option<Result<(), DomainError>>) -> bool {
    matches!(result, Some(Err(DomainError::Unavailable(refusal))) if refusal.code == "chunk_being_collected")
}

/// How many steps `work` takes on an agent prepared for `setup`, alone or
/// once `before` ran to its end: the most steps it may take beside it.
fn most_steps(
    work: Work,
    setup: (Work, bool),
    before: Work,
    bodies: &Bodies,
    grace_ms: i64,
) -> usize {
    let mut most = 0;
    for before in [None, Some(before)] {
        let world = prepared(setup.0, bodies, setup.1);
        let gate = open_gate();
        let port = Port {
            world: &world,
            gate: &gate,
            stale_before: START_MS,
        };
        if let Some(before) = before {
            let mut saga = Some(start(before, &port, bodies.of(before), grace_ms));
            assert!(poll(&mut saga).is_some(), "{before:?} ends alone");
            gate.taken.set(0);
        }
        let mut saga = Some(start(work, &port, bodies.of(work), grace_ms));
        assert!(poll(&mut saga).is_some(), "{work:?} ends alone");
        most = most.max(gate.taken.get());
    }
    most
}

/// Every (k, j) of `first` beside `second`, both endings; `grace_ms` is the
/// grace of what the sagas' commits supersede; `collected`: the first
/// saga's chunks are gone before it starts.
fn every_interleaving(first: Work, second: Work, grace_ms: i64, collected: bool) {
    let bodies = Bodies::new();
    let (n, m) = (
        most_steps(first, (first, collected), second, &bodies, grace_ms),
        most_steps(second, (first, collected), first, &bodies, grace_ms),
    );
    let mut runs = 0;
    for k in 0..=n {
        for j in 0..=m {
            for ending in [Ending::Race, Ending::Crash] {
                let what = format!("{first:?} {k} of {n} steps, {second:?} {j} of {m}, {ending:?}");
                let world = prepared(first, &bodies, collected);
                let gates = [Gate::default(), Gate::default()];
                let ports = [
                    Port {
                        world: &world,
                        gate: &gates[0],
                        stale_before: START_MS,
                    },
                    Port {
                        world: &world,
                        gate: &gates[1],
                        stale_before: START_MS,
                    },
                ];
                let mut one = Some(start(first, &ports[0], bodies.of(first), grace_ms));
                let mut two = Some(start(second, &ports[1], bodies.of(second), grace_ms));
                let (a, b) = interleave([&mut one, &mut two], [&gates[0], &gates[1]], k, j, ending);
                drop((one, two));
                if ending == Ending::Race {
                    assert!(
                        !refused_as_busy(&a) && !refused_as_busy(&b),
                        "{what}: an upload was refused: {a:?} {b:?}"
                    );
                    if first == Work::Read {
                        assert!(
                            matches!(a, Some(Ok(()))),
                            "{what}: the reader was cut: {a:?}"
                        );
                    }
                }
                let writes = matches!(first, Work::Push | Work::WholePut);
                let acked = writes && matches!(a, Some(Ok(())));
                if ending == Ending::Crash && writes {
                    // A new process: the client retries its push.
                    world.now.set(world.now.get() + 1);
                    let gate = open_gate();
                    let port = Port {
                        world: &world,
                        gate: &gate,
                        stale_before: world.now.get(),
                    };
                    let mut retry = Some(start(first, &port, bodies.of(first), grace_ms));
                    let retried = poll(&mut retry);
                    assert!(
                        matches!(retried, Some(Ok(()))),
                        "{what}: the retry after the crash: {retried:?}"
                    );
                }
                let current = check(&world, &what);
                if (acked || (writes && ending == Ending::Crash)) && second != Work::Delete {
                    let expected = sha256_hex(bodies.of(first));
                    assert_eq!(
                        current,
                        Some(expected),
                        "{what}: the acknowledged version is current"
                    );
                }
                runs += 1;
            }
        }
    }
    assert!(n > 2 && m > 0, "{first:?} took {n} steps, {second:?} {m}");
    eprintln!("{first:?} ({n} steps) beside {second:?} ({m} steps): {runs} runs");
}

/// Three sagas: the first two run `a` and `b` steps, then all three run
/// to their ends in `order` (each letting the others run while it waits).
fn three_way(
    sagas: [&mut Option<Saga<'_>>; 3],
    gates: [&Gate; 3],
    a: usize,
    b: usize,
    order: [usize; 3],
) -> [Option<Result<(), DomainError>>; 3] {
    let mut results = [None, None, None];
    let [x, y, z] = sagas;
    let sagas = [x, y, z];
    gates[0].allowed.set(a);
    results[0] = poll(sagas[0]);
    gates[1].allowed.set(b);
    results[1] = poll(sagas[1]);
    for gate in gates {
        gate.allowed.set(usize::MAX);
    }
    for _ in 0..10_000 {
        if sagas.iter().all(|saga| saga.is_none()) {
            break;
        }
        for &index in &order {
            if results[index].is_none() {
                results[index] = poll(sagas[index]);
            }
        }
    }
    assert!(
        sagas.iter().all(|saga| saga.is_none()),
        "a saga never ended"
    );
    results
}

/// Two collections taking turns while a push uploads the chunks they
/// delete: every split of the first two, every order of the rest.
#[test]
fn a_push_beside_two_collections_never_loses_a_named_chunk() {
    let bodies = Bodies::new();
    let n = most_steps(Work::Collect, (Work::Push, false), Work::Push, &bodies, 0);
    let mut runs = 0;
    for a in 0..=n {
        for b in 0..=n {
            for order in [
                [0, 1, 2],
                [0, 2, 1],
                [1, 0, 2],
                [1, 2, 0],
                [2, 0, 1],
                [2, 1, 0],
            ] {
                let what = format!("collections {a} and {b} of {n} steps, then {order:?}");
                let world = prepared(Work::Push, &bodies, false);
                let gates = [Gate::default(), Gate::default(), Gate::default()];
                let port = |gate| Port {
                    world: &world,
                    gate,
                    stale_before: START_MS,
                };
                let ports = [port(&gates[0]), port(&gates[1]), port(&gates[2])];
                let mut sagas = [
                    Some(start(Work::Collect, &ports[0], &[], 0)),
                    Some(start(Work::Collect, &ports[1], &[], 0)),
                    Some(start(Work::Push, &ports[2], &bodies.pushed, 0)),
                ];
                let [c1, c2, push] = &mut sagas;
                let results = three_way(
                    [c1, c2, push],
                    [&gates[0], &gates[1], &gates[2]],
                    a,
                    b,
                    order,
                );
                assert!(
                    results.iter().all(|r| !refused_as_busy(r)),
                    "{what}: refused: {results:?}"
                );
                assert!(
                    matches!(results[2], Some(Ok(()))),
                    "{what}: the push: {:?}",
                    results[2]
                );
                let current = check(&world, &what);
                assert_eq!(
                    current,
                    Some(sha256_hex(&bodies.pushed)),
                    "{what}: the pushed version"
                );
                runs += 1;
            }
        }
    }
    eprintln!("two collections ({n} steps) beside a push: {runs} runs");
}

#[test]
fn a_push_beside_a_collection_never_loses_a_named_chunk() {
    every_interleaving(Work::Push, Work::Collect, 0, false);
}

#[test]
fn a_push_beside_a_listing_sweep_never_loses_a_named_chunk() {
    every_interleaving(Work::Push, Work::Sweep, 0, false);
}

#[test]
fn a_whole_file_put_beside_a_collection_never_loses_a_named_chunk() {
    every_interleaving(Work::WholePut, Work::Collect, 0, false);
}

#[test]
fn a_whole_file_put_beside_a_listing_sweep_never_loses_a_named_chunk() {
    every_interleaving(Work::WholePut, Work::Sweep, 0, false);
}

#[test]
fn two_collections_at_once_never_lose_a_named_chunk() {
    every_interleaving(Work::Collect, Work::Collect, 0, false);
}

#[test]
fn two_pushes_of_the_same_file_at_once_both_land_whole() {
    every_interleaving(Work::Push, Work::Push, 0, true);
}

#[test]
fn a_push_beside_a_delete_never_leaves_a_name_without_its_chunk() {
    every_interleaving(Work::Push, Work::Delete, 0, false);
}

#[test]
fn a_reader_is_never_cut_by_the_collection_of_the_version_it_reads() {
    every_interleaving(Work::Read, Work::PushAndCollect, 60_000, false);
}
