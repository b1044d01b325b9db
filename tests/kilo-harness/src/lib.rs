//! The real Kilo CLI under test, offline.
//!
//! - [`FakeModel`]: an OpenAI-compatible model on loopback that streams
//!   scripted replies (text word by word at a chosen pace, or a `bash` tool
//!   call) and records every request kilo sent it.
//! - [`Kilo`]: `kilo serve` in its own process group with its whole home
//!   (database, config, temp) under a folder the caller picks, configured
//!   for the fake model and nothing else; typed calls to its HTTP API
//!   ([`KiloApi`]) and a reader of its `GET /event` stream ([`EventStream`]).
//! - [`story`]: the SPEC's "same story with a real agent" against a running
//!   stasis, with the real `stasis-client` binary: container A (kilo serve
//!   and the sidecar) SIGKILLed mid-reply, container B booted on an empty
//!   folder, and every check of the recovery. `tests/real_agent.rs` and the
//!   `real-agent-demo` binary play it; `real-agent-outage` counts what a
//!   stasis outage during a kilo conversation does to its events.
//! - [`supervision`]: `stasis-client up` as a container's entrypoint with the real kilo under
//!   each agent's supervisor: a kilo killed alone and brought back, a turn aborted at its
//!   deadline, the eviction's phases on SIGTERM, a fenced container's kilo killed.
//! - `record-fixtures` (the binary) drives scripted conversations through
//!   both and writes kilo's raw event streams and its own view of the
//!   messages, for the conversation rebuild's fixture tests.
//!
//! ```no_run
//! use stasis_kilo_harness::{FakeModel, Kilo, KiloOptions, Reply, Script};
//! use std::time::Duration;
//!
//! # fn main() -> anyhow::Result<()> {
//! let model = FakeModel::start(Script::new().when("plan", Reply::text("Coffee, then code.")))?;
//! let kilo = Kilo::start(&KiloOptions::new("/tmp/agent-home-mayor", &model.base_url()))?;
//! let events = kilo.events()?;
//! let session = kilo.api().create_session()?;
//! let mark = events.len();
//! kilo.api().prompt_async(&session, "plan the day")?;
//! events.wait_for_idle(&session, mark, Duration::from_secs(30))?;
//! let messages = kilo.api().messages(&session)?;
//! assert_eq!(messages.len(), 2);
//! kilo.stop();
//! # Ok(())
//! # }
//! ```

mod fake_model;
mod kilo;
pub mod story;
pub mod supervision;

pub use fake_model::{ChatMessage, FakeModel, MODEL_ID, ModelRequest, Reply, Script};
pub use kilo::{
    EventStream, Kilo, KiloApi, KiloEvent, KiloMessage, KiloOptions, MessageInfo, Part,
    SessionInfo, kilo_bin, kilo_env, kilo_version,
};
