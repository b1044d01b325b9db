//! One soak client: an agent's container going about its work, with a few
//! milliseconds of think time between requests.

use super::tally::Tally;
use crate::client::{Call, Conn, Endpoint};
use bytes::Bytes;
use fastrand::Rng;
use http_body_util::BodyExt;
use hyper::Method;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// One client's state: its agent, its cursors and its producer stamps.
struct Agent {
    endpoint: Arc<Endpoint>,
    conn: Option<Conn>,
    rng: Rng,
    town: String,
    path: String,
    producer: String,
    next_stamp: u64,
    last_append: Option<(Bytes, Value)>,
    cursor: u64,
    tail_cursor: u64,
    memory_keys: Vec<u32>,
    tally: Tally,
}

/// Runs client `index` until `deadline`.
pub async fn run(endpoint: Arc<Endpoint>, index: usize, seed: u64, deadline: Instant) -> Tally {
    let town = format!("soak-{}", index % 4);
    let mut agent = Agent {
        path: format!("/api/towns/{town}/rigs/r/agents/agent-{index}"),
        producer: format!("soak-client-{index}"),
        town,
        endpoint,
        conn: None,
        rng: Rng::with_seed(seed),
        next_stamp: 0,
        last_append: None,
        cursor: 0,
        tail_cursor: 0,
        memory_keys: Vec::new(),
        tally: Tally::default(),
    };
    while Instant::now() < deadline {
        agent.step().await;
        let think = Duration::from_millis(agent.rng.u64(5..=25));
        tokio::time::sleep(think).await;
    }
    agent.tally
}

impl Agent {
    async fn step(&mut self) {
        match self.rng.u8(..100) {
            0..=35 => self.append().await,
            36..=39 => self.retry().await,
            40..=55 => self.read().await,
            56..=59 => self.tail().await,
            60..=67 => self.checkpoint().await,
            68..=79 => self.memory().await,
            80..=81 => self.snapshot().await,
            82..=87 => self.heartbeat().await,
            _ => self.conversation().await,
        }
    }

    /// Sends `call` on the client's connection; the status and body, or
    /// the failure as (status, description).
    async fn send(&mut self, call: &Call) -> Result<(u16, Bytes), (String, String)> {
        if self.conn.is_none() {
            let opened = Conn::open(&self.endpoint).await;
            self.conn = Some(opened.map_err(|e| ("transport".to_owned(), format!("{e:#}")))?);
        }
        let conn = self
            .conn
            .as_mut()
            .ok_or_else(|| ("transport".to_owned(), "no connection".to_owned()))?;
        match conn.call(call).await {
            Ok((status, body)) => Ok((status.as_u16(), body)),
            Err(error) => {
                self.conn = None;
                Err((
                    "transport".to_owned(),
                    format!("{} {}: {error:#}", call.method, call.path),
                ))
            }
        }
    }

    /// Sends `call`, expects `want`, records it under `kind`; the JSON body
    /// when it came as wanted.
    async fn expect(&mut self, kind: &'static str, call: &Call, want: u16) -> Option<Value> {
        let started = Instant::now();
        let answer = self.send(call).await;
        let took = started.elapsed();
        match answer {
            Ok((status, body)) if status == want => {
                self.tally.record(kind, took, None);
                Some(serde_json::from_slice(&body).unwrap_or(Value::Null))
            }
            Ok((status, body)) => {
                let text = String::from_utf8_lossy(&body[..body.len().min(300)]).into_owned();
                let what = format!("{} {} answered {status}: {text}", call.method, call.path);
                self.tally
                    .record(kind, took, Some((status.to_string(), what)));
                None
            }
            Err(failure) => {
                self.tally.record(kind, took, Some(failure));
                None
            }
        }
    }

    async fn append(&mut self) {
        let seq = self.next_stamp;
        self.next_stamp += 1;
        let events: Vec<Value> = (0..self.rng.usize(1..=10))
            .map(|i| self.event(seq, i))
            .collect();
        let body = json!({"events": events, "producer_id": self.producer, "producer_seq": seq});
        let bytes = Bytes::from(body.to_string());
        let call = Call::json(Method::POST, format!("{}/events", self.path), bytes.clone());
        if let Some(receipt) = self.expect("append (stamped)", &call, 200).await {
            self.last_append = Some((bytes, receipt));
        }
    }

    /// A message event as an agent runtime streams it.
    fn event(&mut self, seq: u64, i: usize) -> Value {
        let message = format!("m{seq}");
        if i == 0 {
            let info = json!({"id": message, "sessionID": "s1", "role": "assistant", "time": {"created": seq}});
            return json!({"type": "message.updated", "session_id": "s1", "data": {"info": info}});
        }
        let delta = "word ".repeat(self.rng.usize(1..40));
        let data = json!({"sessionID": "s1", "messageID": message, "partID": "p1", "field": "text", "delta": delta});
        json!({"type": "message.part.delta", "session_id": "s1", "data": data})
    }

    /// The last append again: it must append nothing and answer its seqs.
    async fn retry(&mut self) {
        let Some((bytes, receipt)) = self.last_append.clone() else {
            return self.append().await;
        };
        let call = Call::json(Method::POST, format!("{}/events", self.path), bytes);
        let started = Instant::now();
        let answer = self.send(&call).await;
        let took = started.elapsed();
        let failure = match answer {
            Ok((200, body)) => {
                let again: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                let same = again["duplicate"] == true && again["first_seq"] == receipt["first_seq"];
                (!same).then(|| {
                    (
                        "duplicate".to_owned(),
                        format!("a retry answered {again}, first {receipt}"),
                    )
                })
            }
            Ok((status, _)) => Some((status.to_string(), format!("a retry answered {status}"))),
            Err(failure) => Some(failure),
        };
        self.tally.record("append retry", took, failure);
    }

