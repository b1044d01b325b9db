//! What the loop checks on each tick while a runtime lives: the fence, the turn deadline, the
//! registry entry, and the ready hook once the runtime serves.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;

use super::super::{ReadyRuntime, millis, registry};
use super::{Loop, Run, spawn};
use crate::boot::kilo_db_path;
use crate::error::{Error, Result};
use crate::ids::town_path;
use crate::town::{RegisteredAgent, TownState};

impl Loop<'_> {
    /// The periodic checks: fencing, the turn deadline, the registry, the ready hook.
    pub(super) fn tick(&mut self, run: &mut Run) -> Result<()> {
        if self.last_fence_check.elapsed() >= self.options.fence_check {
            self.last_fence_check = Instant::now();
            self.check_fence()?;
        }
        if let Some(deadline) = self.options.turn_deadline {
            for (session, busy_for) in run.status.take_overdue(deadline, Instant::now()) {
                let aborted = run.api.abort(&session);
                let data = json!({ "session_id": session, "busy_ms": millis(busy_for),
                                   "deadline_ms": millis(deadline), "aborted": aborted.is_ok(),
                                   "error": aborted.err().map(|e| e.to_string()) });
                self.journal
                    .record("stasis.turn.aborted", Some(&session), data)?;
            }
        }
        if let Some(session) = run.status.last_session() {
            self.session = Some(session);
        }
        self.update_registry(run)?;
        if !run.ready_called && run.stop.is_following() && run.status.is_connected() {
            run.ready_called = true;
            self.call_on_ready(run)?;
        }
        Ok(())
    }

    pub(super) fn check_fence(&self) -> Result<()> {
        let town = self.options.agent.town();
        let deadline = Instant::now() + Duration::from_secs(10);
        let state: TownState = self.client.get_json(&town_path(town)?, Some(deadline))?;
        match state.current_container_id {
            Some(current) if !current.is_empty() && current != self.options.container_id => {
                Err(Error::Superseded {
                    ours: self.options.container_id.clone(),
                    current,
                })
            }
            _ => Ok(()),
        }
    }

    pub(super) fn update_registry(&mut self, run: &mut Run) -> Result<()> {
        let now = (self.session.clone(), run.runtime.port());
        if self.registered.as_ref() == Some(&now) {
            return Ok(());
        }
        let entry = RegisteredAgent {
            agent_id: self.options.agent.agent().to_owned(),
            rig_id: self.options.agent.rig().to_owned(),
            role: self.options.role.clone(),
            session_id: now.0.clone(),
            port: now.1,
        };
        let town = self.options.agent.town();
        match registry::record(
            self.client,
            town,
            &self.options.container_id,
            &self.options.root,
            &entry,
        ) {
            Ok(()) => {
                (self.log)(&format!(
                    "registry: session {:?}, port {:?}",
                    entry.session_id, entry.port
                ));
                self.registered = Some(now);
                Ok(())
            }
            Err(e) if e.is_fenced() => Err(e),
            Err(e) => {
                (self.log)(&format!("could not record the agent in the registry: {e}"));
                Ok(())
            }
        }
    }

    pub(super) fn call_on_ready(&self, run: &Run) -> Result<()> {
        let options = &self.options;
        let ready = ReadyRuntime {
            agent: options.agent.clone(),
            role: options.role.clone(),
            container_id: options.container_id.clone(),
            url: run.runtime.url.clone(),
            pid: run.runtime.pid,
            attempt: run.id,
            db: kilo_db_path(&options.root, options.agent.agent()),
            dispatch: options.dispatch.clone(),
            client: self.client.clone(),
            alive: Arc::clone(&run.alive),
            log: Arc::clone(&self.log),
        };
        let hook = Arc::clone(&self.on_ready);
        spawn("on-ready", move || {
            if let Err(e) = hook(&ready) {
                (ready.log)(&format!("the resume step failed: {e}"));
            }
        })
    }
}
