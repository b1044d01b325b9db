//! An agent's kilo.db snapshot: `PUT` and `GET /db-snapshot`.

use std::time::Duration;

use super::{Agent, Kilo};
use crate::{Reply, Value, assert_error, call, json};

impl Agent {
    /// `PUT /db-snapshot` with `bytes` and extra `headers`, whatever the outcome.
    pub fn put_snapshot_reply(&self, bytes: &[u8], headers: &[(&str, &str)]) -> Reply {
        let mut request = call("PUT", &self.path("/db-snapshot"))
            .header("Content-Type", "application/octet-stream");
        for (name, value) in headers {
            request = request.header(name, value);
        }
        request.body(bytes.to_vec()).send()
    }

    /// Pushes `bytes` as the agent's kilo.db, with their sha256 and the
    /// event watermark `event_seq`; returns the 201 body.
    pub fn put_snapshot(&self, bytes: &[u8], event_seq: u64) -> Value {
        self.push_snapshot(&Kilo::new(bytes.to_vec()), event_seq, None)
    }

    /// Pushes `db` as a container does: with its sha256, the event
    /// watermark `event_seq`, and `If-Match: "<replaces>"` when it means to
    /// replace the snapshot whose sha256 is `replaces`. Returns the 201 body
    /// after checking its sha256, size and `ETag`.
    pub fn push_snapshot(&self, db: &Kilo, event_seq: u64, replaces: Option<&str>) -> Value {
        let seq = event_seq.to_string();
        let if_match = replaces.map(|sha| format!("\"{sha}\""));
        let mut headers = vec![
            ("X-Stasis-Sha256", db.sha256.as_str()),
            ("X-Stasis-Event-Seq", seq.as_str()),
        ];
        if let Some(etag) = &if_match {
            headers.push(("If-Match", etag.as_str()));
        }
        let reply = self.put_snapshot_reply(&db.bytes, &headers);
        let body = reply.expect_json(201);
        assert_eq!(
            body["sha256"],
            json!(db.sha256),
            "the stored sha256: {body}"
        );
        assert_eq!(
            body["size"],
            json!(db.bytes.len()),
            "the stored size: {body}"
        );
        assert_eq!(
            reply.header("etag"),
            Some(format!("\"{}\"", db.sha256).as_str()),
            "a pushed snapshot's ETag is its quoted sha256"
        );
        body
    }

    /// `GET /db-snapshot`, waiting out `503 snapshot_propagating` as a
    /// container would (a KV key may take a moment to become visible).
    pub fn snapshot_reply(&self) -> Reply {
        let mut reply = call("GET", &self.path("/db-snapshot")).send();
        for _ in 0..20 {
            if reply.status != 503 {
                return reply;
            }
            assert_error(&reply, 503, "snapshot_propagating");
            let wait = reply
                .header("retry-after")
                .and_then(|v| v.trim().parse::<u64>().ok())
                .unwrap_or(1)
                .clamp(1, 5);
            std::thread::sleep(Duration::from_secs(wait));
            reply = call("GET", &self.path("/db-snapshot")).send();
        }
        reply
    }
}
