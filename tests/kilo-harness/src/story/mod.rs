//! The SPEC's "same story with a real agent", played against a running stasis.
//!
//! 1. Container A heartbeats, registers the Mayor, and starts `kilo serve` (its home at
//!    `<A>/agent-home-mayor`) and `stasis-client sidecar` beside it, both in one new process
//!    group; the Mayor's session is named in the container registry. The user holds three
//!    turns through kilo's own API (the second one a `bash` tool call), each to its end, and
//!    the story waits until stasis holds a snapshot whose watermark covers the last one.
//! 2. A fourth reply streams slowly from the fake model; once stasis holds a few of its
//!    pieces, the whole group gets SIGKILL: no drain.
//! 3. Container B, on an empty folder (A's root, emptied: a new container has the same
//!    paths), runs `stasis-client boot` (its own container id) and starts `kilo serve` on the
//!    hydrated kilo.db.
//! 4. Checked: kilo on B lists the session and every finished turn; the Mayor's dispatch
//!    carries exactly kilo's turns (see [`checks`] for how a message becomes a turn), then the
//!    4th prompt if kilo's database lacks it, then the cut reply marked unfinished, whose text
//!    is what stasis holds of its streamed pieces and a proper prefix of the scripted reply;
//!    and a new prompt in the restored session makes kilo send the model turns 1–3 in order.
//!
//! Real parts throughout: the stasis given by URL and secret, the `stasis-client` binary
//! ([`client_bin`]), the Kilo CLI; only the model is fake ([`FakeModel`]).

pub mod binaries;
pub mod checks;
mod container_a;
mod container_b;
mod local_host;
pub mod outage;
pub mod resume;
pub mod script;
pub mod stasis;

pub use binaries::{client_bin, host_bin};
pub use container_a::DELTAS_BEFORE_KILL;
pub use local_host::LocalHost;
pub use stasis::{Dispatch, StasisApi, StoredEvent, Turn};

use crate::FakeModel;
use anyhow::{Context, Result, bail};
use checks::{CutReply, Tail};
use container_a::ContainerA;
use script::{MAYOR, RIG};
use stasis_api::auth::{DEFAULT_BOOTSTRAP_TTL, DEFAULT_TTL, Grant, KeyRing, Scope};
use std::hash::{BuildHasher, RandomState};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Where the story plays, and with what.
#[derive(Debug, Clone)]
pub struct StoryOptions {
    /// stasis's base URL.
    pub url: String,
    /// Its secret: the story mints a token for its own town.
    pub secret: String,
    /// The `stasis-client` binary.
    pub client_bin: PathBuf,
    /// Another Kilo CLI than [`kilo_bin`](crate::kilo_bin)'s.
    pub kilo_bin: Option<PathBuf>,
    /// Where the containers' temporary folders go (default: the system's).
    pub work: Option<PathBuf>,
}

/// What happened, for the caller to print.
#[derive(Debug, Clone)]
pub struct StoryReport {
    /// The town played in.
    pub town: String,
    /// The Mayor's kilo session.
    pub session: String,
    /// The turns container A held (kilo's view before the kill).
    pub held: Vec<Turn>,
    /// The snapshot watermark that covered turn 3.
    pub watermark: u64,
    /// Pieces of the 4th reply kilo had sent, and stasis held, at the kill.
    pub deltas_sent: usize,
    /// See `deltas_sent`.
    pub deltas_stored: usize,
    /// The cut reply as stasis holds it.
    pub cut: CutReply,
    /// What kilo's restored database holds after the finished turns.
    pub tail: Tail,
    /// B's container id.
    pub container_b: String,
    /// The Mayor's dispatch.
    pub dispatch: Dispatch,
    /// `boot`'s run time.
    pub boot_took: Duration,
    /// kilo's start on the hydrated home, to its health check.
    pub kilo_started_in: Duration,
    /// From boot's start to kilo answering with the restored session.
    pub recovery: Duration,
    /// The turns kilo on B shows after the new prompt.
    pub after: Vec<Turn>,
}

