//! A recorded conversation: its `/event` lines, stored as a container
//! stores them (`{type, session_id: properties.sessionID, data:
//! properties}`), and kilo's own messages.

use crate::kilo_view::KiloMessage;
use serde::Deserialize;
use serde_json::value::RawValue;
use stasis_domain::event_log::Event;
use std::path::PathBuf;

/// The Kilo CLI version the fixtures were recorded with.
pub(crate) const KILO_VERSION: &str = "7.7.9";

/// One recorded conversation.
pub(crate) struct Capture {
    pub(crate) name: &'static str,
    /// Each `data:` line's JSON, in order.
    pub(crate) lines: Vec<String>,
    /// kilo's `GET /session/{id}/message` at the end.
    pub(crate) messages: Vec<KiloMessage>,
}

/// How the `sync` twins ended up in the log.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Twins {
    /// Dropped by the container, as it should.
    Dropped,
    /// Kept as sent: type `sync`; having no `properties`, the whole event
    /// is the data.
    AsSent,
    /// Unwrapped into their own type (`message.updated.1` →
    /// `message.updated`) and data: a second copy of every persisted event.
    Unwrapped,
}

pub(crate) fn load(name: &'static str) -> Capture {
    let folder = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(format!("kilo-{KILO_VERSION}"))
        .join(name);
    let events = std::fs::read_to_string(folder.join("events.sse")).expect("events.sse");
    let lines = events
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .map(str::to_owned)
        .collect();
    let messages = std::fs::read_to_string(folder.join("messages.json")).expect("messages.json");
    Capture {
        name,
        lines,
        messages: serde_json::from_str(&messages).expect("kilo's messages"),
    }
}

#[derive(Deserialize)]
struct Wire<'a> {
    #[serde(rename = "type")]
    kind: String,
    #[serde(borrow)]
    properties: Option<&'a RawValue>,
    #[serde(rename = "syncEvent", borrow)]
    sync_event: Option<SyncWire<'a>>,
}

#[derive(Deserialize)]
struct SyncWire<'a> {
    #[serde(rename = "type")]
    kind: String,
    #[serde(borrow)]
    data: &'a RawValue,
}

#[derive(Deserialize)]
struct SessionOf {
    #[serde(rename = "sessionID")]
    session_id: Option<String>,
}

impl Capture {
    /// The log a container writes for this stream, seqs from 1.
    pub(crate) fn stored(&self, twins: Twins) -> Vec<Event> {
        let mut events = Vec::new();
        for line in &self.lines {
            let wire: Wire<'_> = serde_json::from_str(line).expect("an event");
            let stored = match (&wire.sync_event, wire.properties) {
                (None, Some(properties)) => Some((wire.kind, properties.get())),
                (None, None) => Some((wire.kind, line.as_str())),
                (Some(_), _) if matches!(twins, Twins::Dropped) => None,
                (Some(_), _) if matches!(twins, Twins::AsSent) => Some((wire.kind, line.as_str())),
                (Some(sync), _) => {
                    let kind = sync.kind.strip_suffix(".1").expect("a versioned type");
                    Some((kind.to_owned(), sync.data.get()))
                }
            };
            if let Some((event_type, data)) = stored {
                let seq = u64::try_from(events.len() + 1).expect("small");
                events.push(Event {
                    seq,
                    event_type,
                    session_id: session_of(data),
                    data: data.to_owned(),
                    created_at_ms: 0,
                });
            }
        }
        events
    }

    /// The data of every event of `event_type`, in order.
    pub(crate) fn data_of(&self, event_type: &str) -> Vec<serde_json::Value> {
        self.stored(Twins::Dropped)
            .into_iter()
            .filter(|event| event.event_type == event_type)
            .map(|event| serde_json::from_str(&event.data).expect("JSON data"))
            .collect()
    }
}

fn session_of(data: &str) -> Option<String> {
    serde_json::from_str::<SessionOf>(data)
        .ok()
        .and_then(|of| of.session_id)
}
