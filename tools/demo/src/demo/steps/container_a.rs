//! Container A: it boots, registers its agents, the Mayor chats, A saves a
//! checkpoint and every kilo.db (step 1); then SIGTERM: eviction, a last
//! flush, and A is gone (step 2).

use super::{Demo, MAYOR_SESSION, text_at, u64_at};
use crate::demo::{
    chat::{self, Turn},
    kilo_db,
    report::{bytes, ms, sha},
};
use serde_json::{Value, json};
use stasis_client::{
    snapshot::{self, PushOptions},
    town,
};
use std::time::Instant;

/// Events per append, as a container batches what its SDK streams.
const BATCH: usize = 16;

impl Demo {
    /// Step 1.
    pub(super) fn container_a_boots_and_works(&mut self) -> anyhow::Result<()> {
        self.report.step(
            1,
            "Container A boots, registers its agents, the Mayor chats, A saves its state",
        );
        let started = Instant::now();
        let beat = town::heartbeat(&self.client, &self.town, &self.container_a, None)?;
        self.report
            .equal("A's first heartbeat: draining", beat.draining, false)?;
        self.report.equal(
            "A's first heartbeat: pending dispatches",
            beat.pending_dispatches.len(),
            0,
        )?;
        self.report.ok(format_args!(
            "heartbeat from container A ({}): draining=false, nothing pending  {}",
            self.container_a,
            ms(started.elapsed())
        ));
        self.register_agents()?;
        self.put_registry()?;
        self.mayor_chats()?;
        self.polecats_work()?;
        self.save_checkpoint()?;
        self.report
            .line("A pushes each kilo.db (stasis-client: SQLite online backup, sha256, upload):");
        self.push_all()
    }

    fn register_agents(&mut self) -> anyhow::Result<()> {
        let mut said = Vec::new();
        for member in &self.members {
            let body = json!({"role": member.role, "metadata": {"model": "claude-sonnet-4"}});
            let answer = self.http.put(&member.agent.path(""), &body)?;
            self.report.that(matches!(answer.status, 200 | 201), || {
                format!(
                    "registering {}: expected 200 or 201, got {}: {}",
                    member.agent_id, answer.status, answer.body
                )
            })?;
            self.report.equal(
                &format!("{}'s record: role", member.agent_id),
                text_at(&answer.body, "/role"),
                member.role,
            )?;
            said.push(format!(
                "{} as {} in {} ({})",
                member.agent_id, member.role, member.rig_id, answer.status
            ));
        }
        self.report
            .ok(format_args!("agents registered: {}", said.join(", ")));
        Ok(())
    }

    fn put_registry(&mut self) -> anyhow::Result<()> {
        let agents: Vec<Value> = self.members.iter().map(|m| m.registry_entry()).collect();
        let body = json!({"container_id": self.container_a, "agents": agents});
        let stored = self
            .http
            .put(&self.town_path("/container-registry"), &body)?
            .expect(200)?;
        self.report.equal(
            "the stored registry's container",
            text_at(&stored, "/container_id"),
            self.container_a.as_str(),
        )?;
        self.report.equal(
            "the stored registry's agents",
            stored.get("agents"),
            Some(&Value::Array(agents)),
        )?;
        let listed: Vec<String> = self
            .members
            .iter()
            .map(|m| format!("{} (session {}, port {})", m.agent_id, m.session, m.port))
            .collect();
        self.report.ok(format_args!(
            "registry: container A runs {}",
            listed.join(", ")
        ));
        Ok(())
    }

    /// The Mayor's events, appended in stamped batches; one batch is sent
    /// twice, as a retry after a lost answer would.
    fn mayor_chats(&mut self) -> anyhow::Result<()> {
        let started = Instant::now();
        let producer = format!("{}.mayor", self.container_a);
        let path = self.mayor().agent.path("/events");
        let mut first_answer = Value::Null;
        let mut seqs = (0, 0);
        for (stamp, batch) in (0_u64..).zip(self.chat.events.chunks(BATCH)) {
            let body = json!({"events": batch, "producer_id": producer, "producer_seq": stamp});
            let answer = self.http.post(&path, &body)?.expect(200)?;
            let (first, last) = (
                u64_at(&answer, "/first_seq").unwrap_or(0),
                u64_at(&answer, "/last_seq").unwrap_or(0),
            );
            self.report.equal(
                &format!("batch {stamp}: duplicate"),
                answer.get("duplicate"),
                Some(&json!(false)),
            )?;
            self.report.equal(
                &format!("batch {stamp}: seqs appended"),
                last.checked_sub(first).map(|span| span + 1),
                Some(batch.len() as u64),
            )?;
            if stamp == 0 {
                seqs.0 = first;
                first_answer = answer;
            } else {
                self.report.equal(
                    &format!("batch {stamp}: first seq follows the last one"),
                    first,
                    seqs.1 + 1,
                )?;
            }
            seqs.1 = last;
        }
        let batches = self.chat.events.len().div_ceil(BATCH);
        self.report.ok(format_args!(
            "the Mayor chats: {} events in {batches} batches (producer {producer}), seqs {}..{}  {}",
            self.chat.events.len(),
            seqs.0,
            seqs.1,
            ms(started.elapsed())
        ));
        self.check_retry_appends_nothing(&path, &producer, &first_answer)?;
        self.members[0].last_seq = seqs.1;
        self.check_conversation_rebuilt()
    }