/// Plays the story; `narrate` gets one line per thing done. An error says which check
/// failed and what was seen.
///
/// # Errors
///
/// When a step cannot be done or a check fails.
pub fn play(options: &StoryOptions, narrate: &dyn Fn(&str)) -> Result<StoryReport> {
    let temp = match &options.work {
        Some(dir) => tempfile::Builder::new().prefix("story-").tempdir_in(dir)?,
        None => tempfile::Builder::new().prefix("stasis-story-").tempdir()?,
    };
    let model = FakeModel::start(script::script())?;
    let stage = Stage::new(options, &model, narrate)?;
    // The containers' `/tmp`: A's, then, emptied, B's. The same path matters: kilo binds a
    // session to the directory it was created in, and a new container has the same paths.
    let root = temp.path().join("tmp");
    std::fs::create_dir_all(&root)?;
    let a = act_a(&stage, &root, &temp.path().join("sidecar-a.log"))?;
    std::fs::remove_dir_all(&root).context("emptying the root for container B")?;
    std::fs::create_dir_all(&root)?;
    act_b(&stage, &root, a)
}

/// What container A left: the facts B is checked against.
struct LeftByA {
    session: String,
    held: Vec<crate::KiloMessage>,
    watermark: u64,
    deltas_sent: usize,
    deltas_stored: usize,
    cut: CutReply,
}

fn act_a(stage: &Stage<'_>, root: &Path, log: &Path) -> Result<LeftByA> {
    stage.say(&format!("1. Container A boots (town {})", stage.town));
    let mut a = ContainerA::boot(stage, root, log)?;
    stage.say(&format!(
        "   stasis-client boot as {} (its bootstrap token exchanged for a container token); kilo \
         serve at {} with the sidecar (on that container token) in its process group; session {}",
        a.id,
        a.kilo_url()?,
        a.session
    ));
    let prompts = [
        script::PROMPT_PLAN,
        script::PROMPT_TOOL,
        script::PROMPT_LEFT,
    ];
    for prompt in prompts {
        a.turn(prompt)?;
        stage.say(&format!("   turn done: {prompt:?}"));
    }
    let held = a.messages()?;
    checks::check_held(&held).map_err(|e| a.with_sidecar_log(&e))?;
    let (idle, watermark) = a
        .wait_snapshot_of_turn(stage, prompts.len())
        .map_err(|e| a.with_sidecar_log(&e))?;
    stage.say(&format!(
        "   stasis holds a kilo.db snapshot at watermark {watermark} (turn 3 ended at seq {idle})"
    ));
    stage.say("2. A 4th reply streams slowly; the whole process group gets SIGKILL mid-reply");
    let cut = a.kill_mid_reply(stage, script::PROMPT_LONG)?;
    stage.say(&format!(
        "   killed kilo and the sidecar after kilo sent {} pieces of the reply (stasis held {})",
        cut.deltas_sent, cut.deltas_stored
    ));
    let events = stage.api.events_after(&stage.agent_path, 0)?;
    let reply = checks::cut_reply(&events)?;
    stage.say(&format!(
        "   stasis holds {} pieces of the cut reply: {:?}",
        reply.deltas, reply.text
    ));
    Ok(LeftByA {
        session: a.session.clone(),
        held,
        watermark,
        deltas_sent: cut.deltas_sent,
        deltas_stored: cut.deltas_stored,
        cut: reply,
    })
}

