//! Container B boots (the spec's step 4): its heartbeat ends the drain and
//! brings the registry and the Mayor's dispatch; it hydrates every kilo.db,
//! and each must be byte-identical to what A flushed.

use super::{Demo, Outcome, container_a::turns_of, short_path, text_at, u64_at};
use crate::demo::{
    chat::{GAP_MESSAGE, Turn},
    kilo_db,
    report::{bytes, ms, sha},
};
use serde_json::{Value, json};
use stasis_client::{
    boot::{self, AgentOutcome, BootOptions, Hydration, kilo_db_path},
    snapshot::{PulledSnapshot, hash_file},
    town,
};
use std::time::{Duration, Instant};

const OPEN: &str = "<prior-conversation>";
const CLOSE: &str = "</prior-conversation>";

impl Demo {
    /// The spec's step 4.
    pub(super) fn container_b_boots(&mut self) -> anyhow::Result<Outcome> {
        self.report.step(
            5,
            "Container B boots: the drain ends, B hydrates every kilo.db and gets the Mayor's dispatch",
        );
        let options = BootOptions {
            container_id: self.container_b.clone(),
            root: self.root.join("container-b"),
            progress: false,
            chunk_cache: None,
        };
        let started = Instant::now();
        let mut ready_at: Vec<Duration> = Vec::new();
        let booted = boot::boot(&self.client, &self.town, &options, &mut |_| {
            ready_at.push(started.elapsed());
        })?;
        let recovery = started.elapsed();
        self.report
            .equal("B's heartbeat: draining", booted.draining, false)?;
        self.report
            .equal("B's heartbeat: cleared_drain", booted.cleared_drain, true)?;
        self.report.ok(format_args!(
            "heartbeat from container B ({}): draining=false, cleared_drain=true",
            self.container_b
        ));
        self.check_registry_received(&booted.agents)?;
        self.report.line(format_args!(
            "B hydrates each agent (stasis-client boot) into {}:",
            short_path(&kilo_db_path(&options.root, "{agent}"), &self.root)
        ));
        let mut hydrated_bytes = 0;
        for (outcome, at) in booted.agents.iter().zip(&ready_at) {
            hydrated_bytes += self.check_hydrated(outcome, &options, *at)?;
        }
        self.check_mayor_dispatch(&booted.pending_dispatches)?;
        self.report.line(format_args!(
            "recovery: B's first heartbeat → {} kilo.dbs hydrated + the Mayor's dispatch in hand: {}",
            booted.agents.len(),
            ms(recovery)
        ));
        self.check_town_after_b()?;
        Ok(Outcome {
            recovery,
            hydrated_bytes,
            hydrated_agents: booted.agents.len(),
        })
    }

    /// B's heartbeat carried A's registry: the same agents, sessions, ports.
    fn check_registry_received(
        &mut self,
        agents: &[AgentOutcome<Hydration>],
    ) -> anyhow::Result<()> {
        let received: Vec<_> = agents
            .iter()
            .map(|a| {
                let agent = &a.agent;
                let port = agent.port.map(u64::from);
                let entry = (
                    agent.agent_id.as_str(),
                    agent.rig_id.as_str(),
                    agent.role.as_str(),
                );
                (entry, agent.session_id.as_deref(), port)
            })
            .collect();
        let expected: Vec<_> = self
            .members
            .iter()
            .map(|m| {
                let entry = (m.agent_id, m.rig_id, m.role);
                (entry, Some(m.session), Some(u64::from(m.port)))
            })
            .collect();
        self.report
            .equal("the registry B received", &received, &expected)?;
        let registry = self.http.get(&self.town_path("/container-registry"))?;
        self.report.equal(
            "the registry's container",
            text_at(&registry, "/container_id"),
            self.container_a.as_str(),
        )?;
        self.report.ok(format_args!(
            "B receives A's registry: {} agents with their roles, sessions and ports",
            received.len()
        ));
        Ok(())
    }

