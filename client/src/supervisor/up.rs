//! `stasis-client up`, a container's entrypoint: boot (heartbeat, hydrate every agent of the
//! registry, take the dispatches), then one supervisor process per agent (`stasis-client
//! supervise ...`, this same binary), each agent of the registry and each one given on the
//! command line. Like tini it may be PID 1: it reaps every child and every orphan that lands on
//! it (it makes itself a child subreaper when it is not PID 1), and forwards SIGTERM/SIGINT to its
//! supervisors, which evict their agents. It exits once every supervisor has.

use std::collections::HashMap;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, MutexGuard};

use rustix::process::{Pid, Signal, WaitOptions, kill_process};
use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

use crate::boot::{self, BootOptions};
use crate::error::{Error, Result, exit};
use crate::http::Client;
use crate::sidecar::Log;
use crate::town::RegisteredAgent;

/// An agent to start besides the registry's: `RIG/AGENT:ROLE`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentSpec {
    /// Its rig.
    pub rig: String,
    /// Its id.
    pub agent: String,
    /// Its role.
    pub role: String,
}

impl std::str::FromStr for AgentSpec {
    type Err = String;

    fn from_str(text: &str) -> std::result::Result<Self, String> {
        let bad = || format!("{text:?} is not RIG/AGENT:ROLE (e.g. hq/mayor:mayor)");
        let (rig, rest) = text.split_once('/').ok_or_else(bad)?;
        let (agent, role) = rest.split_once(':').ok_or_else(bad)?;
        crate::ids::check_id("rig", rig).map_err(|e| e.to_string())?;
        crate::ids::check_id("agent", agent).map_err(|e| e.to_string())?;
        if role.is_empty() {
            return Err(bad());
        }
        Ok(AgentSpec {
            rig: rig.to_owned(),
            agent: agent.to_owned(),
            role: role.to_owned(),
        })
    }
}

/// How `up` runs.
#[derive(Debug, Clone)]
pub struct UpOptions {
    /// The town.
    pub town: String,
    /// This container's id.
    pub container_id: String,
    /// Where agent homes live.
    pub root: PathBuf,
    /// Agents to start besides the registry's.
    pub agents: Vec<AgentSpec>,
    /// Every agent's working folder (`{root}/agent-home-{agent}/work`) kept as its workspace.
    pub workspaces: bool,
    /// Options handed to every `supervise` (before the `--`).
    pub supervise_args: Vec<String>,
    /// The runtime's command line.
    pub command: Vec<String>,
    /// The `stasis-client` binary to run `supervise` with (this one).
    pub exe: PathBuf,
}

/// Boots, starts a supervisor per agent, reaps until every supervisor has exited. Answers the
/// exit code: 9 when any supervisor was fenced, else the first non-zero one, else 0.
pub fn up(client: &Client, options: &UpOptions, log: &Log) -> Result<u8> {
    if rustix::process::getpid() != Pid::INIT
        && let Err(e) = rustix::process::set_child_subreaper(Some(rustix::process::getpid()))
    {
        log(&format!(
            "could not become a child subreaper ({e}): orphans go to PID 1"
        ));
    }
    log(&format!(
        "container {} of town {}: heartbeat, then every agent's kilo.db",
        options.container_id, options.town
    ));
    let children = Children::default();
    forward_signals(children.clone(), Arc::clone(log))?;
    let boot_options = BootOptions {
        container_id: options.container_id.clone(),
        root: options.root.clone(),
        progress: false,
        chunk_cache: None,
    };
    let report = boot::boot(client, &options.town, &boot_options, &mut |outcome| {
        log(&format!(
            "boot: {} {:?}",
            outcome.agent.agent_id, outcome.result
        ));
    })?;
    let dispatches = report.dispatches();
    let mut agents: Vec<RegisteredAgent> = report.agents.into_iter().map(|a| a.agent).collect();
    for spec in &options.agents {
        if !agents
            .iter()
            .any(|a| a.agent_id == spec.agent && a.rig_id == spec.rig)
        {
            agents.push(RegisteredAgent {
                agent_id: spec.agent.clone(),
                rig_id: spec.rig.clone(),
                role: spec.role.clone(),
                session_id: None,
                port: None,
            });
        }
    }
    for agent in &agents {
        let dispatch = dispatches.iter().find(|d| {
            d.get("agent_id").and_then(serde_json::Value::as_str) == Some(&agent.agent_id)
        });
        let dispatch_file = match dispatch {
            Some(dispatch) => Some(write_dispatch(&options.root, &agent.agent_id, dispatch)?),
            None => None,
        };
        if children.terminating() {
            break;
        }
        let pid = spawn_supervisor(client, options, agent, dispatch_file.as_deref())?;
        log(&format!(
            "supervising {} ({}, rig {}) as pid {pid}",
            agent.agent_id, agent.role, agent.rig_id
        ));
        children.add(pid, &agent.agent_id);
    }
    Ok(reap(&children, log))
}

/// The running supervisors, by pid.
#[derive(Debug, Clone, Default)]
struct Children {
    inner: Arc<Mutex<(HashMap<i32, String>, bool)>>,
}