    /// Batch 0 sent again with its producer stamp: nothing appended, its original seqs.
    fn check_retry_appends_nothing(
        &mut self,
        path: &str,
        producer: &str,
        first_answer: &Value,
    ) -> anyhow::Result<()> {
        let first_batch = self.chat.events.get(..BATCH).unwrap_or_default();
        let body = json!({"events": first_batch, "producer_id": producer, "producer_seq": 0});
        let mut retry = self.http.post(path, &body)?.expect(200)?;
        self.report.equal(
            "a retried batch: duplicate",
            retry.get("duplicate"),
            Some(&json!(true)),
        )?;
        retry["duplicate"] = json!(false);
        self.report
            .equal("a retried batch: its original seqs", &retry, first_answer)?;
        self.report.ok(format_args!(
            "a retry of batch 0 appends nothing: duplicate=true, seqs {}..{} as before",
            u64_at(&retry, "/first_seq").unwrap_or(0),
            u64_at(&retry, "/last_seq").unwrap_or(0)
        ));
        Ok(())
    }

    /// The server's rebuild of the log gives back the turns that were sent.
    fn check_conversation_rebuilt(&mut self) -> anyhow::Result<()> {
        let path = self.mayor().agent.path(&format!(
            "/conversation?session_id={MAYOR_SESSION}&max_turns=1000"
        ));
        let conversation = self.http.get(&path)?;
        let rebuilt = turns_of(&conversation)?;
        self.report.equal(
            "the Mayor's conversation rebuilt by the server",
            &rebuilt,
            &self.chat.turns,
        )?;
        self.report.ok(format_args!(
            "the server rebuilds the same conversation from the log: {} turns, ~{} tokens",
            rebuilt.len(),
            u64_at(&conversation, "/token_estimate").unwrap_or(0)
        ));
        Ok(())
    }

    fn polecats_work(&mut self) -> anyhow::Result<()> {
        let producer_of = |id: &str| format!("{}.{id}", self.container_a);
        let mut said = Vec::new();
        for member in self.members.iter_mut().skip(1) {
            let work = chat::polecat_work(member.session, member.seed);
            let body = json!({"events": work.events, "producer_id": producer_of(member.agent_id), "producer_seq": 0});
            let answer = self
                .http
                .post(&member.agent.path("/events"), &body)?
                .expect(200)?;
            member.last_seq = u64_at(&answer, "/last_seq").unwrap_or(0);
            said.push(format!(
                "{} {} events (last seq {})",
                member.agent_id,
                work.events.len(),
                member.last_seq
            ));
        }
        self.report.ok(format_args!(
            "the polecats log their work: {}",
            said.join(", ")
        ));
        Ok(())
    }

    fn save_checkpoint(&mut self) -> anyhow::Result<()> {
        let path = self.mayor().agent.path("/checkpoint");
        let saved = self.http.put(&path, &self.checkpoint)?.expect(200)?;
        let stored = self.http.get(&path)?;
        self.report
            .equal("the checkpoint read back", &stored, &self.checkpoint)?;
        self.report.ok(format_args!(
            "the Mayor saves a checkpoint: {} bytes (convoy {}, {} beads)",
            u64_at(&saved, "/size").unwrap_or(0),
            text_at(&self.checkpoint, "/convoy"),
            self.checkpoint["beads"].as_object().map_or(0, |b| b.len())
        ));
        Ok(())
    }