    /// One agent's kilo.db in B: in its place, the bytes A flushed, sound,
    /// and holding the rows A's own kilo.db held. Answers its size.
    fn check_hydrated(
        &mut self,
        outcome: &AgentOutcome<Hydration>,
        options: &BootOptions,
        ready_at: Duration,
    ) -> anyhow::Result<u64> {
        let id = outcome.agent.agent_id.as_str();
        let Some(member) = self.members.iter().find(|m| m.agent_id == id) else {
            anyhow::bail!("B hydrated {id}, which A never registered");
        };
        let pulled: &PulledSnapshot = match &outcome.result {
            Hydration::Pulled(pulled) => pulled,
            Hydration::NoSnapshot => anyhow::bail!("{id}: the server has no snapshot"),
            Hydration::Failed(err) => anyhow::bail!("{id}: hydration failed: {err}"),
        };
        let Some(flushed) = member.pushed.last() else {
            anyhow::bail!("{id}: A never pushed a snapshot");
        };
        self.report.equal(
            &format!("{id}'s kilo.db path"),
            &outcome.path,
            &kilo_db_path(&options.root, id),
        )?;
        self.report.equal(
            &format!("{id}'s hydrated version"),
            pulled.version,
            Some(flushed.version),
        )?;
        let (on_disk, size) = hash_file(&outcome.path)?;
        self.report.equal(
            &format!("{id}'s kilo.db in B, sha256 of the file on disk vs A's flush"),
            (on_disk.as_str(), size),
            (flushed.sha256.as_str(), flushed.size),
        )?;
        let integrity = kilo_db::integrity_check(&outcome.path)?;
        self.report.equal(
            &format!("{id}: PRAGMA integrity_check"),
            integrity.as_str(),
            "ok",
        )?;
        let digest = kilo_db::content_digest(&outcome.path)?;
        self.report.equal(
            &format!("{id}: rows of B's kilo.db vs A's live kilo.db"),
            &digest,
            &member.live_digest,
        )?;
        self.report.ok(format_args!(
            "{id:<10} v{}  {:>8}  sha256 {} = A's flush, integrity ok, rows = A's  ready at +{}",
            flushed.version,
            bytes(size),
            sha(&on_disk),
            ms(ready_at)
        ));
        Ok(size)
    }

    /// The one dispatch B gets: the Mayor's, with its checkpoint, its
    /// conversation including the gap message, and the snapshot A flushed.
    fn check_mayor_dispatch(&mut self, pending: &[Value]) -> anyhow::Result<()> {
        self.report
            .equal("dispatches released to B", pending.len(), 1)?;
        let dispatch = &pending[0];
        for (field, expected) in [("agent_id", "mayor"), ("rig_id", "hq"), ("role", "mayor")] {
            self.report.equal(
                &format!("the dispatch's {field}"),
                text_at(dispatch, &format!("/{field}")),
                expected,
            )?;
        }
        self.report.equal(
            "the dispatch's checkpoint",
            dispatch.get("checkpoint"),
            Some(&self.checkpoint),
        )?;
        self.report.ok(format_args!(
            "one dispatch, the Mayor's (rig hq), carrying the checkpoint A saved (convoy {})",
            text_at(dispatch, "/checkpoint/convoy")
        ));
        self.check_prior_conversation(dispatch)?;
        self.check_prompt(text_at(dispatch, "/prompt"))?;
        self.check_dispatch_snapshot(dispatch)
    }

    fn check_prior_conversation(&mut self, dispatch: &Value) -> anyhow::Result<()> {
        let prior = dispatch.get("prior_conversation").unwrap_or(&Value::Null);
        let turns = turns_of(prior)?;
        let mut expected = self.chat.turns.clone();
        expected.push(Turn {
            role: "user".into(),
            content: GAP_MESSAGE.into(),
        });
        // The server keeps the newest turns within its budget, whole.
        let kept = expected.len().saturating_sub(turns.len());
        self.report.equal(
            "the dispatch's prior conversation (the newest turns, the gap message last)",
            turns.as_slice(),
            expected.get(kept..).unwrap_or_default(),
        )?;
        self.report.equal(
            "the dispatch's omitted_turns",
            u64_at(prior, "/omitted_turns"),
            Some(kept as u64),
        )?;
        self.report.ok(format_args!(
            "prior conversation: {} turns ({kept} omitted, ~{} tokens), the gap message last",
            turns.len(),
            u64_at(prior, "/token_estimate").unwrap_or(0)
        ));
        Ok(())
    }

