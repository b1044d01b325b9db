//! stasis down for a while during a real kilo conversation: the host is SIGKILLed while turns
//! run and started again on the same data after the outage; then what kilo sent is counted
//! against what stasis stored.
//!
//! "Sent" is every event of kilo's own `GET /event` stream (a reader of its own, beside the
//! sidecar's) that the sidecar forwards: sync twins, `server.connected` and
//! `server.heartbeat` left out, repeated ids once. Each is keyed by its type and its
//! `properties` byte for byte (what the sidecar stores as the event's data, and stasis serves
//! back as received). "Stored" is the agent's log without the sidecar's own `stasis.*` events.

use super::container_a::ContainerA;
use super::local_host::LocalHost;
use super::stasis::Turn;
use super::{Stage, StoryOptions, checks, poll};
use crate::{FakeModel, KiloEvent, Reply, Script};
use anyhow::{Context, Result};
use serde::Deserialize;
use serde_json::value::RawValue;
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// How long stasis may take to store what it was sent.
const PATIENCE: Duration = Duration::from_secs(120);

/// How the outage goes.
#[derive(Debug, Clone)]
pub struct OutageOptions {
    /// The `stasis` host binary.
    pub host_bin: PathBuf,
    /// The `stasis-client` binary.
    pub client_bin: PathBuf,
    /// Another Kilo CLI than the default.
    pub kilo_bin: Option<PathBuf>,
    /// Turns before stasis is killed.
    pub before: Duration,
    /// How long stasis stays down.
    pub outage: Duration,
    /// Turns after it is back.
    pub after: Duration,
}

/// What was counted.
#[derive(Debug, Clone)]
pub struct OutageReport {
    /// Turns held, and those that started or ended while stasis was down.
    pub turns: usize,
    /// See `turns`.
    pub turns_in_outage: usize,
    /// Events kilo sent that the sidecar forwards.
    pub sent: usize,
    /// Of those, sent while stasis was down.
    pub sent_in_outage: usize,
    /// Events stasis stored (its own `stasis.*` ones left out).
    pub stored: usize,
    /// Stored more often than kilo sent them.
    pub duplicated: usize,
    /// Sent and never stored.
    pub lost: usize,
    /// Stored, never sent as such (message states a resync read back from kilo's API).
    pub resent_states: usize,
    /// The sidecar's `stasis.sidecar.*` events.
    pub sidecar_notes: Vec<String>,
    /// The stored events that kilo sent come in kilo's order.
    pub in_order: bool,
    /// From stasis's restart until it held every event kilo sent before the restart.
    pub backlog_stored_in: Duration,
    /// The rebuilt conversation, and kilo's own view at the end.
    pub rebuilt: Vec<Turn>,
    /// See `rebuilt`.
    pub kilo_turns: Vec<Turn>,
    /// The sidecar's summary after its SIGTERM.
    pub sidecar_summary: String,
}

/// Runs the outage against a host started here.
///
/// # Errors
///
/// When a step cannot be done.
pub fn run(options: &OutageOptions, narrate: &dyn Fn(&str)) -> Result<OutageReport> {
    let temp = tempfile::Builder::new()
        .prefix("stasis-outage-")
        .tempdir()?;
    let mut host = LocalHost::start(&options.host_bin, &temp.path().join("host-data"))?;
    let story = StoryOptions {
        url: host.url.clone(),
        secret: host.secret.clone(),
        client_bin: options.client_bin.clone(),
        kilo_bin: options.kilo_bin.clone(),
        work: None,
    };
    let reply = "Noted, and here is a reply long enough to stream for about a second or so.";
    let model = FakeModel::start(
        Script::new().otherwise(Reply::paced_text(reply, Duration::from_millis(70))),
    )?;
    let stage = Stage::new(&story, &model, narrate)?;
    let root = temp.path().join("tmp");
    std::fs::create_dir_all(&root)?;
    let a = ContainerA::boot(&stage, &root, &temp.path().join("sidecar.log"))?;
    stage.say(&format!(
        "stasis at {}, kilo and the sidecar up; turns begin",
        host.url
    ));
    let (turn_times, outage) = converse(&stage, &a, &mut host, options)?;
    let turns = turn_times.len();
    let turns_in_outage = turn_times
        .iter()
        .filter(|(start, end)| *end >= outage.down && *start <= outage.up)
        .count();
    wait_caught_up(&stage, &a, turns)?;
    let kilo_turns = checks::turns_of(&a.messages()?);
    let sent_events = a.sent_events();
    let sidecar_summary = a.stop(Duration::from_secs(60))?;
    let stored = stage.api.events_after(&stage.agent_path, 0)?;
    let rebuilt = stage.api.conversation(&stage.agent_path)?.turns;
    let counts = Counts::of(&sent_events, &stored, outage.sent_marks);
    Ok(OutageReport {
        turns,
        turns_in_outage,
        sent: counts.sent.len(),
        sent_in_outage: counts.sent_in_outage,
        stored: counts.stored.len(),
        duplicated: counts.surplus(),
        lost: counts.shortfall(),
        resent_states: counts.unsent(),
        sidecar_notes: stored
            .iter()
            .filter(|e| e.kind.starts_with("stasis."))
            .map(|e| format!("{} {}", e.kind, e.data.get()))
            .collect(),
        in_order: counts.in_order(),
        backlog_stored_in: outage.backlog_stored_in,
        rebuilt,
        kilo_turns,
        sidecar_summary,
    })
}