    async fn read(&mut self) {
        let call = Call::get(format!(
            "{}/events?after={}&limit=1000",
            self.path, self.cursor
        ));
        if let Some(page) = self.expect("read from cursor", &call, 200).await {
            self.cursor = page["next_after"].as_u64().unwrap_or(self.cursor);
        }
    }

    /// A live tail from where the last one stopped, dropped after a moment
    /// (a client reconnecting). Its latency is the time to the stream's
    /// head, on a new connection.
    async fn tail(&mut self) {
        let mut call = Call::get(format!("{}/events?after={}", self.path, self.tail_cursor));
        call.accept = Some("text/event-stream");
        let (opened, failure) = match self.follow(&call).await {
            Ok((opened, received)) => {
                self.tally.tail_events += received;
                (opened, None)
            }
            Err((opened, failure)) => (opened, Some(failure)),
        };
        self.tally.record("live tail (reconnect)", opened, failure);
    }

    /// Opens the stream on a connection of its own and reads it for up to
    /// 1.5 s; how long the head took, and the events received.
    async fn follow(
        &mut self,
        call: &Call,
    ) -> Result<(Duration, u64), (Duration, (String, String))> {
        let started = Instant::now();
        let transport = |e: anyhow::Error| {
            (
                started.elapsed(),
                ("transport".to_owned(), format!("{e:#}")),
            )
        };
        let mut conn = Conn::open(&self.endpoint).await.map_err(transport)?;
        let response = conn.send(call).await.map_err(transport)?;
        let opened = started.elapsed();
        if response.status() != 200 {
            let status = response.status().as_u16();
            return Err((
                opened,
                (status.to_string(), format!("the tail answered {status}")),
            ));
        }
        let mut body = response.into_body();
        let until = Instant::now() + Duration::from_millis(1_500);
        let mut received = 0;
        while let Ok(Some(Ok(frame))) = tokio::time::timeout_at(until.into(), body.frame()).await {
            let Some(data) = frame.data_ref() else {
                continue;
            };
            for line in String::from_utf8_lossy(data).lines() {
                if let Some(seq) = line
                    .strip_prefix("id: ")
                    .and_then(|s| s.trim().parse().ok())
                {
                    self.tail_cursor = seq;
                    received += 1;
                }
            }
        }
        Ok((opened, received))
    }

    async fn checkpoint(&mut self) {
        let notes = "n".repeat(self.rng.usize(100..4_000));
        let doc = json!({"step": self.next_stamp, "notes": notes});
        let path = format!("{}/checkpoint", self.path);
        let call = Call::json(Method::PUT, path.clone(), Bytes::from(doc.to_string()));
        self.expect("checkpoint put", &call, 200).await;
        if self.rng.u8(..3) == 0 {
            self.expect("checkpoint get", &Call::get(path), 200).await;
        }
    }

    async fn memory(&mut self) {
        let key = self.rng.u32(..20);
        let path = format!("{}/memory/k{key}", self.path);
        match self.rng.u8(..3) {
            0 if self.memory_keys.contains(&key) => {
                self.expect("memory get", &Call::get(path), 200).await;
            }
            1 => {
                let list = format!("{}/memory?prefix=k&limit=100", self.path);
                self.expect("memory list", &Call::get(list), 200).await;
            }
            _ => {
                let value = json!({"fact": key, "text": "remember ".repeat(self.rng.usize(1..50))});
                let call = Call::json(Method::PUT, path, Bytes::from(value.to_string()));
                if self.expect("memory put", &call, 200).await.is_some() {
                    self.memory_keys.push(key);
                }
            }
        }
    }

    /// A kilo.db push: mostly under the 1 MiB inline limit, now and then
    /// over it (stored in KV). The receipt must name the bytes' sha256.
    async fn snapshot(&mut self) {
        let len = if self.rng.u8(..10) < 7 {
            self.rng.usize(20_000..900_000)
        } else {
            self.rng.usize(1_100_000..3_000_000)
        };
        let mut bytes = vec![0_u8; len];
        self.rng.fill(&mut bytes);
        let sha = hex::encode(Sha256::digest(&bytes));
        let call = Call::octets(
            Method::PUT,
            format!("{}/db-snapshot", self.path),
            bytes.into(),
        );
        let started = Instant::now();
        let answer = self.send(&call).await;
        let took = started.elapsed();
        let failure = match answer {
            Ok((201, body)) => {
                let receipt: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                (receipt["sha256"] != sha.as_str()).then(|| {
                    let what = format!("the receipt {receipt} does not name sha256 {sha}");
                    ("sha256".to_owned(), what)
                })
            }
            Ok((status, _)) => Some((status.to_string(), format!("a push answered {status}"))),
            Err(failure) => Some(failure),
        };
        self.tally.record("snapshot push", took, failure);
    }

    async fn heartbeat(&mut self) {
        let body = json!({"container_id": format!("container-of-{}", self.town)});
        let path = format!("/api/towns/{}/heartbeat", self.town);
        let call = Call::json(Method::POST, path, Bytes::from(body.to_string()));
        self.expect("heartbeat", &call, 200).await;
    }

    async fn conversation(&mut self) {
        let call = Call::get(format!("{}/conversation", self.path));
        self.expect("conversation rebuild", &call, 200).await;
    }
}