    /// `<prior-conversation>…</prior-conversation>`, then the newest user
    /// text: the gap message, outside the wrapper.
    fn check_prompt(&mut self, prompt: &str) -> anyhow::Result<()> {
        let (open, close) = (prompt.find(OPEN), prompt.find(CLOSE));
        self.report.that(
            prompt.matches(OPEN).count() == 1 && prompt.matches(CLOSE).count() == 1,
            || format!("the prompt should hold one {OPEN} and one {CLOSE}: {prompt:?}"),
        )?;
        let (Some(open), Some(close)) = (open, close) else {
            anyhow::bail!("the prompt has no {OPEN} wrapper: {prompt:?}");
        };
        let inside = prompt.get(open + OPEN.len()..close).unwrap_or_default();
        let after = prompt.get(close + CLOSE.len()..).unwrap_or_default();
        let last_answer = self
            .chat
            .turns
            .last()
            .map(|t| t.content.as_str())
            .unwrap_or_default();
        self.report.that(inside.contains(last_answer), || {
            format!("the wrapper should hold the Mayor's last answer {last_answer:?}")
        })?;
        self.report
            .equal("the prompt after the wrapper", after.trim(), GAP_MESSAGE)?;
        self.report.ok(format_args!(
            "prompt: {} chars, {OPEN}…{CLOSE} then {:?}",
            prompt.chars().count(),
            after.trim()
        ));
        Ok(())
    }

    fn check_dispatch_snapshot(&mut self, dispatch: &Value) -> anyhow::Result<()> {
        let Some(flushed) = self.mayor().pushed.last().cloned() else {
            anyhow::bail!("the Mayor never pushed a snapshot");
        };
        let snapshot = dispatch.get("snapshot").unwrap_or(&Value::Null);
        self.report.equal(
            "the dispatch's snapshot (version, sha256, size, watermark)",
            (
                u64_at(snapshot, "/version"),
                text_at(snapshot, "/sha256"),
                u64_at(snapshot, "/size"),
                u64_at(snapshot, "/event_watermark"),
            ),
            (
                Some(flushed.version),
                flushed.sha256.as_str(),
                Some(flushed.size),
                flushed.event_watermark,
            ),
        )?;
        self.report.equal(
            "the dispatch's event_watermark (the gap message's seq)",
            u64_at(dispatch, "/event_watermark"),
            Some(self.gap_seq),
        )?;
        self.report.ok(format_args!(
            "snapshot to hydrate: v{} sha256 {} (A's flush, watermark {}); log up to seq {}",
            flushed.version,
            sha(&flushed.sha256),
            flushed.event_watermark.unwrap_or(0),
            self.gap_seq
        ));
        Ok(())
    }

    /// B is the town's container now, the dispatch was released once, and
    /// the town's log tells the story in order.
    fn check_town_after_b(&mut self) -> anyhow::Result<()> {
        let again = town::heartbeat(&self.client, &self.town, &self.container_b, None)?;
        self.report.equal(
            "B's second heartbeat: pending dispatches",
            again.pending_dispatches.len(),
            0,
        )?;
        let state = self.http.get(&self.town_path(""))?;
        self.report.equal(
            "the town's draining flag",
            state.get("draining"),
            Some(&json!(false)),
        )?;
        self.report.equal(
            "the town's current container",
            text_at(&state, "/current_container_id"),
            self.container_b.as_str(),
        )?;
        self.report.ok(
            "GET town: draining=false, current container B; a second heartbeat releases nothing more",
        );
        let log = self
            .http
            .get(&self.town_path("/events?after=0&limit=1000"))?;
        let types: Vec<&str> = log
            .get("events")
            .and_then(Value::as_array)
            .map(|events| events.iter().map(|e| text_at(e, "/type")).collect())
            .unwrap_or_default();
        let story = [
            "registry_updated",
            "container_eviction",
            "dispatch_deferred",
            "container_ready",
        ];
        let mut rest = types.iter();
        let in_order = story.iter().all(|kind| rest.any(|t| t == kind));
        self.report.that(in_order, || {
            format!("the town log should hold {story:?} in that order: {types:?}")
        })?;
        self.report
            .ok(format_args!("town log: {}", types.join(" → ")));
        Ok(())
    }
}
