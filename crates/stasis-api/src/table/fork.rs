//! The route of a fork: a new agent from this one's state at a point.

use super::{Body, Operation, Route, agent::agent, agent::json, schema};
use crate::{agent_http, endpoint::AgentEndpoint, fork_http};
use http::Method;

pub(super) static ROUTES: &[Route] = &[Route {
    template: "/api/towns/{town}/rigs/{rig}/agents/{agent}/fork",
    public: false,
    endpoint: |p| agent(p, AgentEndpoint::Fork),
    operations: &[Operation {
        method: Method::POST,
        summary: "Forks the agent at a point (`{\"seq\"}`, `{\"at\"}` or `{\"kind\",\"version\"}`) \
                  into a new agent of the same town (any rig): its events up to the point, and \
                  its kilo.db, workspace, checkpoint and memory as of then, with `forked_from` \
                  in its record. No chunk is copied: the fork names its source's chunks, which \
                  the source keeps while the fork lives, even once the source is deleted.",
        request: Body::Json(schema::<fork_http::ForkBody>),
        query: &[],
        headers: &[],
        replies: &[json(
            201,
            "The fork's record.",
            Body::Json(schema::<agent_http::AgentView<'static>>),
        )],
        errors: &[
            (400, &["invalid_request"]),
            (404, &["agent_not_found", "version_not_found"]),
            (409, &["agent_exists", "chunks_missing", "mayor_exists"]),
            (503, &["snapshot_propagating", "chunk_being_collected"]),
        ],
    }],
}];
