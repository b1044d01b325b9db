//! What a reader sees of the part of a world a request could touch: the
//! town, and the target agent (for a town request, the Mayor, whose log a
//! Mayor message writes to). A refused request, and any read, must leave it
//! exactly as it was.

use std::panic::{AssertUnwindSafe, catch_unwind};

use super::request::Target;
use super::world::World;
use crate::Value;
use crate::town::{AgentState, TownState};

/// The visible state around one target.
#[derive(Debug, Clone, PartialEq)]
pub struct Visible {
    town: TownState,
    agent: Option<(String, AgentState)>,
}

/// Reads the visible state around `target`; an error (the failed read's
/// message) when a read of it breaks.
pub fn read(world: &World, target: Target) -> Result<Option<Visible>, String> {
    if target == Target::Nowhere {
        return Ok(None);
    }
    catch_unwind(AssertUnwindSafe(|| {
        let town = world.town.state();
        let agent = match target {
            Target::Agent(i) => world.agents.get(i).cloned(),
            _ => mayor(&town.town).map(|(rig, agent)| world.town.agent(&rig, &agent)),
        };
        let agent = agent.map(|a| (a.path(""), a.state()));
        Some(Visible { town, agent })
    }))
    .map_err(|panic| panic_text(&panic))
}

/// The Mayor's rig and agent ids, from the town's state.
fn mayor(town: &Value) -> Option<(String, String)> {
    let mayor = town.get("mayor")?;
    let text = |field: &str| mayor.get(field)?.as_str().map(str::to_owned);
    Some((text("rig_id")?, text("agent_id")?))
}

/// What differs between two readings, part by part, shortened.
pub fn difference(before: &Visible, after: &Visible) -> Option<String> {
    let mut parts = Vec::new();
    let (b, a) = (&before.town, &after.town);
    compare(&mut parts, "town", &b.town, &a.town);
    compare(&mut parts, "registry", &b.registry, &a.registry);
    compare(&mut parts, "town events", &b.events, &a.events);
    compare(&mut parts, "town agents", &b.agents, &a.agents);
    match (&before.agent, &after.agent) {
        (Some((path, b)), Some((_, a))) => {
            compare(&mut parts, &format!("{path}: record"), &b.record, &a.record);
            compare(&mut parts, &format!("{path}: log"), &b.log, &a.log);
            compare(
                &mut parts,
                &format!("{path}: checkpoint"),
                &b.checkpoint,
                &a.checkpoint,
            );
            compare(&mut parts, &format!("{path}: memory"), &b.memory, &a.memory);
            compare(
                &mut parts,
                &format!("{path}: snapshot"),
                &b.snapshot,
                &a.snapshot,
            );
        }
        (b, a) => compare(&mut parts, "the Mayor", &b.is_some(), &a.is_some()),
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

fn compare<T: PartialEq + std::fmt::Debug>(parts: &mut Vec<String>, name: &str, b: &T, a: &T) {
    if b != a {
        parts.push(format!(
            "{name} was {} and became {}",
            short(&format!("{b:?}")),
            short(&format!("{a:?}"))
        ));
    }
}

fn short(text: &str) -> String {
    const MAX: usize = 400;
    if text.len() <= MAX {
        return text.to_owned();
    }
    let cut = (0..=MAX)
        .rev()
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0);
    format!("{}… ({} bytes)", &text[..cut], text.len())
}

/// A caught panic's message.
pub fn panic_text(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
        .unwrap_or_else(|| "a panic without a message".to_owned())
}
