//! kilo's `GET /event` stream, read on a thread of its own and kept whole:
//! the lines exactly as received, and each event parsed.

use anyhow::{Context, Result, bail};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// How long `open` waits for kilo's `server.connected`.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// One event: `{id, type, properties}`, or a `sync` twin `{type: "sync",
/// syncEvent}`.
#[derive(Debug, Clone)]
pub struct KiloEvent {
    /// The `data:` line's JSON text, as received.
    pub raw: String,
    /// The same, parsed (`Value::Null` if it was not JSON).
    pub json: Value,
}

impl KiloEvent {
    /// Its `type`.
    pub fn kind(&self) -> &str {
        self.json.get("type").and_then(Value::as_str).unwrap_or("")
    }

    /// Its `properties`, absent on `sync` twins.
    pub fn properties(&self) -> Option<&Value> {
        self.json.get("properties")
    }

    /// `properties.sessionID`.
    pub fn session_id(&self) -> Option<&str> {
        self.properties()?.get("sessionID")?.as_str()
    }
}

/// A connected `GET /event` stream.
///
/// Its reader thread ends when kilo closes the stream (kilo stopped or
/// killed); dropping the reader does not wait for that.
pub struct EventStream {
    shared: Arc<Shared>,
}

#[derive(Default)]
struct Shared {
    received: Mutex<Received>,
    changed: Condvar,
}

#[derive(Default)]
struct Received {
    lines: Vec<String>,
    events: Vec<KiloEvent>,
    /// Why the stream ended, once it has.
    ended: Option<String>,
}

impl EventStream {
    /// Connects to `base`'s `/event` and waits for `server.connected`, so
    /// that nothing kilo does afterwards is missed.
    ///
    /// # Errors
    ///
    /// When the stream cannot be opened or kilo does not greet in time.
    pub fn open(base: &str) -> Result<Self> {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(None)
            .build()
            .into();
        let response = agent
            .get(format!("{base}/event"))
            .header("Accept", "text/event-stream")
            .call()
            .context("GET /event")?;
        let shared = Arc::new(Shared::default());
        let reading = Arc::clone(&shared);
        std::thread::Builder::new()
            .name("kilo-events".into())
            .spawn(move || read(response.into_body().into_reader(), &reading))
            .context("starting the /event reader")?;
        let stream = Self { shared };
        stream.wait_for(0, |e| e.kind() == "server.connected", CONNECT_TIMEOUT)?;
        Ok(stream)
    }

    /// The stream so far exactly as received: every line, each ending in
    /// `"\n"` (`data:` lines and the blank lines between events).
    pub fn raw(&self) -> String {
        let received = self.shared.lock();
        let mut raw = String::new();
        for line in &received.lines {
            raw.push_str(line);
            raw.push('\n');
        }
        raw
    }

    /// The events so far.
    pub fn events(&self) -> Vec<KiloEvent> {
        self.shared.lock().events.clone()
    }

    /// How many events have arrived: a mark for [`EventStream::wait_for`].
    pub fn len(&self) -> usize {
        self.shared.lock().events.len()
    }

    /// No event has arrived yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The first event at index `from` or later that `matches`, with its
    /// index.
    ///
    /// # Errors
    ///
    /// When none arrives within `timeout`, or the stream ends first.
    pub fn wait_for(
        &self,
        from: usize,
        matches: impl Fn(&KiloEvent) -> bool,
        timeout: Duration,
    ) -> Result<(usize, KiloEvent)> {
        let deadline = Instant::now() + timeout;
        let mut received = self.shared.lock();
        let mut next = from;
        loop {
            while let Some(event) = received.events.get(next) {
                if matches(event) {
                    return Ok((next, event.clone()));
                }
                next += 1;
            }
            if let Some(why) = &received.ended {
                bail!("kilo's event stream ended ({why}) before the awaited event");
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                bail!("the awaited event did not arrive within {timeout:?}");
            }
            received = self.shared.wait(received, left);
        }
    }

    /// Waits for `session.idle` of `session` at index `from` or later: the
    /// turn started after the mark `from` is over.
    ///
    /// # Errors
    ///
    /// As [`EventStream::wait_for`].
    pub fn wait_for_idle(&self, session: &str, from: usize, timeout: Duration) -> Result<usize> {
        let is_idle = |e: &KiloEvent| e.kind() == "session.idle" && e.session_id() == Some(session);
        self.wait_for(from, is_idle, timeout)
            .map(|(index, _)| index)
    }

    /// Waits until kilo closes the stream (it stopped or died).
    ///
    /// # Errors
    ///
    /// When it is still open after `timeout`.
    pub fn wait_until_ended(&self, timeout: Duration) -> Result<()> {
        let deadline = Instant::now() + timeout;
        let mut received = self.shared.lock();
        while received.ended.is_none() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                bail!("kilo's event stream is still open after {timeout:?}");
            }
            received = self.shared.wait(received, left);
        }
        Ok(())
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Received> {
        self.received.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn wait<'a>(
        &self,
        guard: MutexGuard<'a, Received>,
        at_most: Duration,
    ) -> MutexGuard<'a, Received> {
        match self.changed.wait_timeout(guard, at_most) {
            Ok((guard, _)) => guard,
            Err(poisoned) => poisoned.into_inner().0,
        }
    }
}

/// Reads lines until the stream ends, keeping each and parsing `data:`.
fn read(body: impl std::io::Read, shared: &Shared) {
    let mut reader = BufReader::new(body);
    let mut line = Vec::new();
    let why = loop {
        line.clear();
        match reader.read_until(b'\n', &mut line) {
            Ok(0) => break "closed by kilo".to_owned(),
            Ok(_) => {}
            Err(error) => break error.to_string(),
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.strip_suffix('\n').unwrap_or(&text);
        let text = text.strip_suffix('\r').unwrap_or(text).to_owned();
        let event = text.strip_prefix("data:").map(|data| {
            let raw = data.strip_prefix(' ').unwrap_or(data).to_owned();
            let json = serde_json::from_str(&raw).unwrap_or(Value::Null);
            KiloEvent { raw, json }
        });
        let mut received = shared.lock();
        received.lines.push(text);
        received.events.extend(event);
        shared.changed.notify_all();
    };
    shared.lock().ended = Some(why);
    shared.changed.notify_all();
}
