//! The eviction-and-recovery scenario, one method per step, each printing what it did
//! and failing on the first result that is not what the contract says.
//!
//! - [`container_a`]: step 1 (A boots and works) and step 2 (A is evicted
//!   and flushes).
//! - [`gap`]: step 3 (the user writes while no container runs) and the
//!   spec's step 5 (a late heartbeat from A), which must come before B.
//! - [`container_b`]: the spec's step 4 (B boots, hydrates, gets the
//!   Mayor's dispatch).

mod container_a;
mod container_b;
mod gap;

use super::{
    chat::{self, Chat},
    http::Http,
    kilo_db,
    report::{Report, bytes, ms},
};
use serde_json::{Value, json};
use stasis_client::{
    AgentRef, Client, Config, RetryPolicy, boot::kilo_db_path, snapshot::PushReceipt,
};
use std::{
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

/// What the run is about: the town, the Mayor's kilo.db size, where files go.
pub struct Settings {
    /// The town the containers serve.
    pub town: String,
    /// The Mayor's kilo.db grows to at least this many bytes.
    pub mayor_db_bytes: u64,
    /// A temporary folder for both containers' files.
    pub root: PathBuf,
}

/// Figures for the summary.
pub struct Outcome {
    /// From B's first heartbeat until every kilo.db is hydrated and the
    /// Mayor's dispatch is in hand.
    pub recovery: Duration,
    /// Bytes B pulled.
    pub hydrated_bytes: u64,
    /// Agents B hydrated.
    pub hydrated_agents: usize,
}

/// Who container A runs, and how big each kilo.db grows.
struct Cast {
    agent_id: &'static str,
    rig_id: &'static str,
    role: &'static str,
    session: &'static str,
    port: u16,
    /// `None`: the Mayor's size, from the flags.
    db_bytes: Option<u64>,
    /// Messages it writes to its kilo.db between A's first push and SIGTERM.
    late_messages: u64,
    seed: u64,
}

/// The Mayor first: the Mayor's dispatch and kilo.db are what step 5 checks most.
const CAST: [Cast; 3] = [
    Cast {
        agent_id: "mayor",
        rig_id: "hq",
        role: "mayor",
        session: MAYOR_SESSION,
        port: 4096,
        db_bytes: None,
        late_messages: 24,
        seed: 101,
    },
    Cast {
        agent_id: "polecat-1",
        rig_id: "rig-billing",
        role: "polecat",
        session: "ses-p1-a",
        port: 4097,
        db_bytes: Some(3_000_000),
        late_messages: 6,
        seed: 202,
    },
    Cast {
        agent_id: "polecat-2",
        rig_id: "rig-billing",
        role: "polecat",
        session: "ses-p2-a",
        port: 4098,
        db_bytes: Some(1_000_000),
        late_messages: 4,
        seed: 303,
    },
];

/// One agent that both containers run.
struct Member {
    agent_id: &'static str,
    rig_id: &'static str,
    role: &'static str,
    /// Its SDK session in container A.
    session: &'static str,
    port: u16,
    db_bytes: u64,
    late_messages: u64,
    seed: u64,
    agent: AgentRef,
    /// Container A's live kilo.db.
    live_db: PathBuf,
    /// The rows of A's kilo.db when A died.
    live_digest: String,
    /// What A's pushes stored, oldest first.
    pushed: Vec<PushReceipt>,
    /// The newest seq of its log.
    last_seq: u64,
}

/// The run: the server, the two containers' ids, and what each step leaves
/// for the next to check.
pub struct Demo {
    report: Report,
    http: Http,
    client: Client,
    town: String,
    root: PathBuf,
    container_a: String,
    container_b: String,
    members: Vec<Member>,
    chat: Chat,
    checkpoint: Value,
    /// The seq at which the gap message was logged.
    gap_seq: u64,
}

/// The Mayor's SDK session in container A.
const MAYOR_SESSION: &str = "ses-mayor-a";

impl Member {
    fn new(cast: &Cast, settings: &Settings, home_a: &Path) -> anyhow::Result<Self> {
        Ok(Self {
            agent_id: cast.agent_id,
            rig_id: cast.rig_id,
            role: cast.role,
            session: cast.session,
            port: cast.port,
            db_bytes: cast.db_bytes.unwrap_or(settings.mayor_db_bytes),
            late_messages: cast.late_messages,
            seed: cast.seed,
            agent: AgentRef::new(&settings.town, cast.rig_id, cast.agent_id)?,
            live_db: kilo_db_path(home_a, cast.agent_id),
            live_digest: String::new(),
            pushed: Vec::new(),
            last_seq: 0,
        })
    }

    /// How container A's registry lists it.
    fn registry_entry(&self) -> Value {
        json!({
            "agent_id": self.agent_id,
            "rig_id": self.rig_id,
            "role": self.role,
            "session_id": self.session,
            "port": self.port,
        })
    }
}

impl Demo {
    /// Prepares a run against `base_url`; nothing is sent yet.
    pub fn new(
        report: Report,
        settings: Settings,
        base_url: &str,
        token: Option<String>,
    ) -> anyhow::Result<Self> {
        let policy = RetryPolicy {
            max_attempts: 4,
            max_elapsed: Duration::from_secs(30),
            ..RetryPolicy::default()
        };
        let client = Client::new(Config::new(base_url, token.clone())?)
            .with_policy(policy)
            .on_retry(|notice| {
                eprintln!(
                    "   … retrying {} after {:?}: {}",
                    notice.what, notice.delay, notice.error
                );
            });
        let container_a = stasis_client::town::new_container_id();
        let container_b = stasis_client::town::new_container_id();
        let home_a = settings.root.join("container-a");
        let members = CAST
            .iter()
            .map(|cast| Member::new(cast, &settings, &home_a))
            .collect::<anyhow::Result<_>>()?;
        let checkpoint = json!({
            "convoy": "cv-billing-7",
            "beads": {"gt-21": "in-review", "gt-19": "in-progress", "gt-24": "parked", "gt-30": "todo"},
            "user_prefs": {"notify": "on-merge", "quiet_hours": "22:00-07:00"},
            "last_summary": "gt-21 waits for review by polecat-2; payments-schema work paused until Friday.",
        });
        Ok(Self {
            report,
            http: Http::new(base_url, token.as_deref()),
            client,
            town: settings.town,
            root: settings.root,
            container_a,
            container_b,
            members,
            chat: chat::mayor_chat(MAYOR_SESSION, 7),
            checkpoint,
            gap_seq: 0,
        })
    }

    /// Every step in order; the first failure ends the run.
    pub fn run(&mut self) -> anyhow::Result<Outcome> {
        self.prepare_data()?;
        self.container_a_boots_and_works()?;
        self.container_a_is_evicted_and_flushes()?;
        self.user_writes_during_the_gap()?;
        self.late_heartbeat_from_a()?;
        self.container_b_boots()
    }

    /// The report, to print the summary or a failure.
    pub fn report(&self) -> &Report {
        &self.report
    }

    /// Builds each agent's kilo.db in container A's folder.
    fn prepare_data(&mut self) -> anyhow::Result<()> {
        self.report.say(format_args!(
            "\nSynthetic data (deterministic), in {}",
            self.root.display()
        ));
        for member in &self.members {
            let started = Instant::now();
            let built = kilo_db::create(&member.live_db, member.db_bytes, member.seed)?;
            self.report.line(format_args!(
                "{:<10} kilo.db {:>8}  {} sessions, {} messages, {} parts  ({})",
                member.agent_id,
                bytes(built.size),
                built.sessions,
                built.messages,
                built.parts,
                ms(started.elapsed())
            ));
        }
        self.report.line(format_args!(
            "mayor      conversation: {} turns streamed as {} events",
            self.chat.turns.len(),
            self.chat.events.len()
        ));
        Ok(())
    }

    fn mayor(&self) -> &Member {
        &self.members[0]
    }

    /// `/api/towns/{town}` followed by `suffix`.
    fn town_path(&self, suffix: &str) -> String {
        format!("/api/towns/{}{suffix}", self.town)
    }
}

/// A JSON field as text (`""` when absent).
fn text_at<'v>(value: &'v Value, pointer: &str) -> &'v str {
    value.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// A JSON field as a number, when it is one.
fn u64_at(value: &Value, pointer: &str) -> Option<u64> {
    value.pointer(pointer).and_then(Value::as_u64)
}

/// A path shortened for printing: `…/agent-home-mayor/.local/share/kilo/kilo.db`.
fn short_path(path: &Path, root: &Path) -> String {
    match path.strip_prefix(root) {
        Ok(inside) => format!("<tmp>/{}", inside.display()),
        Err(_) => path.display().to_string(),
    }
}
