//! One line of kilo's `GET /event` stream made into one stasis event, or dropped.
//!
//! kilo sends `{id, type, properties}` for every bus event, and for every persisted change a
//! twin `{"type": "sync", "id": <the same id>, "syncEvent": {...}}`: twins are dropped, and so
//! are `server.connected` and `server.heartbeat` (they say the stream is alive, nothing about
//! the agent). Any other event is forwarded as `{type, session_id, data}` where `data` is its
//! `properties` byte for byte and `session_id` is `properties.sessionID` when that is a valid
//! stasis id (omitted otherwise). Events are deduplicated by `id` over a bounded window.

use std::borrow::Cow;
use std::collections::{HashSet, VecDeque};

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::shrink;
use crate::ids::check_id;

/// kilo's event types that only keep the stream alive.
const KEEPALIVES: [&str; 2] = ["server.connected", "server.heartbeat"];
/// The type kilo gives the persisted twin of a bus event.
const SYNC_TWIN: &str = "sync";
/// The event that ends a turn: a snapshot follows once it is stored.
pub(crate) const TURN_END: &str = "session.idle";
/// Longest event type stasis accepts.
const MAX_TYPE_BYTES: usize = 256;

/// An event ready for a batch: its JSON text `{"type", "session_id"?, "data"?}`.
#[derive(Debug)]
pub(crate) struct Outgoing {
    pub(crate) json: Box<RawValue>,
    /// It is a `session.idle`: once stored, a snapshot is due.
    pub(crate) ends_turn: bool,
    /// When the sidecar read it (ms since the epoch).
    pub(crate) received_ms: u64,
}

impl Outgoing {
    /// Its size in a batch body.
    pub(crate) fn len(&self) -> usize {
        self.json.get().len()
    }
}

/// What became of one stream line.
#[derive(Debug)]
pub(crate) enum Verdict {
    Forward { event: Outgoing, shrunk: bool },
    Twin,
    Keepalive,
    Duplicate,
    Malformed(String),
}

#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(default, borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default, borrow)]
    properties: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct SessionOf<'a> {
    #[serde(rename = "sessionID", borrow)]
    session_id: Option<Cow<'a, str>>,
}

#[derive(Serialize)]
struct StasisEvent<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    session_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    data: Option<&'a RawValue>,
}

/// Classifies stream lines, remembering the last `capacity` event ids.
#[derive(Debug)]
pub(crate) struct EventFilter {
    recent: RecentIds,
}

impl EventFilter {
    pub(crate) fn new(capacity: usize) -> Self {
        EventFilter {
            recent: RecentIds::new(capacity),
        }
    }

    /// What to do with the `data:` text of one stream event read at `received_ms`.
    pub(crate) fn classify(&mut self, data: &str, received_ms: u64) -> Verdict {
        let envelope: Envelope<'_> = match serde_json::from_str(data) {
            Ok(envelope) => envelope,
            Err(e) => return Verdict::Malformed(format!("not a kilo event: {e}")),
        };
        if envelope.kind == SYNC_TWIN {
            return Verdict::Twin;
        }
        if KEEPALIVES.contains(&envelope.kind.as_ref()) {
            return Verdict::Keepalive;
        }
        if let Some(id) = &envelope.id
            && !self.recent.insert(id)
        {
            return Verdict::Duplicate;
        }
        let session = envelope.properties.and_then(session_of);
        match encode(
            &envelope.kind,
            session.as_deref(),
            envelope.properties,
            received_ms,
        ) {
            Ok((event, shrunk)) => Verdict::Forward { event, shrunk },
            Err(reason) => Verdict::Malformed(reason),
        }
    }
}

/// `properties.sessionID` when it is an id stasis accepts.
fn session_of(properties: &RawValue) -> Option<String> {
    let parsed: SessionOf<'_> = serde_json::from_str(properties.get()).ok()?;
    let session = parsed.session_id?;
    check_id("session", &session).ok()?;
    Some(session.into_owned())
}

/// Encodes one stasis event, cutting its largest strings when it is over the event limit
/// (see [`shrink`]); answers whether it was cut. A type stasis would refuse is an error.
pub(crate) fn encode(
    kind: &str,
    session_id: Option<&str>,
    data: Option<&RawValue>,
    received_ms: u64,
) -> Result<(Outgoing, bool), String> {
    if kind.is_empty() || kind.len() > MAX_TYPE_BYTES {
        return Err(format!(
            "event type of {} bytes (stasis takes 1 to {MAX_TYPE_BYTES})",
            kind.len()
        ));
    }
    let room = shrink::MAX_DATA_BYTES.saturating_sub(kind.len() + session_id.map_or(0, str::len));
    let shrunk = match data {
        Some(data) if data.get().len() > room => Some(shrink::fit(data, room)?),
        _ => None,
    };
    let data = shrunk.as_deref().or(data);
    let event = StasisEvent {
        kind,
        session_id,
        data,
    };
    let json = serde_json::value::to_raw_value(&event).map_err(|e| e.to_string())?;
    let outgoing = Outgoing {
        json,
        ends_turn: kind == TURN_END,
        received_ms,
    };
    Ok((outgoing, shrunk.is_some()))
}

