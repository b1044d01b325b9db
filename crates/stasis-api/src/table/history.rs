//! The routes of an agent's history: its versions by kind, and its pins.

use super::{
    Body, Operation, Route, agent::agent, agent::delete, agent::json, agent::read, schema,
};
use crate::{endpoint::AgentEndpoint, history_http, restore_http};
use http::Method;
use stasis_domain::{
    history::{HistoryPage, Pin},
    restore::Restored,
};

const PIN: Body = Body::Json(schema::<Pin>);

pub(super) static ROUTES: &[Route] = &[
    Route {
        template: "/api/towns/{town}/rigs/{rig}/agents/{agent}/history",
        public: false,
        endpoint: |p| agent(p, AgentEndpoint::History),
        operations: &[Operation {
            method: Method::GET,
            summary: "The versions of one kind (current and kept), oldest first.",
            request: Body::Empty,
            query: &[
                (
                    "kind",
                    "Required: `db_snapshot`, `workspace`, `checkpoint` or `memory`.",
                ),
                ("key", "One memory key's versions (with `kind=memory`)."),
                (
                    "after",
                    "Versions after this one (the previous page's `next_after`).",
                ),
                ("limit", "1 to 1,000 (default 100)."),
            ],
            headers: &[],
            replies: &[json(
                200,
                "A page of versions.",
                Body::Json(schema::<HistoryPage>),
            )],
            errors: &[],
        }],
    },
    Route {
        template: "/api/towns/{town}/rigs/{rig}/agents/{agent}/history/pins",
        public: false,
        endpoint: |p| agent(p, AgentEndpoint::HistoryPins),
        operations: &[read(
            "Every pin, by name.",
            &[json(
                200,
                "The pins.",
                Body::Json(schema::<history_http::PinsView>),
            )],
            &[],
        )],
    },
    Route {
        template: "/api/towns/{town}/rigs/{rig}/agents/{agent}/history/pins/{pin}",
        public: false,
        endpoint: |p| agent(p, AgentEndpoint::HistoryPin(p.get("pin"))),
        operations: &[
            read(
                "One pin.",
                &[json(200, "The pin.", PIN)],
                &[(404, &["pin_not_found"])],
            ),
            Operation {
                method: Method::PUT,
                summary: "Sets a pin at a seq (the log's last when `seq` is absent): every \
                          version that point resolves to is kept until the pin goes.",
                request: Body::OptionalJson(schema::<history_http::PinBody>),
                query: &[],
                headers: &[],
                replies: &[
                    json(201, "Set.", PIN),
                    json(200, "Moved (the pin existed).", PIN),
                ],
                errors: &[(409, &["too_many_pins"])],
            },
            delete("Removes the pin.", &[(404, &["pin_not_found"])]),
        ],
    },
    Route {
        template: "/api/towns/{town}/rigs/{rig}/agents/{agent}/restore",
        public: false,
        endpoint: |p| agent(p, AgentEndpoint::Restore),
        operations: &[Operation {
            method: Method::POST,
            summary: "Restores the agent in place: its kilo.db, workspace, checkpoint and \
                      memory become what they were at a point (`seq`, `at`, or `kind` with \
                      `version`) or at a pin's seq (`pin`: an undo handle is one). New \
                      versions name the old chunks; a `stasis.restored` event records it; the \
                      answer's `undo.pin` puts the agent back. A live container holding the \
                      agent refuses it (409 `agent_live`) unless `fence` is true.",
            request: Body::Json(schema::<restore_http::RestoreBody>),
            query: &[],
            headers: &[],
            replies: &[json(
                200,
                "What each kind became, and the undo handle.",
                Body::Json(schema::<Restored>),
            )],
            errors: &[
                (404, &["version_not_found", "pin_not_found"]),
                (409, &["agent_live", "too_many_pins", "container_fenced"]),
            ],
        }],
    },
];
