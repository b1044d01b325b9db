//! Every response carries a request id; a 500 is logged with it and its
//! cause, and its body names no path.

use crate::{
    start,
    support::{Options, admin, agent},
};

#[test]
fn a_500_is_logged_with_its_request_id_and_its_body_names_no_path() {
    let root = tempfile::tempdir().expect("temp dir");
    let data = root.path().join("data");
    let log = root.path().join("host.log");
    let options = Options {
        log_file: Some(log.clone()),
        ..Options::default()
    };
    let server = start(&data, &[], &options);
    // An agent whose database is not a database.
    let folder = data.join("towns/t/rigs/r/agents/broken");
    std::fs::create_dir_all(&folder).expect("agent folder");
    std::fs::write(folder.join("agent.sqlite"), vec![0x5a; 8192]).expect("garbage");

    let mut response = agent()
        .get(format!(
            "{}/api/towns/t/rigs/r/agents/broken/events",
            server.base
        ))
        .header("authorization", admin())
        .header("x-request-id", "probe-500-a1")
        .call()
        .expect("GET");
    assert_eq!(response.status(), 500);
    assert_eq!(
        response.headers().get("x-request-id").map(|v| v.as_bytes()),
        Some(&b"probe-500-a1"[..])
    );
    let body = response.body_mut().read_to_string().expect("body");
    assert!(body.contains("\"code\":\"internal_error\""), "{body}");
    for leak in [
        root.path().to_str().expect("utf-8"),
        "sqlite",
        "database",
        "panicked",
    ] {
        assert!(!body.contains(leak), "the body shows {leak:?}: {body}");
    }

    let text = std::fs::read_to_string(&log).expect("log");
    let line = text
        .lines()
        .find(|line| line.contains("probe-500-a1"))
        .unwrap_or_else(|| panic!("no log line names the request id:\n{text}"));
    assert!(line.contains("status=500"), "{line}");
    assert!(
        line.contains("not a database"),
        "the cause is logged: {line}"
    );
}

#[test]
fn every_response_carries_a_request_id() {
    let data = tempfile::tempdir().expect("temp dir");
    let server = start(data.path(), &[], &Options::default());
    for path in ["/livez", "/healthz", "/nope", "/api/towns/t"] {
        let response = agent()
            .get(format!("{}{path}", server.base))
            .call()
            .expect("GET");
        let id = response
            .headers()
            .get("x-request-id")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        assert_eq!(id.len(), 16, "{path} carried {id:?}");
        assert!(id.bytes().all(|b| b.is_ascii_hexdigit()), "{path}: {id}");
    }
}