/// The last `capacity` ids seen, for deduplication in bounded memory.
#[derive(Debug)]
struct RecentIds {
    set: HashSet<Box<str>>,
    order: VecDeque<Box<str>>,
    capacity: usize,
}

impl RecentIds {
    fn new(capacity: usize) -> Self {
        RecentIds {
            set: HashSet::new(),
            order: VecDeque::new(),
            capacity: capacity.max(1),
        }
    }

    /// Remembers `id`; false when it was already remembered.
    fn insert(&mut self, id: &str) -> bool {
        if self.set.contains(id) {
            return false;
        }
        if self.order.len() == self.capacity
            && let Some(oldest) = self.order.pop_front()
        {
            self.set.remove(&oldest);
        }
        self.set.insert(id.into());
        self.order.push_back(id.into());
        true
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::panic, reason = "tests fail loudly")]

    use super::*;

    fn forwarded(verdict: Verdict) -> serde_json::Value {
        match verdict {
            Verdict::Forward { event, .. } => {
                serde_json::from_str(event.json.get()).unwrap_or_default()
            }
            other => panic!("expected an event to forward, got {other:?}"),
        }
    }

    #[test]
    fn an_event_becomes_type_session_and_its_properties_verbatim() {
        let mut filter = EventFilter::new(16);
        let line = r#"{"id":"evt_1","type":"message.part.delta","properties":{"sessionID":"ses_A1","messageID":"msg_1","field":"text","delta":"Hi \u00e9"}}"#;
        let Verdict::Forward { event, shrunk } = filter.classify(line, 7) else {
            panic!("forwarded")
        };
        assert!(!shrunk && !event.ends_turn);
        assert_eq!(event.received_ms, 7);
        assert_eq!(
            event.json.get(),
            r#"{"type":"message.part.delta","session_id":"ses_A1","data":{"sessionID":"ses_A1","messageID":"msg_1","field":"text","delta":"Hi \u00e9"}}"#
        );
    }

    #[test]
    fn twins_and_keepalives_are_dropped_but_the_bus_event_passes() {
        let mut filter = EventFilter::new(16);
        let twin = r#"{"type":"sync","syncEvent":{"id":"evt_2","type":"session.updated.1","seq":1,"data":{}},"id":"evt_2"}"#;
        assert!(matches!(filter.classify(twin, 0), Verdict::Twin));
        let bus = r#"{"id":"evt_2","type":"session.updated","properties":{"sessionID":"ses_1"}}"#;
        assert_eq!(
            forwarded(filter.classify(bus, 0))["type"],
            "session.updated"
        );
        for kind in KEEPALIVES {
            let line = format!(r#"{{"id":"evt_{kind}","type":"{kind}","properties":{{}}}}"#);
            assert!(matches!(filter.classify(&line, 0), Verdict::Keepalive));
        }
    }

    #[test]
    fn a_repeated_id_is_dropped_within_the_window_only() {
        let mut filter = EventFilter::new(2);
        let event = |id: &str| format!(r#"{{"id":"{id}","type":"x","properties":{{}}}}"#);
        assert!(matches!(
            filter.classify(&event("a"), 0),
            Verdict::Forward { .. }
        ));
        assert!(matches!(
            filter.classify(&event("a"), 0),
            Verdict::Duplicate
        ));
        assert!(matches!(
            filter.classify(&event("b"), 0),
            Verdict::Forward { .. }
        ));
        assert!(matches!(
            filter.classify(&event("c"), 0),
            Verdict::Forward { .. }
        ));
        // "a" fell out of the two-id window: memory stays bounded.
        assert!(matches!(
            filter.classify(&event("a"), 0),
            Verdict::Forward { .. }
        ));
        assert_eq!(filter.recent.order.len(), 2);
    }

    #[test]
    fn a_missing_or_invalid_session_id_is_omitted() {
        let mut filter = EventFilter::new(16);
        for props in [
            r#"{}"#,
            r#"{"sessionID":"bad/id"}"#,
            r#"{"sessionID":42}"#,
            r#""text""#,
        ] {
            let line = format!(r#"{{"type":"todo.updated","properties":{props}}}"#);
            let value = forwarded(filter.classify(&line, 0));
            assert!(value.get("session_id").is_none(), "{props}");
            assert_eq!(
                value["data"],
                serde_json::from_str::<serde_json::Value>(props).unwrap_or_default()
            );
        }
        let bare = forwarded(filter.classify(r#"{"type":"server.instance.disposed"}"#, 0));
        assert_eq!(
            bare,
            serde_json::json!({"type": "server.instance.disposed"})
        );
    }

    #[test]
    fn session_idle_ends_a_turn() {
        let mut filter = EventFilter::new(16);
        let line = r#"{"id":"e","type":"session.idle","properties":{"sessionID":"s"}}"#;
        let Verdict::Forward { event, .. } = filter.classify(line, 0) else {
            panic!("forwarded")
        };
        assert!(event.ends_turn);
    }

    #[test]
    fn lines_that_are_not_kilo_events_are_malformed() {
        let mut filter = EventFilter::new(16);
        let too_long = format!(r#"{{"type":"{}"}}"#, "t".repeat(257));
        for line in ["", "not json", r#"{"properties":{}}"#, r#"[1]"#, &too_long] {
            assert!(
                matches!(filter.classify(line, 0), Verdict::Malformed(_)),
                "{line}"
            );
        }
    }
}
