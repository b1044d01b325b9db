//! Under a low open-file limit, idle connections that exhaust the
//! descriptor table do not flood the log, and the host serves again once
//! they are gone.

use crate::{raw::connect, start, support::Options};
use std::{
    net::TcpStream,
    time::{Duration, Instant},
};

/// Descriptors the host may hold; the host cannot raise a hard limit.
const LIMIT: u64 = 64;
/// Idle connections opened at once, well past [`LIMIT`].
const IDLE_CONNECTIONS: usize = 300;

#[test]
fn idle_connections_past_the_open_file_limit_do_not_flood_the_log_and_the_host_recovers() {
    let data = tempfile::tempdir().expect("temp dir");
    let log = data.path().join("host.log");
    let options = Options {
        log_file: Some(log.clone()),
        open_file_limit: Some(LIMIT),
        ..Options::default()
    };
    // The cap is above the limit, so accept itself runs out of descriptors.
    let flags = ["--max-connections", "1000", "--header-timeout", "2s"];
    let server = start(data.path(), &flags, &options);
    let idle: Vec<TcpStream> = (0..IDLE_CONNECTIONS)
        .map(|_| connect(&server.address(), Duration::from_secs(1)))
        .collect();
    std::thread::sleep(Duration::from_secs(3));
    let lines_while_full = line_count(&log);
    drop(idle);

    let deadline = Instant::now() + Duration::from_secs(30);
    while ureq::get(format!("{}/healthz", server.base))
        .call()
        .is_err()
    {
        assert!(Instant::now() < deadline, "the host did not serve again");
        std::thread::sleep(Duration::from_millis(100));
    }
    let text = std::fs::read_to_string(&log).expect("log");
    assert!(
        text.contains("accepting a connection failed"),
        "the descriptor table did run out:\n{text}"
    );
    assert!(
        lines_while_full <= 10,
        "{lines_while_full} log lines in 3 s of a full descriptor table:\n{}",
        text.lines().take(20).collect::<Vec<_>>().join("\n")
    );
}

fn line_count(path: &std::path::Path) -> usize {
    std::fs::read_to_string(path).map_or(0, |text| text.lines().count())
}