fn act_b(stage: &Stage<'_>, root: &Path, a: LeftByA) -> Result<StoryReport> {
    stage.say("3. Container B boots on an empty folder: stasis-client boot, then kilo serve");
    let started = Instant::now();
    let booted = container_b::boot(stage, root, None)?;
    let dispatch = booted.mayor()?.clone();
    stage.say(&format!(
        "   boot as {} in {:.0?}: kilo.db hydrated, the Mayor's dispatch in hand ({} turns)",
        booted.container_id,
        booted.took,
        dispatch.prior_conversation.turns.len()
    ));
    let home = root.join(format!("agent-home-{MAYOR}"));
    let restored = container_b::start_kilo(stage, &home, &a.session)?;
    let recovery = started.elapsed();
    stage.say(&format!(
        "   kilo serve on the hydrated kilo.db answered with the session {:.0?} after boot began \
         (kilo's start: {:.0?})",
        recovery, restored.started_in
    ));
    stage.say("4. Checks");
    let tail = checks::check_restored(&a.held, &restored.messages)?;
    stage.say(&format!(
        "   ✓ kilo lists session {} with every finished turn ({tail:?} after them)",
        a.session
    ));
    let expected = checks::expected_dispatch_turns(&restored.messages, tail, &a.cut);
    checks::check_dispatch(&dispatch, &expected)?;
    stage.say(&format!(
        "   ✓ the dispatch's {} turns = kilo's turns + the cut reply, unfinished",
        expected.len()
    ));
    stage.say("5. A new prompt in the restored session");
    let requests = container_b::new_turn(stage, &restored.kilo, &a.session, script::PROMPT_AFTER)?;
    checks::check_resent(&requests, script::PROMPT_AFTER)?;
    stage.say("   ✓ kilo sent the model turns 1–3 in order, then the new prompt");
    let after = checks::turns_of(&restored.kilo.api().messages(&a.session)?);
    restored.kilo.stop();
    Ok(StoryReport {
        town: stage.town.clone(),
        session: a.session,
        held: checks::turns_of(&a.held),
        watermark: a.watermark,
        deltas_sent: a.deltas_sent,
        deltas_stored: a.deltas_stored,
        cut: a.cut,
        tail,
        container_b: booted.container_id,
        dispatch,
        boot_took: booted.took,
        kilo_started_in: restored.started_in,
        recovery,
        after,
    })
}

/// What every step needs.
pub(crate) struct Stage<'a> {
    api: StasisApi,
    keys: KeyRing,
    town: String,
    agent_path: String,
    model: &'a FakeModel,
    client_bin: &'a Path,
    kilo_bin: Option<&'a Path>,
    narrate: &'a dyn Fn(&str),
}

impl<'a> Stage<'a> {
    /// A fresh town on `options`' stasis, with a town token for it (the operator's: the story
    /// reads and checks with it; containers are started with bootstrap tokens instead).
    fn new(
        options: &'a StoryOptions,
        model: &'a FakeModel,
        narrate: &'a dyn Fn(&str),
    ) -> Result<Self> {
        let town = format!("story-{}", random_suffix());
        let keys = KeyRing::single(&options.secret).context("stasis's secret")?;
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let grant = Grant::new(Scope::Town(town.clone()));
        let token = keys
            .mint(&grant, now, DEFAULT_TTL)
            .context("minting the town's token")?;
        Ok(Stage {
            api: StasisApi::new(&options.url, &token),
            keys,
            agent_path: format!("/api/towns/{town}/rigs/{RIG}/agents/{MAYOR}"),
            town,
            model,
            client_bin: &options.client_bin,
            kilo_bin: options.kilo_bin.as_deref(),
            narrate,
        })
    }

    fn say(&self, line: &str) {
        (self.narrate)(line);
    }

    /// A fresh bootstrap token of the town: what a container is started with (README,
    /// "Container flow"); `stasis-client boot` exchanges it, once, for a container token.
    fn bootstrap_token(&self) -> Result<String> {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let scope = Scope::Bootstrap {
            town: self.town.clone(),
            token_id: random_suffix(),
        };
        self.keys
            .mint(&Grant::new(scope), now, DEFAULT_BOOTSTRAP_TTL)
            .context("minting a bootstrap token")
    }
}

/// Calls `check` every 50 ms until it answers `Some`, for at most `within`.
fn poll<T>(
    what: &str,
    within: Duration,
    mut check: impl FnMut() -> Result<Option<T>>,
) -> Result<T> {
    let deadline = Instant::now() + within;
    loop {
        if let Some(found) = check()? {
            return Ok(found);
        }
        if Instant::now() >= deadline {
            bail!("waited {within:?} for {what}, in vain");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// 16 hex digits, different on every call.
pub(crate) fn random_suffix() -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!(
        "{:016x}",
        RandomState::new().hash_one((nanos, std::process::id()))
    )
}
