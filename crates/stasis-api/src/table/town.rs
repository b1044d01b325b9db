//! The routes outside an agent: probes, the document, tokens and the town.

use super::{Answer, Body, Header, Operation, Params, Route, schema, schemas};
use crate::{
    endpoint::{AgentEndpoint, Endpoint, TownEndpoint},
    mayor_http, token_http, town_http,
};
use http::Method;
use stasis_domain::town::{Registry, TownEventPage};

fn town(params: &Params<'_>, endpoint: TownEndpoint) -> Endpoint {
    Endpoint::Town(params.get("town"), endpoint)
}

const OK_STATUS: &[Answer] = &[Answer {
    status: 200,
    description: "`{\"status\": \"ok\"}`",
    body: Body::Json(schema::<schemas::Health>),
    headers: &[],
}];

const NO_STORE: &[Header] = &[Header {
    name: "Cache-Control",
    description: "`no-store`: a token is never cached.",
}];

const ISSUED: &[Answer] = &[Answer {
    status: 200,
    description: "The new token and what it grants (times in ms since the epoch).",
    body: Body::Json(schema::<token_http::Issued<'static>>),
    headers: NO_STORE,
}];

const IDEMPOTENCY_KEY: (&str, &str) = (
    "Idempotency-Key",
    "1 to 255 visible ASCII characters, repeated on every retry: the retry has the first attempt's effect only.",
);

const PAGING: &[(&str, &str)] = &[
    ("after", "Exclusive cursor, an integer >= 0 (default 0)."),
    ("limit", "1 to 10,000 (default 1,000)."),
];

pub(super) static ROUTES: &[Route] = &[
    Route {
        template: "/healthz",
        public: true,
        endpoint: |_| Endpoint::Health,
        operations: &[Operation {
            method: Method::GET,
            summary: "Readiness: storage takes a write.",
            request: Body::Empty,
            query: &[],
            headers: &[],
            replies: OK_STATUS,
            errors: &[(503, &["not_ready"])],
        }],
    },
    Route {
        template: "/livez",
        public: true,
        endpoint: |_| Endpoint::Live,
        operations: &[Operation {
            method: Method::GET,
            summary: "Liveness: the process answers; storage untouched.",
            request: Body::Empty,
            query: &[],
            headers: &[],
            replies: OK_STATUS,
            errors: &[],
        }],
    },
    Route {
        template: "/openapi.json",
        public: true,
        endpoint: |_| Endpoint::OpenApi,
        operations: &[Operation {
            method: Method::GET,
            summary: "This document: OpenAPI 3.1, generated from the route table and the body types.",
            request: Body::Empty,
            query: &[],
            headers: &[],
            replies: &[Answer {
                status: 200,
                description: "The OpenAPI document.",
                body: Body::Json(schema::<serde_json::Map<String, serde_json::Value>>),
                headers: &[],
            }],
            errors: &[],
        }],
    },
    Route {
        template: "/api/token/refresh",
        public: false,
        endpoint: |_| Endpoint::RefreshToken,
        operations: &[Operation {
            method: Method::POST,
            summary: "A token like the one presented, valid from now for its lifetime.",
            request: Body::OptionalJson(schema::<token_http::RefreshBody>),
            query: &[],
            headers: &[],
            replies: ISSUED,
            errors: &[(404, &["tokens_disabled"]), (409, &["container_fenced"])],
        }],
    },
    Route {
        template: "/api/towns/{town}",
        public: false,
        endpoint: |p| town(p, TownEndpoint::State),
        operations: &[Operation {
            method: Method::GET,
            summary: "The town: draining, its containers, its mayor.",
            request: Body::Empty,
            query: &[],
            headers: &[],
            replies: &[Answer {
                status: 200,
                description: "The town (a town never seen answers the same, empty).",
                body: Body::Json(schema::<town_http::StateView<'static>>),
                headers: &[],
            }],
            errors: &[],
        }],
    },
    Route {
        template: "/api/towns/{town}/container-eviction",
        public: false,
        endpoint: |p| town(p, TownEndpoint::Eviction),
        operations: &[Operation {
            method: Method::POST,
            summary: "Announces a container's eviction: the town drains.",
            request: Body::OptionalJson(schema::<town_http::EvictionBody>),
            query: &[],
            headers: &[],
            replies: &[Answer {
                status: 202,
                description: "The town is draining.",
                body: Body::Json(schema::<town_http::EvictionView>),
                headers: &[],
            }],
            errors: &[(409, &["no_current_container"])],
        }],
    },
    Route {
        template: "/api/towns/{town}/heartbeat",
        public: false,
        endpoint: |p| town(p, TownEndpoint::Heartbeat),
        operations: &[Operation {
            method: Method::POST,
            summary: "A container's heartbeat: takes the town over, releases deferred dispatches.",
            request: Body::Json(schema::<town_http::HeartbeatBody>),
            query: &[],
            headers: &[IDEMPOTENCY_KEY],
            replies: &[Answer {
                status: 200,
                description: "The town's answer (`fenced: true` for a superseded container).",
                body: Body::Json(schema::<town_http::HeartbeatView>),
                headers: &[],
            }],
            errors: &[],
        }],
    },
    Route {
        template: "/api/towns/{town}/container-registry",
        public: false,
        endpoint: |p| town(p, TownEndpoint::Registry),
        operations: &[
            Operation {
                method: Method::GET,
                summary: "The process registry.",
                request: Body::Empty,
                query: &[],
                headers: &[],
                replies: &[Answer {
                    status: 200,
                    description: "The registry (`container_id: null`, no agents before the first PUT).",
                    body: Body::Json(schema::<Registry>),
                    headers: &[],
                }],
                errors: &[],
            },
            Operation {
                method: Method::PUT,
                summary: "Replaces the process registry.",
                request: Body::Json(schema::<town_http::RegistryBody>),
                query: &[],
                headers: &[],
                replies: &[Answer {
                    status: 200,
                    description: "The registry with `updated_at`.",
                    body: Body::Json(schema::<Registry>),
                    headers: &[],
                }],
                errors: &[(
                    413,
                    &[
                        "registry_too_large",
                        "metadata_too_large",
                        "event_too_large",
                    ],
                )],
            },
        ],
    },
    Route {
        template: "/api/towns/{town}/container-registry/agents/{rig}/{agent}",
        public: false,
        endpoint: |p| super::agent::agent(p, AgentEndpoint::RegistryEntry),
        operations: &[
            Operation {
                method: Method::PUT,
                summary: "Puts one agent's entry of the process registry, keeping the others' (an entry from another container moves the registry there; the others lose their sessions and ports).",
                request: Body::Json(schema::<town_http::RegistryEntryBody>),
                query: &[],
                headers: &[],
                replies: &[Answer {
                    status: 200,
                    description: "The whole registry with `updated_at`.",
                    body: Body::Json(schema::<Registry>),
                    headers: &[],
                }],
                errors: &[(413, &["registry_too_large"])],
            },
            Operation {
                method: Method::DELETE,
                summary: "Removes one agent's entry of the process registry (none listed: nothing changes).",
                request: Body::Empty,
                query: &[],
                headers: &[],
                replies: &[Answer {
                    status: 200,
                    description: "The whole registry.",
                    body: Body::Json(schema::<Registry>),
                    headers: &[],
                }],
                errors: &[],
            },
        ],
    },
    Route {
        template: "/api/towns/{town}/events",
        public: false,
        endpoint: |p| town(p, TownEndpoint::Events),
        operations: &[Operation {
            method: Method::GET,
            summary: "The town log, paged like an agent's.",
            request: Body::Empty,
            query: PAGING,
            headers: &[],
            replies: &[Answer {
                status: 200,
                description: "A page of the town log.",
                body: Body::Json(schema::<TownEventPage>),
                headers: &[],
            }],
            errors: &[(410, &["cursor_expired"])],
        }],
    },
    Route {
        template: "/api/towns/{town}/agents",
        public: false,
        endpoint: |p| town(p, TownEndpoint::Agents),
        operations: &[Operation {
            method: Method::GET,
            summary: "The town's agents with their newest seq and snapshot.",
            request: Body::Empty,
            query: &[],
            headers: &[],
            replies: &[Answer {
                status: 200,
                description: "The agents.",
                body: Body::Json(schema::<town_http::AgentsView>),
                headers: &[],
            }],
            errors: &[],
        }],
    },
    Route {
        template: "/api/towns/{town}/mayor/message",
        public: false,
        endpoint: |p| town(p, TownEndpoint::MayorMessage),
        operations: &[Operation {
            method: Method::POST,
            summary: "A message for the Mayor: stored, then delivered, re-dispatched or deferred.",
            request: Body::Json(schema::<mayor_http::MessageBody>),
            query: &[],
            headers: &[IDEMPOTENCY_KEY],
            replies: &[
                Answer {
                    status: 200,
                    description: "`deliver` or `redispatch`.",
                    body: Body::Json(schema::<mayor_http::MessageView>),
                    headers: &[],
                },
                Answer {
                    status: 202,
                    description: "`deferred`: the town is draining.",
                    body: Body::Json(schema::<mayor_http::MessageView>),
                    headers: &[],
                },
            ],
            errors: &[
                (404, &["mayor_not_found"]),
                (409, &["producer_seq_stale"]),
                (413, &["message_too_large"]),
            ],
        }],
    },
    Route {
        template: "/api/towns/{town}/container-token",
        public: false,
        endpoint: |p| town(p, TownEndpoint::ContainerToken),
        operations: &[Operation {
            method: Method::POST,
            summary: "A container token for one container of the town.",
            request: Body::Json(schema::<token_http::ContainerTokenBody>),
            query: &[],
            headers: &[],
            replies: ISSUED,
            errors: &[(404, &["tokens_disabled"]), (409, &["container_fenced"])],
        }],
    },
];