impl Children {
    fn lock(&self) -> MutexGuard<'_, (HashMap<i32, String>, bool)> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn add(&self, pid: i32, name: &str) {
        let mut inner = self.lock();
        inner.0.insert(pid, name.to_owned());
        if inner.1
            && let Some(pid) = Pid::from_raw(pid)
        {
            // A signal came while it started: it gets it too.
            let _ = kill_process(pid, Signal::TERM);
        }
    }

    fn remove(&self, pid: i32) -> Option<String> {
        self.lock().0.remove(&pid)
    }

    fn is_empty(&self) -> bool {
        self.lock().0.is_empty()
    }

    fn terminating(&self) -> bool {
        self.lock().1
    }

    /// Marks the termination and sends SIGTERM to every supervisor.
    fn terminate(&self) -> usize {
        let mut inner = self.lock();
        inner.1 = true;
        for pid in inner.0.keys().filter_map(|&pid| Pid::from_raw(pid)) {
            let _ = kill_process(pid, Signal::TERM);
        }
        inner.0.len()
    }
}

/// SIGTERM or SIGINT to `up` becomes SIGTERM to every supervisor (each evicts its agent).
fn forward_signals(children: Children, log: Log) -> Result<()> {
    let mut signals = Signals::new([SIGTERM, SIGINT])
        .map_err(|e| Error::io("installing the SIGTERM/SIGINT handlers", e))?;
    std::thread::Builder::new()
        .name("up-signals".into())
        .spawn(move || {
            for signal in signals.forever() {
                let name = if signal == SIGTERM {
                    "SIGTERM"
                } else {
                    "SIGINT"
                };
                let count = children.terminate();
                log(&format!("{name}: forwarded to {count} supervisor(s)"));
            }
        })
        .map(drop)
        .map_err(|e| Error::io("starting the signal thread", e))
}

fn write_dispatch(root: &Path, agent: &str, dispatch: &serde_json::Value) -> Result<PathBuf> {
    let path = root.join(format!("stasis-dispatch-{agent}.json"));
    let bytes = serde_json::to_vec(dispatch)
        .map_err(|e| Error::Config(format!("encoding a dispatch: {e}")))?;
    let mut file = crate::atomic_write::AtomicFile::create(&path)?;
    std::io::Write::write_all(file.file(), &bytes)
        .map_err(|e| Error::io(format!("writing {}", path.display()), e))?;
    file.commit()?;
    Ok(path)
}

fn spawn_supervisor(
    client: &Client,
    options: &UpOptions,
    agent: &RegisteredAgent,
    dispatch: Option<&Path>,
) -> Result<i32> {
    let mut command = Command::new(&options.exe);
    command
        .arg("supervise")
        .args(["--town", &options.town, "--rig", &agent.rig_id])
        .args(["--agent", &agent.agent_id, "--role", &agent.role])
        .args(["--container-id", &options.container_id])
        .arg("--root")
        .arg(&options.root);
    if let Some(dispatch) = dispatch {
        command.arg("--dispatch").arg(dispatch);
    }
    if options.workspaces {
        // The working folder `supervise` defaults to.
        let workdir = crate::boot::agent_home(&options.root, &agent.agent_id).join("work");
        command.arg("--workspace").arg(workdir);
    }
    command
        .args(&options.supervise_args)
        .arg("--")
        .args(&options.command)
        .env("STASIS_URL", client.config().base_url())
        .stdin(Stdio::null())
        // Its own group: a terminal's Ctrl-C reaches `up` only, which forwards it once.
        .process_group(0);
    if let Some(token) = client.config().token() {
        command.env("STASIS_TOKEN", token);
    }
    let child = command
        .spawn()
        .map_err(|e| Error::io(format!("starting {} supervise", options.exe.display()), e))?;
    // Dropped without waiting: the reaper collects it by pid.
    i32::try_from(child.id()).map_err(|_| Error::Config("a pid over i32".into()))
}

/// `waitpid(-1)` until no supervisor is left: every orphan is reaped on the way.
fn reap(children: &Children, log: &Log) -> u8 {
    let mut code = exit::OK;
    while !children.is_empty() {
        let (pid, status) = match rustix::process::wait(WaitOptions::empty()) {
            Ok(Some(reaped)) => reaped,
            Ok(None) => continue,
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => {
                log(&format!(
                    "waitpid failed ({e}) with supervisors left: giving up on them"
                ));
                code = exit::LOCAL;
                break;
            }
        };
        let Some(name) = children.remove(pid.as_raw_nonzero().get()) else {
            continue;
        };
        let exited = status
            .exit_status()
            .map(|c| u8::try_from(c).unwrap_or(u8::MAX));
        let signal = status.terminating_signal();
        log(&format!(
            "the supervisor of {name} (pid {}) ended: {}",
            pid.as_raw_nonzero(),
            match (exited, signal) {
                (Some(c), _) => format!("exit code {c}"),
                (None, Some(s)) => format!("signal {s}"),
                _ => "unknown status".to_owned(),
            }
        ));
        let this = exited.unwrap_or(exit::LOCAL);
        if this == exit::FENCED || (code == exit::OK && this != exit::OK) {
            code = this;
        }
    }
    // Orphans that died last (a supervisor's runtime killed as it exited) are collected too.
    while let Ok(Some(_)) = rustix::process::wait(WaitOptions::NOHANG) {}
    code
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_agent_spec_is_rig_agent_and_role() {
        let spec: AgentSpec = "hq/polecat-1:polecat".parse().expect("a spec");
        assert_eq!(
            spec,
            AgentSpec {
                rig: "hq".into(),
                agent: "polecat-1".into(),
                role: "polecat".into()
            }
        );
        for bad in ["hq", "hq/mayor", "hq/mayor:", "h q/mayor:mayor"] {
            assert!(bad.parse::<AgentSpec>().is_err(), "{bad}");
        }
    }
}
