//! # stasis-client
//!
//! What a container runs to keep its agents' state in stasis: push an agent's `kilo.db`
//! (a consistent copy taken with SQLite's online backup API while the agent keeps writing; only
//! the 32 KiB chunks the server lacks are sent), pull one back (its chunks from a local cache or
//! fetched in parallel, each and the whole verified against their sha256, `PRAGMA quick_check`,
//! written atomically), `boot` (heartbeat, then
//! hydrate every registered agent into `/tmp/agent-home-{agent}/.local/share/kilo/kilo.db`,
//! then hand over the pending dispatches, and request one for every agent that ran in another
//! container without one pending: after a `kill -9` nothing was deferred), `drain` (on SIGTERM: container eviction, then flush
//! every agent's snapshot within a time budget), `tail` (follow an agent's events live), and
//! the agent [`sidecar`]: beside each `kilo serve` for its whole life, it forwards the runtime's
//! events into the agent's log exactly once and pushes kilo.db whenever a turn ends, and
//! [`resume`]: once a runtime comes back, the agent's session found (or started with its
//! dispatch), a reply a crash cut finished once, and its inbox delivered exactly once.
//!
//! Everything is blocking (no async runtime). Transient failures (connection refused, timeouts,
//! 5xx, 503 with `Retry-After`) are retried with exponential backoff and jitter within a
//! [`RetryPolicy`]; refusals (4xx) come back at once as [`Error::Api`] with the server's code
//! and message. [`Error::exit_code`] maps every error onto the binary's exit codes ([`exit`]).
//!
//! ```no_run
//! use std::path::Path;
//!
//! use stasis_client::snapshot::{self, PullOptions, PullOutcome, PushOptions};
//! use stasis_client::{AgentRef, Client, Config};
//!
//! fn main() -> Result<(), stasis_client::Error> {
//!     // STASIS_URL=http://127.0.0.1:8787, STASIS_TOKEN=<a town token>
//!     let client = Client::new(Config::from_env()?);
//!     let mayor = AgentRef::new("demo", "main", "mayor")?;
//!
//!     let live = Path::new("/tmp/agent-home-mayor/.local/share/kilo/kilo.db");
//!     let receipt = snapshot::push(&client, &mayor, live, &PushOptions::default())?;
//!     println!("stored version {} ({} bytes)", receipt.version, receipt.size);
//!
//!     let restored = Path::new("/tmp/restore/kilo.db");
//!     match snapshot::pull(&client, &mayor, restored, &PullOptions::default())? {
//!         PullOutcome::Pulled(s) => println!("restored {} bytes, sha256 {}", s.size, s.sha256),
//!         PullOutcome::NoSnapshot => println!("no snapshot yet"),
//!     }
//!     Ok(())
//! }
//! ```

pub mod atomic_write;
pub mod backup;
pub mod boot;
pub mod config;
pub mod dispatch_need;
pub mod drain;
pub mod error;
pub mod http;
pub mod ids;
mod progress;
pub mod resume;
pub mod retry;
pub mod sidecar;
pub mod snapshot;
pub mod sse;
pub mod supervisor;
pub mod tail;
pub mod town;
pub mod workspace;
pub mod workspace_sync;

pub use config::Config;
pub use error::{Error, Result, exit};
pub use http::Client;
// The token's upkeep belongs to the HTTP client; its path at the root stays for its users.
pub use http::credentials;
pub use ids::AgentRef;
pub use retry::RetryPolicy;
