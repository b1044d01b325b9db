//! A client that opens more connections than the host serves and never
//! sends a request head (reopening each one the host closes), while many
//! live tails stay open, keeps neither `/healthz` nor authenticated appends
//! from answering: at the cap a new connection takes the place of the
//! oldest that sent no head, and tails have places of their own.

use crate::{
    raw::{self, connect, send},
    start,
    support::{Options, Server, admin, agent},
    timeouts::read_until,
};
use serde_json::json;
use std::{
    io::{ErrorKind, Read},
    net::TcpStream,
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
    thread,
    time::Duration,
};

/// The host's open-file limit; its caps follow it (128 connections, 64
/// tails at 1024).
const LIMIT: u64 = 1024;
/// Connections that never send a head, held open all along.
const IDLE_CONNECTIONS: usize = 1100;
/// Live tails opened, past the host's cap for them.
const TAILS: usize = 100;
/// Probes of each kind while the flood goes on.
const PROBES: usize = 22;

#[test]
fn idle_connections_and_open_tails_keep_neither_health_nor_appends_out() {
    let wanted = (IDLE_CONNECTIONS + TAILS + 200) as u64;
    let own_limit = rlimit::increase_nofile_limit(wanted).unwrap_or(0);
    assert!(
        own_limit >= wanted,
        "the test itself needs {wanted} descriptors; its hard limit allows {own_limit}"
    );
    let data = tempfile::tempdir().expect("temp dir");
    let options = Options {
        open_file_limit: Some(LIMIT),
        ..Options::default()
    };
    let server = start(data.path(), &["--durability", "os"], &options);
    let token = admin();
    append(&server, &token, "watched").expect("the first append");

    let tails: Vec<Option<TcpStream>> = (0..TAILS).map(|_| open_tail(&server, &token)).collect();
    let streaming = tails.iter().filter(|tail| tail.is_some()).count();
    assert!(streaming >= 32, "only {streaming} tails were let in");

    let stop = Arc::new(AtomicBool::new(false));
    let reopened = Arc::new(AtomicUsize::new(0));
    let flood = {
        let (address, stop, reopened) =
            (server.address(), Arc::clone(&stop), Arc::clone(&reopened));
        thread::spawn(move || flood(&address, &stop, &reopened))
    };
    thread::sleep(Duration::from_secs(2));

    let mut failures = Vec::new();
    for n in 0..PROBES {
        let health = agent().get(format!("{}/healthz", server.base)).call();
        match health {
            Ok(response) if response.status() == 200 => {}
            other => failures.push(format!("healthz {n}: {:?}", other.map(|r| r.status()))),
        }
        if let Err(err) = append(&server, &token, "watched") {
            failures.push(format!("append {n}: {err}"));
        }
        thread::sleep(Duration::from_millis(200));
    }
    stop.store(true, Ordering::Relaxed);
    let held = flood.join().expect("the flood thread");
    let reopened = reopened.load(Ordering::Relaxed);
    assert!(
        failures.is_empty(),
        "{} of {} probes failed under {held} idle connections ({reopened} reopened) and \
         {streaming} tails: {failures:?}",
        failures.len(),
        2 * PROBES
    );
    assert!(
        reopened > 0,
        "the host closed no idle connection, so the cap was never reached"
    );
    drop(tails);
}

/// One event appended to `agent_id` as admin; the failure as text.
fn append(server: &Server, token: &str, agent_id: &str) -> Result<(), String> {
    let url = format!(
        "{}/api/towns/t/rigs/r/agents/{agent_id}/events",
        server.base
    );
    match agent()
        .post(&url)
        .header("authorization", token)
        .send_json(json!({"events": [{"type": "t", "data": {}}]}))
    {
        Ok(response) if response.status().is_success() => Ok(()),
        Ok(mut response) => Err(format!(
            "{} {}",
            response.status(),
            response.body_mut().read_to_string().unwrap_or_default()
        )),
        Err(err) => Err(err.to_string()),
    }
}

/// A live tail of `watched` that has started streaming, or `None` when the
/// host refused it (503 `over_capacity`: past the tail cap).
fn open_tail(server: &Server, token: &str) -> Option<TcpStream> {
    let mut tail = connect(&server.address(), Duration::from_secs(10));
    let headers = format!("Authorization: {token}\r\nAccept: text/event-stream\r\n");
    send(
        &mut tail,
        &raw::get("/api/towns/t/rigs/r/agents/watched/events", &headers),
    );
    let mut head = [0u8; 12];
    tail.read_exact(&mut head).expect("a status line");
    match &head {
        b"HTTP/1.1 200" => {
            let mut seen = String::new();
            read_until(&mut tail, &mut seen, "\r\n\r\n");
            Some(tail)
        }
        b"HTTP/1.1 503" => None,
        other => panic!("a tail answered {:?}", String::from_utf8_lossy(other)),
    }
}

/// Holds [`IDLE_CONNECTIONS`] connections that send nothing, reopening
/// each one the host closes, until `stop`; returns how many were open at
/// the end.
fn flood(address: &str, stop: &AtomicBool, reopened: &AtomicUsize) -> usize {
    let Ok(address) = address.parse::<std::net::SocketAddr>() else {
        return 0;
    };
    let open = |address: &std::net::SocketAddr| {
        TcpStream::connect_timeout(address, Duration::from_millis(200))
            .and_then(|stream| stream.set_nonblocking(true).map(|()| stream))
            .ok()
    };
    let mut connections: Vec<Option<TcpStream>> =
        (0..IDLE_CONNECTIONS).map(|_| open(&address)).collect();
    let mut buffer = [0u8; 512];
    while !stop.load(Ordering::Relaxed) {
        for slot in &mut connections {
            let closed = match slot {
                None => true,
                Some(stream) => match stream.read(&mut buffer) {
                    Ok(0) => true,
                    Ok(_) => false,
                    Err(err) => err.kind() != ErrorKind::WouldBlock,
                },
            };
            if closed {
                *slot = open(&address);
                reopened.fetch_add(1, Ordering::Relaxed);
            }
        }
        thread::sleep(Duration::from_millis(20));
    }
    connections.iter().filter(|slot| slot.is_some()).count()
}
