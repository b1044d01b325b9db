//! After the fuzz, everything the fuzz stored must still read back: every
//! read endpoint answers for every fuzzed agent and town, an export
//! imports again, and the live tail starts. This is the class of bug where
//! accepted input poisons a later read, export or dispatch.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::Duration;

use super::oracle::excerpt;
use super::report::Report;
use super::state::panic_text;
use super::world::World;
use crate::town::{Agent, escape};
use crate::{Reply, Value, call, json, sse};

/// Runs every read on `world`, recording each and any that fails.
pub fn check(world: &World, report: &mut Report) {
    let mut reads = Reads {
        report,
        town: world.town.id.clone(),
    };
    reads.guarded("the town", |r| r.town(world));
    for (i, agent) in world.agents.iter().enumerate() {
        reads.guarded(&agent.path(""), |r| r.agent(agent, i));
    }
}

struct Reads<'a> {
    report: &'a mut Report,
    town: String,
}

impl Reads<'_> {
    /// Runs `reads`, turning a panic (a transport failure, a body that is
    /// not JSON) into a failure naming `what`.
    fn guarded(&mut self, what: &str, reads: impl FnOnce(&mut Self)) {
        if let Err(panic) = catch_unwind(AssertUnwindSafe(|| reads(self))) {
            self.report.fail(format!(
                "after the fuzz, reading {what} broke: {}",
                panic_text(&panic)
            ));
        }
    }

    /// Sends `method path` (with a JSON body unless `Value::Null`) and
    /// records a failure unless the status is one of `ok`.
    fn expect(&mut self, method: &str, path: &str, body: &Value, ok: &[u16]) -> Reply {
        let mut request = call(method, path);
        if !body.is_null() {
            request = request.json(body);
        }
        let reply = request.send();
        self.report.reads_after += 1;
        if !ok.contains(&reply.status) {
            self.report.fail(format!(
                "after the fuzz, {method} {path} answered {} (wanted {ok:?}): {}",
                reply.status,
                excerpt(&reply.body)
            ));
        }
        reply
    }

    fn town(&mut self, world: &World) {
        let town = world.town.path("");
        let container = format!("after-fuzz-{}", self.town);
        self.expect(
            "POST",
            &format!("{town}/heartbeat"),
            &json!({"container_id": container}),
            &[200],
        );
        let state = self.expect("GET", &town, &Value::Null, &[200]).json();
        if state["mayor"].is_null() {
            world.agents[0].register("mayor");
        }
        self.expect(
            "GET",
            &format!("{town}/container-registry"),
            &Value::Null,
            &[200],
        );
        world.town.events();
        self.expect("GET", &format!("{town}/agents"), &Value::Null, &[200]);
        let message = json!({"text": "after the fuzz"});
        self.expect(
            "POST",
            &format!("{town}/mayor/message"),
            &message,
            &[200, 202],
        );
    }

    fn agent(&mut self, agent: &Agent, index: usize) {
        if agent.record_reply().status == 404 {
            agent.register("polecat");
        }
        let path = |suffix: &str| agent.path(suffix);
        self.expect("GET", &path(""), &Value::Null, &[200]).json();
        agent.log.read_all(0, "");
        self.sessions(agent);
        self.expect("GET", &path("/conversation"), &Value::Null, &[200])
            .json();
        let wide = "/conversation?max_turns=1000&max_tokens=1000000";
        self.expect("GET", &path(wide), &Value::Null, &[200]).json();
        self.memory(agent);
        self.expect("GET", &path("/checkpoint"), &Value::Null, &[200, 404]);
        let snapshot = agent.snapshot_reply();
        self.report.reads_after += 1;
        self.snapshot_whole(agent, &snapshot);
        let dispatch = self.expect("POST", &path("/dispatch"), &json!({}), &[200]);
        dispatch.json();
        let export = self
            .expect("GET", &path("/export"), &Value::Null, &[200])
            .json();
        // A town of its own: the export may carry the Mayor's role.
        let copy = crate::town::Town::fresh(&format!("reimport-{index}")).agent("rig", "copy");
        self.expect("PUT", &copy.path("/import"), &export, &[200]);
        self.live_tail(agent);
    }

    fn sessions(&mut self, agent: &Agent) {
        let sessions = self
            .expect("GET", &agent.path("/sessions"), &Value::Null, &[200])
            .json();
        for session in sessions["sessions"].as_array().into_iter().flatten() {
            let id = session["session_id"].as_str().unwrap_or_default();
            let path = agent.path(&format!("/sessions/{}", escape(id)));
            self.expect("GET", &path, &Value::Null, &[200]).json();
        }
    }

    fn memory(&mut self, agent: &Agent) {
        let list = self.expect(
            "GET",
            &agent.path("/memory?limit=1000"),
            &Value::Null,
            &[200],
        );
        for entry in list.json()["entries"].as_array().into_iter().flatten() {
            let key = entry["key"].as_str().unwrap_or_default();
            let path = agent.path(&format!("/memory/{}", escape(key)));
            self.expect("GET", &path, &Value::Null, &[200]).json();
        }
    }

    fn snapshot_whole(&mut self, agent: &Agent, reply: &Reply) {
        let announced = reply.header("x-stasis-sha256").unwrap_or_default();
        let whole = match reply.status {
            200 => crate::snapshot::sha256_hex(&reply.body) == announced,
            404 => true,
            _ => false,
        };
        if !whole {
            self.report.fail(format!(
                "after the fuzz, {}'s snapshot answered {} ({} bytes, sha256 {announced:?})",
                agent.path(""),
                reply.status,
                reply.body.len()
            ));
        }
    }

    /// The live tail of an agent with events sends its first event.
    fn live_tail(&mut self, agent: &Agent) {
        let path = agent.path("/events?after=0");
        self.report.reads_after += 1;
        match sse::open(&path, &[]) {
            Ok(stream) if agent.log.read("limit=1")["events"] == json!([]) => drop(stream),
            Ok(stream) => {
                if stream.next_event(Duration::from_secs(10)).is_none() {
                    self.report.fail(format!(
                        "after the fuzz, the live tail of {path} sent nothing"
                    ));
                }
            }
            Err(reply) => self.report.fail(format!(
                "after the fuzz, the live tail of {path} answered {}: {}",
                reply.status,
                excerpt(&reply.body)
            )),
        }
    }
}
