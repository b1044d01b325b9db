use super::*;
use crate::route::{self, AgentEndpoint, TownEndpoint};
use crate::ui::Asset;
use stasis_domain::ids::AgentKey;

/// A path of `route` with every parameter set to a valid id (a chunk's
/// name to a sha256).
fn sample_path(route: &Route) -> String {
    segments(route.template)
        .map(|segment| match param_name(segment) {
            Some("sha256") => "ab".repeat(32),
            Some(name) => format!("{name}-1"),
            None => segment.to_owned(),
        })
        .fold(String::new(), |path, segment| path + "/" + &segment)
}

#[test]
fn every_route_resolves_to_its_endpoint_for_each_method_and_only_those() {
    let every = [
        Method::GET,
        Method::HEAD,
        Method::PUT,
        Method::POST,
        Method::DELETE,
        Method::PATCH,
    ];
    for route in routes() {
        let path = sample_path(route);
        for method in &every {
            let declared = route.methods().any(|m| m == method)
                || (*method == Method::HEAD && route.methods().any(|m| *m == Method::GET));
            let resolved = route::resolve(&path, method);
            match resolved {
                Ok(endpoint) => {
                    assert!(declared, "{method} {path} resolved but is not declared");
                    assert_eq!(endpoint.template(), route.template, "{method} {path}");
                }
                Err(err) => {
                    assert!(!declared, "{method} {path}: {}", err.code);
                    assert_eq!(err.code, "method_not_allowed", "{method} {path}");
                }
            }
        }
    }
}

#[test]
fn no_two_routes_take_the_same_path() {
    let all: Vec<&Route> = routes().collect();
    for (i, a) in all.iter().enumerate() {
        for b in &all[i + 1..] {
            let path = sample_path(a);
            let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
            assert!(
                b.matches(&segments).is_none(),
                "{} and {} both take {path}",
                a.template,
                b.template
            );
        }
    }
}

/// Every endpoint, one of each variant: the match below fails to compile
/// when a variant is added, and the test fails when it has no route.
fn every_endpoint() -> Vec<Endpoint> {
    let key = AgentKey {
        town: "t".into(),
        rig: "r".into(),
        agent: "a".into(),
    };
    let town = [
        TownEndpoint::State,
        TownEndpoint::Eviction,
        TownEndpoint::Heartbeat,
        TownEndpoint::Registry,
        TownEndpoint::Events,
        TownEndpoint::Agents,
        TownEndpoint::MayorMessage,
        TownEndpoint::ContainerToken,
    ];
    let agent = [
        AgentEndpoint::Record,
        AgentEndpoint::Events,
        AgentEndpoint::Sessions,
        AgentEndpoint::Session("s".into()),
        AgentEndpoint::Conversation,
        AgentEndpoint::Checkpoint,
        AgentEndpoint::Memory,
        AgentEndpoint::MemoryEntry("k".into()),
        AgentEndpoint::Snapshot,
        AgentEndpoint::SnapshotMissing,
        AgentEndpoint::SnapshotChunk("c".into()),
        AgentEndpoint::SnapshotManifest,
        AgentEndpoint::Workspace,
        AgentEndpoint::WorkspaceMissing,
        AgentEndpoint::WorkspaceChunk("c".into()),
        AgentEndpoint::WorkspaceManifest,
        AgentEndpoint::WorkspaceBatchUpload,
        AgentEndpoint::WorkspaceBatchFetch,
        AgentEndpoint::History,
        AgentEndpoint::HistoryPins,
        AgentEndpoint::HistoryPin("p".into()),
        AgentEndpoint::Fork,
        AgentEndpoint::Restore,
        AgentEndpoint::Export,
        AgentEndpoint::Import,
        AgentEndpoint::Dispatch,
        AgentEndpoint::Inbox,
        AgentEndpoint::RegistryEntry,
    ];
    let mut all = vec![
        Endpoint::Health,
        Endpoint::Live,
        Endpoint::OpenApi,
        Endpoint::Metrics,
        Endpoint::RefreshToken,
    ];
    all.extend(Asset::ALL.map(Endpoint::Ui));
    all.extend(town.map(|e| Endpoint::Town("t".into(), e)));
    all.extend(agent.map(|e| Endpoint::Agent(key.clone(), e)));
    for endpoint in &all {
        match endpoint {
            Endpoint::Health
            | Endpoint::Live
            | Endpoint::OpenApi
            | Endpoint::Metrics
            | Endpoint::RefreshToken
            | Endpoint::Ui(_)
            | Endpoint::Town(..)
            | Endpoint::Agent(..) => {}
        }
    }
    all
}

#[test]
fn every_endpoint_has_exactly_one_route() {
    let all = every_endpoint();
    assert_eq!(all.len(), routes().count(), "one route per endpoint");
    for endpoint in &all {
        let template = endpoint.template();
        assert!(!template.is_empty(), "{endpoint:?} has no route");
        let owners = routes().filter(|r| r.template == template).count();
        assert_eq!(owners, 1, "{template}");
    }
}

#[test]
fn public_routes_are_the_probes_the_document_and_the_page() {
    let public: Vec<&str> = routes().filter(|r| r.public).map(|r| r.template).collect();
    assert_eq!(
        public,
        [
            "/healthz",
            "/livez",
            "/openapi.json",
            "/ui",
            "/ui/style.css",
            "/ui/app.js",
            "/ui/api.js",
            "/ui/views.js",
            "/ui/tail.js",
            "/ui/dom.js",
            "/ui/history.js",
            "/ui/lineage.js",
            "/ui/actions.js"
        ]
    );
    assert!(route::is_public("/openapi.json"));
    assert!(route::is_public("/ui/nope.js"));
    assert!(!route::is_public("/metrics"));
    assert!(!route::is_public("/api/towns/t"));
}
