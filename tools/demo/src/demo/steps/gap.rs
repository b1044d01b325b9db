//! While no container runs: the user writes to the Mayor (step 3), and the
//! dying container A sends one more heartbeat (the spec's step 5, which only
//! means something before B's first heartbeat).

use super::{Demo, text_at, u64_at};
use crate::demo::{chat::GAP_MESSAGE, report::ms};
use serde_json::json;
use stasis_client::town;
use std::time::Instant;

impl Demo {
    /// Step 3.
    pub(super) fn user_writes_during_the_gap(&mut self) -> anyhow::Result<()> {
        self.report
            .step(3, "The user messages the Mayor while no container runs");
        let started = Instant::now();
        let answer = self
            .http
            .post(
                &self.town_path("/mayor/message"),
                &json!({"text": GAP_MESSAGE}),
            )?
            .expect(202)?;
        self.report.equal(
            "the gap message's answer",
            &answer,
            &json!({"action": "deferred"}),
        )?;
        self.report.ok(format_args!(
            "POST /mayor/message {GAP_MESSAGE:?} → 202 {answer}  {}",
            ms(started.elapsed())
        ));
        let record = self.http.get(&self.mayor().agent.path(""))?;
        let last_seq = u64_at(&record, "/last_seq").unwrap_or(0);
        self.report.equal(
            "the Mayor's last seq after the gap message",
            last_seq,
            self.mayor().last_seq + 1,
        )?;
        let conversation = self
            .http
            .get(&self.mayor().agent.path("/conversation?max_turns=1"))?;
        self.report.equal(
            "the newest turn of the Mayor's conversation",
            (
                text_at(&conversation, "/turns/0/role"),
                text_at(&conversation, "/turns/0/content"),
            ),
            ("user", GAP_MESSAGE),
        )?;
        self.members[0].last_seq = last_seq;
        self.gap_seq = last_seq;
        self.report.ok(format_args!(
            "persisted: the Mayor's log holds it as a user turn at seq {last_seq}; its dispatch waits for a new container"
        ));
        Ok(())
    }

    /// The spec's step 5, run before B boots.
    pub(super) fn late_heartbeat_from_a(&mut self) -> anyhow::Result<()> {
        self.report.step(
            4,
            "A late heartbeat from dying container A (spec step 5: it must not end the drain)",
        );
        let started = Instant::now();
        let beat = town::heartbeat(&self.client, &self.town, &self.container_a, None)?;
        self.report
            .equal("A's late heartbeat: draining", beat.draining, true)?;
        self.report.equal(
            "A's late heartbeat: cleared_drain",
            beat.cleared_drain,
            false,
        )?;
        self.report.equal(
            "A's late heartbeat: pending dispatches",
            beat.pending_dispatches.len(),
            0,
        )?;
        let state = self.http.get(&self.town_path(""))?;
        self.report.equal(
            "the town's draining flag",
            state.get("draining"),
            Some(&json!(true)),
        )?;
        self.report.equal(
            "the town's evicting container",
            text_at(&state, "/evicting_container_id"),
            self.container_a.as_str(),
        )?;
        self.report.ok(format_args!(
            "heartbeat from A → draining=true, cleared_drain=false, no dispatch released  {}",
            ms(started.elapsed())
        ));
        self.report
            .ok("GET town: still draining, evicting container A");
        Ok(())
    }
}
