//! Drain, on SIGTERM: tell the town the container is being evicted, then flush every
//! registered agent's kilo.db within a time budget.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::boot::{AgentOutcome, kilo_db_path};
use crate::error::{Error, Result};
use crate::http::Client;
use crate::http::credentials::token_file;
use crate::ids::AgentRef;
use crate::snapshot::{self, PushOptions, PushReceipt};
use crate::town::{self, RegisteredAgent};

/// The default budget: the seed's 10 minutes, leaving 5 of Cloudflare's 15 before SIGKILL.
pub const DEFAULT_BUDGET: Duration = Duration::from_secs(600);

/// How a drain proceeds.
#[derive(Debug, Clone)]
pub struct DrainOptions {
    /// This container's id.
    pub container_id: String,
    /// Where agent homes live (`/tmp` in a container).
    pub root: PathBuf,
    /// Time for everything: eviction, registry, every push.
    pub budget: Duration,
    /// The eviction's reason (`sigterm`).
    pub reason: String,
    /// Pushes run at once (at least 1).
    pub parallel: usize,
}

/// What flushing one agent did.
#[derive(Debug)]
pub enum Flush {
    /// Its snapshot is stored.
    Flushed(PushReceipt),
    /// It has no kilo.db here (never started writing): nothing to keep.
    NoLocalDb,
    /// The budget ran out before it was flushed.
    OutOfTime,
    /// Not pushed: stasis fenced this container (see [`DrainReport::fenced`]).
    Fenced,
    /// It failed.
    Failed(Error),
}

/// What a drain did.
#[derive(Debug)]
pub struct DrainReport {
    /// Why the eviction notice failed, when it did (the flush went on regardless).
    pub eviction_error: Option<Error>,
    /// One outcome per registered agent, the Mayor first, then in registry order.
    pub agents: Vec<AgentOutcome<Flush>>,
    /// Time spent.
    pub elapsed: Duration,
    /// Set when stasis fenced this container during the drain (another container took the
    /// town over): every push stopped at once.
    pub fenced: Option<Error>,
}

impl DrainReport {
    /// True when the eviction was recorded and every agent with a kilo.db was flushed.
    pub fn complete(&self) -> bool {
        self.fenced.is_none()
            && self.eviction_error.is_none()
            && self
                .agents
                .iter()
                .all(|a| matches!(a.result, Flush::Flushed(_) | Flush::NoLocalDb))
    }
}

/// Binds the client to `options.container_id` (its container token from [`token_file`], or a
/// fresh one), reads the town's state and registry, posts the eviction (a failure is reported,
/// not fatal), and pushes each registered agent's [`kilo_db_path`] before `options.budget` runs
/// out, calling `on_agent` as each ends. The copy of a locked database waits no longer than
/// the budget either. Once stasis fences a push (409 `container_fenced`), no other push starts.
///
/// Refuses to evict or flush ([`Error::Superseded`]) when another container has taken the
/// town over: the town's `current_container_id` (set by a heartbeat) names another one, or,
/// before any container heartbeat, the registry does. Its snapshots are newer than ours, and
/// our eviction would stop its dispatches. The registry may name an older container: the one
/// whose agents this container hydrated at boot.
pub fn drain(
    client: &Client,
    town: &str,
    options: &DrainOptions,
    on_agent: &(dyn Fn(&AgentOutcome<Flush>) + Sync),
) -> Result<DrainReport> {
    let started = Instant::now();
    let deadline = started + options.budget;
    let ours = options.container_id.as_str();
    crate::ids::check_id("container", ours)?;
    client.bind_container(town, ours, Some(&token_file(&options.root, ours)))?;
    let state = town::state(client, town, Some(deadline))?;
    let registry = town::registry(client, town, Some(deadline))?;
    let owner = state
        .current_container_id
        .as_deref()
        .or(registry.container_id.as_deref());
    if let Some(owner) = owner.filter(|owner| !owner.is_empty() && *owner != ours) {
        return Err(Error::Superseded {
            ours: ours.to_owned(),
            current: owner.to_owned(),
        });
    }
    let eviction_error = town::evict(client, town, ours, &options.reason, Some(deadline)).err();
    let mut agents = registry.agents;
    // The Mayor first: losing its conversation is what hurts most.
    agents.sort_by_key(|a| a.role != "mayor");
    let queue = Mutex::new(agents.into_iter().enumerate().collect::<VecDeque<_>>());
    let done = Mutex::new(Vec::new());
    let fenced: Mutex<Option<Error>> = Mutex::new(None);
    std::thread::scope(|scope| {
        for _ in 0..options.parallel.max(1) {
            scope.spawn(|| {
                while let Some((index, agent)) = next(&queue) {
                    let outcome =
                        flush_unless_fenced(client, town, agent, options, deadline, &fenced);
                    on_agent(&outcome);
                    if let Ok(mut done) = done.lock() {
                        done.push((index, outcome));
                    }
                }
            });
        }
    });
    let mut done = done
        .into_inner()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    done.sort_by_key(|(index, _)| *index);
    Ok(DrainReport {
        eviction_error,
        agents: done.into_iter().map(|(_, outcome)| outcome).collect(),
        elapsed: started.elapsed(),
        fenced: fenced.into_inner().unwrap_or_else(|p| p.into_inner()),
    })
}

/// [`flush`], unless stasis has fenced this container already; a fenced push fences the rest.
fn flush_unless_fenced(
    client: &Client,
    town: &str,
    agent: RegisteredAgent,
    options: &DrainOptions,
    deadline: Instant,
    fenced: &Mutex<Option<Error>>,
) -> AgentOutcome<Flush> {
    let already = fenced.lock().map(|f| f.is_some()).unwrap_or(true);
    if already {
        return AgentOutcome {
            path: kilo_db_path(&options.root, &agent.agent_id),
            agent,
            result: Flush::Fenced,
        };
    }
    let mut outcome = flush(client, town, agent, options, deadline);
    let is_fenced = matches!(&outcome.result, Flush::Failed(error) if error.is_fenced());
    if is_fenced
        && let Flush::Failed(error) = std::mem::replace(&mut outcome.result, Flush::Fenced)
        && let Ok(mut first) = fenced.lock()
    {
        first.get_or_insert(error);
    }
    outcome
}

fn next(queue: &Mutex<VecDeque<(usize, RegisteredAgent)>>) -> Option<(usize, RegisteredAgent)> {
    queue.lock().ok()?.pop_front()
}

fn flush(
    client: &Client,
    town: &str,
    agent: RegisteredAgent,
    options: &DrainOptions,
    deadline: Instant,
) -> AgentOutcome<Flush> {
    let path = kilo_db_path(&options.root, &agent.agent_id);
    let result = match AgentRef::new(town, &agent.rig_id, &agent.agent_id) {
        Err(e) => Flush::Failed(e),
        Ok(_) if Instant::now() >= deadline => Flush::OutOfTime,
        Ok(_) if !path.is_file() => Flush::NoLocalDb,
        Ok(agent_ref) => {
            let mut push_options = PushOptions {
                deadline: Some(deadline),
                ..PushOptions::default()
            };
            let left = deadline.saturating_duration_since(Instant::now());
            let backup = &mut push_options.backup;
            backup.lock_wait = backup.lock_wait.min(left);
            match snapshot::push(client, &agent_ref, &path, &push_options) {
                Ok(receipt) => Flush::Flushed(receipt),
                Err(_) if Instant::now() >= deadline => Flush::OutOfTime,
                Err(e) => Flush::Failed(e),
            }
        }
    };
    AgentOutcome {
        agent,
        path,
        result,
    }
}
