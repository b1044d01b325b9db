//! At `ulimit -n 1024`, with no cap set by hand, the caps fit the limit:
//! thousands of agents touched once each, several at a time, all answer,
//! and the host ends within its limit.

use crate::{
    start,
    support::{Options, Server, admin, agent},
};
use serde_json::json;
use std::{
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    thread,
};

/// The open-file limit the host runs under (soft and hard, so the host
/// cannot raise it).
const LIMIT: u64 = 1024;
/// Agents touched, each once: far past what 1024 descriptors hold open.
const AGENTS: usize = 5000;
/// Clients at once.
const CLIENTS: usize = 16;

#[test]
fn five_thousand_agents_at_ulimit_1024_all_answer() {
    let data = tempfile::tempdir().expect("temp dir");
    let log = data.path().join("host.log");
    let options = Options {
        log_file: Some(log.clone()),
        open_file_limit: Some(LIMIT),
        ..Options::default()
    };
    // No --max-open-objects, --max-connections or --max-tails: they
    // follow the limit. `os` durability keeps the run short.
    let server = Arc::new(start(data.path(), &["--durability", "os"], &options));
    let next = Arc::new(AtomicUsize::new(0));
    let clients: Vec<_> = (0..CLIENTS)
        .map(|_| {
            let (server, next) = (Arc::clone(&server), Arc::clone(&next));
            thread::spawn(move || touch_agents(&server, &next))
        })
        .collect();
    let failures: Vec<String> = clients
        .into_iter()
        .flat_map(|client| client.join().expect("a client thread"))
        .collect();
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        failures.is_empty(),
        "{} of {AGENTS} requests failed, first: {:?}\nhost log:\n{}",
        failures.len(),
        failures.iter().take(5).collect::<Vec<_>>(),
        text.lines().take(30).collect::<Vec<_>>().join("\n")
    );
    assert!(
        !text.contains("lower than --max-connections"),
        "the derived caps fit the limit, so no shortage is warned:\n{text}"
    );
    let fds = server.open_fds();
    assert!(fds <= LIMIT as usize, "{fds} descriptors open");
}

/// PUTs agent records until [`AGENTS`] are taken; returns each failure.
fn touch_agents(server: &Server, next: &AtomicUsize) -> Vec<String> {
    let (client, token) = (agent(), admin());
    let mut failures = Vec::new();
    loop {
        let n = next.fetch_add(1, Ordering::Relaxed);
        if n >= AGENTS {
            return failures;
        }
        let url = format!("{}/api/towns/t/rigs/r/agents/a{n}", server.base);
        match client
            .put(&url)
            .header("authorization", &token)
            .send_json(json!({"role": "polecat"}))
        {
            Ok(response) if response.status().is_success() => {}
            Ok(mut response) => failures.push(format!(
                "a{n}: {} {}",
                response.status(),
                response.body_mut().read_to_string().unwrap_or_default()
            )),
            Err(err) => failures.push(format!("a{n}: {err}")),
        }
    }
}