/// A turn's start and end.
type Window = (Instant, Instant);

/// What the outage thread saw.
struct Outage {
    down: Instant,
    up: Instant,
    /// How many events kilo's stream had sent when stasis went down, and came back.
    sent_marks: (usize, usize),
    /// From the restart until stasis held every event sent before it.
    backlog_stored_in: Duration,
}

/// Turns one after another for `before + outage + after`, while another thread kills stasis
/// after `before` and starts it again `outage` later. Answers each turn's (start, end) and
/// the outage.
fn converse(
    stage: &Stage<'_>,
    a: &ContainerA,
    host: &mut LocalHost,
    options: &OutageOptions,
) -> Result<(Vec<Window>, Outage)> {
    let started = Instant::now();
    let total = options.before + options.outage + options.after;
    let (api, agent_path) = (&stage.api, stage.agent_path.as_str());
    std::thread::scope(|scope| {
        let outage = scope.spawn(|| -> Result<Outage> {
            std::thread::sleep(options.before);
            host.kill();
            let (down, sent_before) = (Instant::now(), a.sent_count());
            std::thread::sleep(options.outage);
            let sent_during = a.sent_count();
            host.restart()
                .context("restarting stasis on the same data")?;
            let up = Instant::now();
            let backlog = forwardable(&a.sent_events()[..sent_during]).len();
            poll("stasis to store the backlog", PATIENCE, || {
                let stored = api.events_after(agent_path, 0)?;
                let stored = stored.iter().filter(|e| !e.kind.starts_with("stasis."));
                Ok((stored.count() >= backlog).then_some(()))
            })?;
            Ok(Outage {
                down,
                up,
                sent_marks: (sent_before, sent_during),
                backlog_stored_in: up.elapsed(),
            })
        });
        let mut times = Vec::new();
        while started.elapsed() < total {
            let start = Instant::now();
            a.turn(&format!("Turn {}: what next?", times.len() + 1))?;
            times.push((start, Instant::now()));
        }
        let outage = outage
            .join()
            .map_err(|_| anyhow::anyhow!("the outage thread panicked"))??;
        stage.say(&format!(
            "stasis was down for {:.1?}; {} turns held in {:.1?}",
            outage.up - outage.down,
            times.len(),
            started.elapsed()
        ));
        Ok((times, outage))
    })
}

/// Waits until stasis holds `turns` turn ends of the session.
fn wait_caught_up(stage: &Stage<'_>, a: &ContainerA, turns: usize) -> Result<()> {
    poll("stasis to hold every turn's end", PATIENCE, || {
        let events = stage.api.events_after(&stage.agent_path, 0)?;
        let ends = events
            .iter()
            .filter(|e| e.kind == "session.idle" && e.session_id.as_deref() == Some(&a.session))
            .count();
        Ok((ends >= turns).then_some(()))
    })
}

#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    id: Option<String>,
    #[serde(borrow, default)]
    properties: Option<&'a RawValue>,
}

/// An event by its type and data bytes.
type Key = (String, String);

/// Sent and stored events, keyed.
struct Counts {
    sent: Vec<Key>,
    sent_in_outage: usize,
    stored: Vec<Key>,
}

impl Counts {
    /// `outage`: the range of `sent` kilo sent while stasis was down.
    fn of(sent: &[KiloEvent], stored: &[super::StoredEvent], outage: (usize, usize)) -> Self {
        let keyed = forwardable(sent);
        let sent_in_outage = keyed
            .iter()
            .filter(|(index, _)| (outage.0..outage.1).contains(index))
            .count();
        let stored = stored
            .iter()
            .filter(|e| !e.kind.starts_with("stasis."))
            .map(|e| (e.kind.clone(), e.data.get().to_owned()))
            .collect();
        Self {
            sent: keyed.into_iter().map(|(_, key)| key).collect(),
            sent_in_outage,
            stored,
        }
    }

    fn tally(keys: &[Key]) -> HashMap<&Key, usize> {
        let mut tally = HashMap::new();
        for key in keys {
            *tally.entry(key).or_default() += 1;
        }
        tally
    }

    /// Stored more often than sent, summed over the keys kilo sent.
    fn surplus(&self) -> usize {
        let (sent, stored) = (Self::tally(&self.sent), Self::tally(&self.stored));
        sent.iter()
            .map(|(key, n)| stored.get(key).copied().unwrap_or(0).saturating_sub(*n))
            .sum()
    }

    /// Sent more often than stored.
    fn shortfall(&self) -> usize {
        let (sent, stored) = (Self::tally(&self.sent), Self::tally(&self.stored));
        sent.iter()
            .map(|(key, n)| n.saturating_sub(stored.get(key).copied().unwrap_or(0)))
            .sum()
    }

