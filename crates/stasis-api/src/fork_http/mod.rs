//! `POST /agents/{agent}/fork`: a new agent of the same town (any rig)
//! started from this agent's state at a point of its history. How it is
//! stored is `stasis_domain::fork`'s doc; this runs its steps across the
//! objects:
//!
//! 1. the source's record (404 `agent_not_found`) and the point (400, or
//!    404 `version_not_found`), then the target must not exist (409
//!    `agent_exists`), all before anything is written;
//! 2. what the point's versions name, located ([`chunks::locate`]);
//! 3. each origin holds the fork's chunks ([`chunks::hold`]), the fork's
//!    lineage key is written, and the fork adopts the chunks;
//! 4. one import of the fork's state ([`copy::stage`]), the town's registry,
//!    then the import's commit with the lineage row and the fork's current
//!    versions as history.
//!
//! A refusal after step 3 releases the holds and drops what was staged.
//! The chunk steps, and a fork's side of a destroy, are in
//! [`crate::fork_chunks`].

#![allow(
    clippy::disallowed_macros,
    clippy::disallowed_methods,
    reason = "the JsonSchema derive builds its schemas with json! and to_value over our own types, never stored data"
)]

mod copy;

use crate::{Snapshots, body, error::ApiError, fork_chunks as chunks};
use bytes::Bytes;
use http::{Response, StatusCode};
use serde::Deserialize;
use stasis_domain::{
    DomainError, Refusal,
    chunk_store::origins::origin_name,
    fork::{ForkedFrom, Lineage},
    history::PointBody,
    ids::{self, AgentKey},
    operation::{agent as op, town as town_op},
};

/// The body of `POST /fork`.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ForkBody {
    /// The point: `{"seq"}`, `{"at"}` or `{"kind","version"}`.
    point: PointBody,
    /// The fork's rig (the source's when absent).
    #[serde(default)]
    rig: Option<String>,
    /// The fork's id.
    agent: String,
    /// The fork's role: the source's when absent (a mayor's fork is
    /// `mayor-fork`: a town has one mayor).
    #[serde(default)]
    role: Option<String>,
}

/// The role a fork gets when none is given.
const MAYOR_FORK_ROLE: &str = "mayor-fork";

/// `POST /fork`: answers 201 with the fork's record.
pub async fn fork<O: Snapshots>(
    objects: &O,
    source: &AgentKey,
    body: &Bytes,
) -> Result<Response<Bytes>, ApiError> {
    let wanted: ForkBody = body::parse_json(body)?;
    let rig = wanted.rig.unwrap_or_else(|| source.rig.clone());
    ids::check_id("rig", &rig)?;
    ids::check_id("agent", &wanted.agent)?;
    let target = AgentKey {
        town: source.town.clone(),
        rig,
        agent: wanted.agent,
    };
    if target == *source {
        return Err(ApiError::invalid_request(
            "an agent cannot be forked onto itself",
        ));
    }
    let summary = objects.agent(source, op::get_agent()).await?;
    let role = match wanted.role {
        Some(role) => role,
        None if summary.role == "mayor" => MAYOR_FORK_ROLE.to_owned(),
        None => summary.role.clone(),
    };
    stasis_domain::agent_state::check_registration(&role, None)?;
    let state = objects
        .agent(source, op::fork_resolve(wanted.point))
        .await?;
    refuse_existing(objects, &target).await?;
    let plan = copy::plan(objects, source, &state).await?;
    let source_lineage = objects.agent(source, op::fork_lineage()).await?;
    let mut ancestors = vec![origin_name(&source.rig, &source.agent)];
    ancestors.extend(source_lineage.map(|l| l.ancestors).unwrap_or_default());
    let lineage = Lineage {
        forked_from: ForkedFrom {
            rig: source.rig.clone(),
            agent: source.agent.clone(),
            seq: state.seq,
        },
        ancestors,
        holds_in: plan.taken.by_origin().into_keys().collect(),
        created_at: objects.now_ms(),
    };
    let held = chunks::hold(objects, &target, &plan.taken).await;
    let outcome = match held {
        Ok(_) => write(objects, (source, &target), (&state, role, &plan, &lineage)).await,
        Err(err) => Err(err),
    };
    if let Err(err) = outcome {
        // Nothing of the fork was committed: its holds go.
        chunks::release(objects, &target, &lineage.holds_in).await;
        chunks::delete_lineage_key(objects, &target).await;
        return Err(err);
    }
    crate::agent_http::view(objects, &target, StatusCode::CREATED).await
}

/// 409 `agent_exists` when the target is registered, has state, or is a
/// fork already.
async fn refuse_existing(objects: &impl Snapshots, target: &AgentKey) -> Result<(), ApiError> {
    let registered = match objects.agent(target, op::get_agent()).await {
        Ok(_) => true,
        Err(err) if err.code() == "agent_not_found" => false,
        Err(err) => return Err(err.into()),
    };
    let head = objects.agent(target, op::export_head()).await?;
    let has_state = head.last_seq > 0 || head.checkpoint.is_some();
    let forked = objects.agent(target, op::fork_lineage()).await?.is_some();
    let stored = objects.snapshot_read(target, false).await?.is_some()
        || crate::workspace_http::summary(objects, target)
            .await?
            .is_some();
    if registered || has_state || forked || stored {
        return Err(DomainError::Conflict(Refusal::new(
            "agent_exists",
            format!(
                "agent {:?} of rig {:?} exists; fork into a new id, or delete it first",
                target.agent, target.rig
            ),
        ))
        .into());
    }
    Ok(())
}

/// Steps 3 (after the holds) and 4: the lineage key, the adoption, the
/// import, the registry and the commit.
async fn write<O: Snapshots>(
    objects: &O,
    (source, target): (&AgentKey, &AgentKey),
    (state, role, plan, lineage): (
        &stasis_domain::history::StateAt,
        String,
        &copy::Plan,
        &Lineage,
    ),
) -> Result<(), ApiError> {
    chunks::write_lineage_key(objects, target, &lineage.ancestors).await?;
    chunks::adopt(objects, target, &plan.taken).await?;
    let ticket = objects.agent(target, op::import_begin(None)).await?;
    let committed = async {
        copy::stage(objects, (source, target), ticket, (state, role, plan)).await?;
        let checked = objects.agent(target, op::import_check(ticket)).await?;
        let role = checked.role.unwrap_or_default();
        let register = town_op::register_agent(target.rig.clone(), target.agent.clone(), role);
        objects.town(&target.town, register).await?;
        let commit = op::fork_commit(ticket, lineage.clone(), state.clone());
        objects.agent(target, commit).await?;
        Ok::<_, ApiError>(())
    }
    .await;
    if committed.is_err() {
        let _ = objects.agent(target, op::import_abort(ticket)).await;
        let _ = objects.agent(target, op::fork_clear_lineage()).await;
        let forget = town_op::forget_agent(target.rig.clone(), target.agent.clone());
        let _ = objects.town(&target.town, forget).await;
        let _ = objects.snapshot_sweep(target).await;
    }
    committed
}