    /// Pushes every agent's kilo.db, the Mayor first; after a first push,
    /// each replaces the one before only if it is still current (`If-Match`).
    fn push_all(&mut self) -> anyhow::Result<()> {
        for member in &mut self.members {
            let previous = member.pushed.last().cloned();
            let options = PushOptions {
                event_seq: Some(member.last_seq),
                if_match: previous
                    .as_ref()
                    .map(|p| p.etag.clone().unwrap_or_else(|| p.sha256.clone())),
                ..PushOptions::default()
            };
            let started = Instant::now();
            let receipt = snapshot::push(&self.client, &member.agent, &member.live_db, &options)?;
            let took = started.elapsed();
            let expected_version = previous.as_ref().map_or(receipt.version, |p| p.version + 1);
            self.report.equal(
                &format!("{}'s snapshot version", member.agent_id),
                receipt.version,
                expected_version,
            )?;
            self.report.equal(
                &format!("{}'s snapshot watermark", member.agent_id),
                receipt.event_watermark,
                Some(member.last_seq),
            )?;
            if receipt.size > stasis_domain::snapshot::MAX_INLINE_LIMIT {
                self.report.equal(
                    &format!("{}'s snapshot storage", member.agent_id),
                    receipt.storage.as_deref(),
                    Some("kv"),
                )?;
            }
            if let Some(previous) = &previous {
                self.report.that(previous.sha256 != receipt.sha256, || {
                    format!(
                        "{}'s flush stored the same bytes as before",
                        member.agent_id
                    )
                })?;
            }
            let condition = previous
                .as_ref()
                .map(|p| format!("  (If-Match v{})", p.version))
                .unwrap_or_default();
            self.report.ok(format_args!(
                "{:<10} v{}  {:>8}  sha256 {}  {:<6}  watermark {:<4} {}{condition}",
                member.agent_id,
                receipt.version,
                bytes(receipt.size),
                sha(&receipt.sha256),
                receipt.storage.as_deref().unwrap_or("?"),
                member.last_seq,
                ms(took),
            ));
            member.pushed.push(receipt);
        }
        Ok(())
    }

    /// Step 2.
    pub(super) fn container_a_is_evicted_and_flushes(&mut self) -> anyhow::Result<()> {
        self.report.step(
            2,
            "Container A gets SIGTERM: eviction, a last flush, then A dies",
        );
        let body = json!({"container_id": self.container_a, "reason": "SIGTERM"});
        let evicted = self
            .http
            .post(&self.town_path("/container-eviction"), &body)?
            .expect(202)?;
        self.report.equal(
            "eviction: draining",
            evicted.get("draining"),
            Some(&json!(true)),
        )?;
        self.report.equal(
            "eviction: evicting container",
            text_at(&evicted, "/evicting_container_id"),
            self.container_a.as_str(),
        )?;
        self.report.equal(
            "eviction: already draining",
            evicted.get("already_draining"),
            Some(&json!(false)),
        )?;
        self.report.ok(
            "POST container-eviction → 202: draining=true, evicting container A, no dispatch until a new container",
        );
        let mut said = Vec::new();
        for member in &self.members {
            let messages = member.late_messages;
            let grown = kilo_db::keep_working(&member.live_db, member.seed, messages)?;
            said.push(format!(
                "{} +{messages} messages ({})",
                member.agent_id,
                bytes(grown.size)
            ));
        }
        self.report.line(format_args!(
            "since the first push the agents kept writing: {}",
            said.join(", ")
        ));
        self.report
            .line("A flushes each kilo.db, If-Match the version it pushed before:");
        let started = Instant::now();
        self.push_all()?;
        for member in &mut self.members {
            member.live_digest = kilo_db::content_digest(&member.live_db)?;
        }
        self.report.line(format_args!(
            "flush done in {}; container A exits and its disk goes with it",
            ms(started.elapsed())
        ));
        Ok(())
    }
}

/// The turns of a conversation (or of a dispatch's `prior_conversation`);
/// an unfinished turn is an error, since every message sent was completed.
pub(super) fn turns_of(conversation: &Value) -> anyhow::Result<Vec<Turn>> {
    let Some(turns) = conversation.get("turns").and_then(Value::as_array) else {
        anyhow::bail!("a conversation without a turns array: {conversation}");
    };
    turns
        .iter()
        .map(|turn| {
            if turn.get("unfinished") == Some(&json!(true)) {
                anyhow::bail!("a turn is marked unfinished: {turn}");
            }
            Ok(Turn {
                role: text_at(turn, "/role").to_owned(),
                content: text_at(turn, "/content").to_owned(),
            })
        })
        .collect()
}
