//! The supervisor's own events in the agent's log (`stasis.runtime.*`, `stasis.turn.aborted`,
//! `stasis.eviction.*`). While a sidecar runs they go through it ([`Injector`]): exactly once, in
//! order with the runtime's events, and under the watermark of the snapshot that follows. Between
//! two sidecars (a crash, a give-up, a start before its sidecar) they are posted directly, stamped
//! with a producer of their own so that a retried post is stored once.

use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::error::{Error, Result};
use crate::http::Client;
use crate::ids::AgentRef;
use crate::sidecar::{Injector, Log};

/// How long a direct post may retry.
const POST_BUDGET: Duration = Duration::from_secs(15);

/// Where the supervisor's events go.
pub(crate) struct Journal {
    client: Client,
    agent: AgentRef,
    producer: String,
    next_seq: Mutex<u64>,
    injector: Mutex<Option<Injector>>,
    log: Log,
}

impl Journal {
    /// A journal for `agent` whose direct posts are stamped by a producer unique to this process.
    pub(crate) fn new(client: Client, agent: AgentRef, container_id: &str, log: Log) -> Self {
        let producer = format!(
            "supervisor-{container_id}-{}-{}",
            std::process::id(),
            crate::sidecar::now_ms()
        );
        Journal {
            client,
            agent,
            producer,
            next_seq: Mutex::new(0),
            injector: Mutex::new(None),
            log,
        }
    }

    fn injector(&self) -> MutexGuard<'_, Option<Injector>> {
        self.injector.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Events go through `injector` from now on (`None`: directly).
    pub(crate) fn route_through(&self, injector: Option<Injector>) {
        *self.injector() = injector;
    }

    /// Records `{type: kind, session_id, data}` and logs it. A fenced container's post is an
    /// error (the caller stops); any other failure is logged, not fatal.
    pub(crate) fn record(&self, kind: &str, session: Option<&str>, data: Value) -> Result<()> {
        (self.log)(&format!("{kind} {data}"));
        let injected = self
            .injector()
            .as_ref()
            .is_some_and(|injector| injector.send(kind, session, &data));
        if injected {
            return Ok(());
        }
        match self.post(kind, session, data) {
            Err(e) if e.is_fenced() => Err(e),
            Err(e) => {
                (self.log)(&format!("could not record {kind} in the agent's log: {e}"));
                Ok(())
            }
            Ok(()) => Ok(()),
        }
    }

    fn post(&self, kind: &str, session: Option<&str>, data: Value) -> Result<()> {
        let seq = {
            let mut next = self.next_seq.lock().unwrap_or_else(|p| p.into_inner());
            let seq = *next;
            *next += 1;
            seq
        };
        let mut event = json!({ "type": kind, "data": data });
        if let (Some(session), Some(map)) = (session, event.as_object_mut()) {
            map.insert("session_id".into(), Value::String(session.to_owned()));
        }
        let body = json!({
            "events": [event],
            "producer_id": self.producer,
            "producer_seq": seq,
        });
        let deadline = Instant::now() + POST_BUDGET;
        self.client
            .post(&self.agent.path("/events"), &body, Some(deadline))
            .map(drop)
            .map_err(|e| match e {
                Error::GaveUp { last, .. } if last.is_fenced() => *last,
                other => other,
            })
    }
}
