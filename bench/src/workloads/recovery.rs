//! Recovery: the spec's scenario, timed where a user waits. Container A has
//! run a Mayor and two polecats (a 20 MB kilo.db each, the Mayor's
//! conversation, a checkpoint) and been evicted; the user messaged the Mayor
//! in the gap. Timed: from container B's first heartbeat to every agent's
//! kilo.db downloaded and verified on B's disk with the Mayor's dispatch in
//! hand: the steps of `stasis-client`'s `boot` (a heartbeat, then each
//! registered agent's snapshot pulled), the heartbeat timed apart.
//!
//! The town is set up once; each round then evicts the container that booted
//! last, sends a new gap message and boots a new container into an empty
//! folder, so every round downloads every snapshot.

use super::{Bounds, container_client};
use crate::{
    client::{Call, Conn, Endpoint},
    stats::Latency,
    workloads::{
        conversation,
        snapshot::{check_receipt, sha256_hex, sqlite_bytes},
    },
};
use anyhow::{Context, Result, bail};
use bytes::Bytes;
use hyper::Method;
use serde_json::{Value, json};
use stasis_client::{
    AgentRef, Client,
    boot::kilo_db_path,
    snapshot::{PullOptions, PullOutcome, pull},
    town::{Heartbeat, heartbeat},
};
use std::{
    path::{Path, PathBuf},
    sync::Arc,
    time::{Duration, Instant},
};

/// Bytes of each agent's kilo.db: 20 MB.
pub const SNAPSHOT_BYTES: usize = 20_000_000;
/// Events of the Mayor's conversation.
pub const MAYOR_EVENTS: usize = 300;
/// The agents: id and role.
const AGENTS: [(&str, &str); 3] = [
    ("mayor", "mayor"),
    ("polecat-1", "polecat"),
    ("polecat-2", "polecat"),
];
/// The Mayor's session in container A.
const SESSION: &str = "ses-mayor";

