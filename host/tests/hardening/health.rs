//! `/healthz` is readiness (the data folder takes writes), `/livez` is
//! liveness (storage untouched); neither needs a token.

use crate::{start, support::Options};
use std::time::{Duration, Instant};

fn get(url: &str) -> (u16, String, Option<String>) {
    let mut response = crate::support::agent().get(url).call().expect("GET");
    let retry_after = response
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let body = response.body_mut().read_to_string().expect("body");
    (response.status().as_u16(), body, retry_after)
}

/// Polls `url` until it answers `status` (readiness is probed at most once
/// a second); returns the body and `Retry-After`.
fn wait_for(url: &str, status: u16) -> (String, Option<String>) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (got, body, retry_after) = get(url);
        if got == status {
            return (body, retry_after);
        }
        assert!(Instant::now() < deadline, "{url} stayed {got}: {body}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn healthz_is_503_while_the_data_folder_takes_no_writes_and_livez_stays_200() {
    let root = tempfile::tempdir().expect("temp dir");
    let data = root.path().join("data");
    let server = start(&data, &[], &Options::default());
    let healthz = format!("{}/healthz", server.base);
    let livez = format!("{}/livez", server.base);
    assert_eq!(get(&healthz).0, 200);
    assert_eq!(get(&livez), (200, r#"{"status":"ok"}"#.to_owned(), None));

    // The folder goes away and a file takes its place, as when a volume is
    // lost (permissions would not stop root, who runs CI containers).
    let moved = root.path().join("moved");
    std::fs::rename(&data, &moved).expect("move the data folder");
    std::fs::write(&data, b"not a folder").expect("a file in its place");
    let (body, retry_after) = wait_for(&healthz, 503);
    let error: serde_json::Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(error["error"]["code"], "not_ready", "{body}");
    assert_eq!(retry_after.as_deref(), Some("5"));
    assert!(
        !body.contains(root.path().to_str().expect("utf-8 path")),
        "the answer names no path: {body}"
    );
    assert_eq!(get(&livez).0, 200, "liveness does not touch storage");

    std::fs::remove_file(&data).expect("remove the file");
    std::fs::rename(&moved, &data).expect("restore the data folder");
    wait_for(&healthz, 200);
}