    /// Stored events kilo never sent as such.
    fn unsent(&self) -> usize {
        let sent = Self::tally(&self.sent);
        self.stored
            .iter()
            .filter(|key| !sent.contains_key(key))
            .count()
    }

    /// The stored events kilo sent, in stasis's order, are kilo's sequence.
    fn in_order(&self) -> bool {
        let sent: HashSet<&Key> = self.sent.iter().collect();
        let stored: Vec<&Key> = self.stored.iter().filter(|k| sent.contains(k)).collect();
        stored == self.sent.iter().collect::<Vec<_>>()
    }
}

/// The events of `sent` the sidecar forwards (no sync twin, no keep-alive, each id once),
/// keyed, with their index in `sent`.
fn forwardable(sent: &[KiloEvent]) -> Vec<(usize, Key)> {
    let skipped = ["sync", "server.connected", "server.heartbeat"];
    let mut ids = HashSet::new();
    let mut keys = Vec::new();
    for (index, event) in sent.iter().enumerate() {
        let Ok(envelope) = serde_json::from_str::<Envelope<'_>>(&event.raw) else {
            continue;
        };
        if skipped.contains(&envelope.kind.as_str()) {
            continue;
        }
        if let Some(id) = envelope.id
            && !ids.insert(id)
        {
            continue;
        }
        let data = envelope.properties.map_or("", RawValue::get).to_owned();
        keys.push((index, (envelope.kind, data)));
    }
    keys
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::story::StoredEvent;

    fn sent(lines: &[&str]) -> Vec<KiloEvent> {
        lines
            .iter()
            .map(|raw| KiloEvent {
                raw: (*raw).to_owned(),
                json: serde_json::from_str(raw).unwrap_or_default(),
            })
            .collect()
    }

    fn stored(events: &[(&str, &str)]) -> Vec<StoredEvent> {
        let to_event = |(seq, (kind, data)): (usize, &(&str, &str))| {
            let text = format!(r#"{{"seq":{seq},"type":"{kind}","data":{data}}}"#);
            serde_json::from_str::<StoredEvent>(&text).ok()
        };
        events.iter().enumerate().filter_map(to_event).collect()
    }

    #[test]
    fn counts_compare_what_kilo_sent_with_what_stasis_stored_byte_for_byte() {
        let kilo = sent(&[
            r#"{"id":"evt_0","type":"server.connected","properties":{}}"#,
            r#"{"id":"evt_1","type":"message.part.delta","properties":{"delta":"a"}}"#,
            r#"{"type":"sync","id":"evt_1","syncEvent":{}}"#,
            r#"{"id":"evt_1","type":"message.part.delta","properties":{"delta":"a"}}"#,
            r#"{"id":"evt_2","type":"message.part.delta","properties":{"delta":"a"}}"#,
            r#"{"id":"evt_3","type":"session.idle","properties":{"sessionID":"s"}}"#,
        ]);
        let delta = ("message.part.delta", r#"{"delta":"a"}"#);
        let counts = Counts::of(
            &kilo,
            &stored(&[
                ("stasis.sidecar.resync", "{}"),
                delta,
                delta,
                delta,
                ("message.updated", r#"{"info":{}}"#),
            ]),
            (2, 5),
        );
        assert_eq!(
            counts.sent.len(),
            3,
            "keep-alives, twins and repeated ids are not sent"
        );
        assert_eq!(counts.sent_in_outage, 1, "evt_2 came within the marks");
        assert_eq!(
            counts.stored.len(),
            4,
            "the sidecar's own events are left out"
        );
        assert_eq!(counts.surplus(), 1, "one delta too many");
        assert_eq!(counts.shortfall(), 1, "session.idle never stored");
        assert_eq!(counts.unsent(), 1, "message.updated was never sent as such");
        assert!(!counts.in_order());
    }

    #[test]
    fn the_same_events_in_the_same_order_count_as_kept() {
        let kilo = sent(&[
            r#"{"id":"evt_1","type":"a","properties":{"n": 1}}"#,
            r#"{"id":"evt_2","type":"b","properties":{"n":2}}"#,
        ]);
        let counts = Counts::of(
            &kilo,
            &stored(&[("a", r#"{"n": 1}"#), ("b", r#"{"n":2}"#)]),
            (0, 0),
        );
        assert_eq!(
            (counts.surplus(), counts.shortfall(), counts.unsent()),
            (0, 0, 0)
        );
        assert!(counts.in_order());
        let swapped = Counts::of(
            &kilo,
            &stored(&[("b", r#"{"n":2}"#), ("a", r#"{"n": 1}"#)]),
            (0, 0),
        );
        assert!(!swapped.in_order());
        let respaced = Counts::of(
            &kilo,
            &stored(&[("a", r#"{"n":1}"#), ("b", r#"{"n":2}"#)]),
            (0, 0),
        );
        assert_eq!(respaced.shortfall(), 1, "data is compared byte for byte");
    }
}