/// A town after container A: what B must get back.
#[derive(Debug, Clone)]
pub struct Town {
    /// Its id.
    pub town: String,
    /// Each agent's id and the sha256 of its kilo.db.
    pub digests: Vec<(&'static str, String)>,
    /// Bytes of each kilo.db.
    pub bytes: usize,
    /// The container that ran last (A, then each booted one).
    last_container: String,
}

/// Container A's life: registers the agents, heartbeats, publishes its
/// registry, streams the Mayor's conversation, saves a checkpoint and
/// pushes a kilo.db of `bytes` pseudo-random bytes per agent.
pub async fn prepare(endpoint: &Arc<Endpoint>, town: &str, bytes: usize) -> Result<Town> {
    let mut conn = Conn::open(endpoint).await?;
    let container = format!("{town}-a");
    let json =
        |method, path: String, body: Value| Call::json(method, path, body.to_string().into());
    let agent_path = |agent: &str| format!("/api/towns/{town}/rigs/r/agents/{agent}");
    for (agent, role) in AGENTS {
        conn.expect_ok(&json(
            Method::PUT,
            agent_path(agent),
            json!({ "role": role }),
        ))
        .await?;
    }
    conn.expect_ok(&json(
        Method::POST,
        format!("/api/towns/{town}/heartbeat"),
        json!({ "container_id": container }),
    ))
    .await?;
    let registered: Vec<Value> = AGENTS
        .iter()
        .zip(4096..)
        .map(|((agent, role), port)| {
            json!({
                "agent_id": agent,
                "rig_id": "r",
                "role": role,
                "session_id": format!("ses-{agent}"),
                "port": port,
            })
        })
        .collect();
    conn.expect_ok(&json(
        Method::PUT,
        format!("/api/towns/{town}/container-registry"),
        json!({ "container_id": container, "agents": registered }),
    ))
    .await?;
    drop(conn);
    let stream = conversation::stream(MAYOR_EVENTS, SESSION);
    conversation::fill(endpoint, &agent_path("mayor"), &stream, SESSION).await?;

    let mut conn = Conn::open(endpoint).await?;
    conn.expect_ok(&json(
        Method::PUT,
        format!("{}/checkpoint", agent_path("mayor")),
        json!({
            "step": "review polecat-2's branch",
            "open_beads": ["b-12", "b-19"],
            "notes": "merge after CI",
        }),
    ))
    .await?;
    let mut digests = Vec::new();
    let mut sizes = Vec::new();
    for (index, (agent, _)) in (0u64..).zip(AGENTS) {
        // A real database: the pull checks it with `PRAGMA quick_check`.
        let body = Bytes::from(sqlite_bytes(bytes, 100 + index)?);
        digests.push((agent, sha256_hex(&body)));
        sizes.push(body.len());
        let size = body.len();
        let put = Call::octets(
            Method::PUT,
            format!("{}/db-snapshot", agent_path(agent)),
            body,
        );
        check_receipt(&conn.expect_ok(&put).await?, size)?;
    }
    let bytes = sizes.iter().copied().max().unwrap_or(bytes);
    if sizes.iter().any(|&s| s != bytes) {
        bail!("the agents' databases differ in size: {sizes:?}");
    }
    Ok(Town {
        town: town.to_owned(),
        digests,
        bytes,
        last_container: container,
    })
}

/// What the recoveries measured.
#[derive(Debug, Clone, Copy)]
pub struct Recoveries {
    /// Agents hydrated per recovery.
    pub agents: usize,
    /// Bytes of each agent's kilo.db.
    pub bytes: usize,
    /// First heartbeat to every kilo.db verified on disk and the Mayor's
    /// dispatch in hand.
    pub recovery: Latency,
    /// The first heartbeat alone (its answer carries the dispatch).
    pub heartbeat: Latency,
    /// Turns of the prior conversation in the Mayor's dispatch (last
    /// round).
    pub turns: usize,
    /// Requests `stasis-client` retried over the whole workload.
    pub retries: u32,
}

/// Rounds of: the last container evicted, a message to the Mayor in the
/// gap (deferred), then a new container's boot into a fresh folder under
/// `root`, timed and checked.
pub async fn recoveries(
    endpoint: &Arc<Endpoint>,
    town: &mut Town,
    root: &Path,
    bounds: Bounds,
) -> Result<Recoveries> {
    let (client, retries) = container_client(endpoint)?;
    let mut conn = Conn::open(endpoint).await?;
    let deadline = Instant::now() + bounds.time;
    let (mut recovery, mut heartbeat) = (Vec::new(), Vec::new());
    let mut turns = 0;
    let mut round = 0u32;
    while (recovery.len() as u64) < bounds.count && Instant::now() < deadline {
        round += 1;
        let gap =
            format!("While you were away (round {round}): please re-run the release checklist.");
        evict_and_message(&mut conn, town, &gap).await?;
        let container = format!("{}-b{round}", town.town);
        let container_id = container.clone();
        let folder = root.join(format!("boot-{round}"));
        let (client, town_id, into) = (client.clone(), town.town.clone(), folder.clone());
        let booted =
            tokio::task::spawn_blocking(move || boot(&client, &town_id, &container_id, &into))
                .await
                .context("a boot panicked")??;
        turns = check(&booted, town, &gap)?;
        recovery.push(booted.took);
        heartbeat.push(booted.heartbeat);
        std::fs::remove_dir_all(&folder)?;
        town.last_container = container;
    }
    Ok(Recoveries {
        agents: AGENTS.len(),
        bytes: town.bytes,
        recovery: Latency::of(recovery).context("no recovery finished")?,
        heartbeat: Latency::of(heartbeat).context("no heartbeat finished")?,
        turns,
        retries: retries.load(std::sync::atomic::Ordering::Relaxed),
    })
}

/// The eviction of the last container and the user's message in the gap,
/// which must be deferred.
async fn evict_and_message(conn: &mut Conn, town: &Town, gap: &str) -> Result<()> {
    let eviction = json!({"container_id": town.last_container, "reason": "SIGTERM"});
    conn.expect_ok(&Call::json(
        Method::POST,
        format!("/api/towns/{}/container-eviction", town.town),
        eviction.to_string().into(),
    ))
    .await?;
    let answer = conn
        .expect_ok(&Call::json(
            Method::POST,
            format!("/api/towns/{}/mayor/message", town.town),
            json!({ "text": gap }).to_string().into(),
        ))
        .await?;
    let answer: Value = serde_json::from_slice(&answer)?;
    if answer.get("action").and_then(Value::as_str) != Some("deferred") {
        bail!("a message to the Mayor while draining was not deferred: {answer}");
    }
    Ok(())
}

/// Checks a boot got everything back; returns the turns of the Mayor's
/// prior conversation.
fn check(booted: &Booted, town: &Town, gap: &str) -> Result<usize> {
    let beat = &booted.beat;
    if !beat.cleared_drain || beat.draining {
        bail!("container B's heartbeat did not clear the drain");
    }
    if booted.pulled.len() != AGENTS.len() {
        bail!(
            "the registry listed {} agents, not {}",
            booted.pulled.len(),
            AGENTS.len()
        );
    }
    for (agent, path, outcome) in &booted.pulled {
        let digest = town
            .digests
            .iter()
            .find_map(|(id, digest)| (id == agent).then_some(digest))
            .with_context(|| format!("the registry lists {agent}, which A never ran"))?;
        match outcome {
            PullOutcome::Pulled(pulled) if pulled.sha256 == *digest && !pulled.unchanged => {
                let on_disk = std::fs::metadata(path)?.len();
                if on_disk != u64::try_from(town.bytes)? {
                    bail!(
                        "{agent}'s kilo.db has {on_disk} bytes on disk, not {}",
                        town.bytes
                    );
                }
            }
            PullOutcome::Pulled(pulled) => bail!(
                "{agent}'s kilo.db came back with sha256 {} (unchanged: {}), expected {digest}",
                pulled.sha256,
                pulled.unchanged
            ),
            PullOutcome::NoSnapshot => bail!("{agent} had no snapshot"),
        }
    }
    let mayor = beat
        .pending_dispatches
        .iter()
        .find(|d| d.get("agent_id").and_then(Value::as_str) == Some("mayor"))
        .context("the heartbeat brought no dispatch for the Mayor")?;
    if mayor.get("checkpoint").is_none_or(Value::is_null) {
        bail!("the Mayor's dispatch has no checkpoint");
    }
    let prompt = mayor
        .get("prompt")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if !prompt.contains(gap) {
        bail!("the Mayor's dispatch does not carry the message sent in the gap");
    }
    Ok(mayor["prior_conversation"]["turns"]
        .as_array()
        .map_or(0, Vec::len))
}

/// What a new container got back.
struct Booted {
    /// The first heartbeat's answer.
    beat: Heartbeat,
    /// Per registered agent, in registry order: its id, its kilo.db path
    /// and the pull.
    pulled: Vec<(String, PathBuf, PullOutcome)>,
    /// Heartbeat to the last kilo.db verified and in place.
    took: Duration,
    /// The heartbeat alone (its answer carries the dispatch).
    heartbeat: Duration,
}

/// `stasis-client`'s boot, step by step so that the heartbeat is timed
/// apart: the heartbeat, then each registered agent's snapshot pulled into
/// its kilo.db under `root` (streamed, sha256-verified, fsynced, renamed
/// into place), one after the other as `boot` does.
fn boot(client: &Client, town: &str, container: &str, root: &Path) -> Result<Booted> {
    let start = Instant::now();
    let beat = heartbeat(client, town, container, None)?;
    let heartbeat = start.elapsed();
    let registry = beat.registry.clone().unwrap_or_default();
    let mut pulled = Vec::new();
    for agent in registry.agents {
        let path = kilo_db_path(root, &agent.agent_id);
        let agent_ref = AgentRef::new(town, &agent.rig_id, &agent.agent_id)?;
        let outcome = pull(client, &agent_ref, &path, &PullOptions::default())?;
        pulled.push((agent.agent_id, path, outcome));
    }
    Ok(Booted {
        beat,
        pulled,
        took: start.elapsed(),
        heartbeat,
    })
}
