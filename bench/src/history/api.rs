//! One runtime the history workloads run on (the spawned host, or the edge
//! under `wrangler dev --local`), its JSON calls, and what it stores: the
//! distinct chunk bytes every kept kilo.db version names (through the API,
//! both runtimes), and on the host its data folder (the agent's KV folder
//! and its SQLite pages).

use anyhow::{Context, Result, bail};
use serde_json::Value;
use stasis_client::{
    AgentRef, Client, Config,
    snapshot::{self, PushOptions, PushReceipt},
};
use std::{
    collections::HashMap,
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

/// How long one push may take, retries included.
const PUSH_DEADLINE: Duration = Duration::from_secs(600);
/// The most pages of `GET /history` read (1,000 versions each).
const MAX_HISTORY_PAGES: usize = 100;
/// How often a call answered 503 (the edge's KV not showing a chunk yet) is
/// sent again.
const RETRIES_503: usize = 10;

/// A runtime to run on.
pub struct Side {
    /// `host` or `edge`, as the table shows it.
    pub name: &'static str,
    /// Its base URL.
    pub base_url: String,
    /// An admin token.
    pub token: String,
    /// The host's `--data-dir` (none for the edge).
    pub data_dir: Option<PathBuf>,
    /// The town every agent of this run lives in.
    pub town: String,
    http: ureq::Agent,
    client: Client,
}

impl Side {
    /// A runtime at `base_url`.
    pub fn new(
        name: &'static str,
        base_url: &str,
        token: &str,
        data_dir: Option<PathBuf>,
    ) -> Result<Self> {
        let http = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(300)))
            .build()
            .into();
        let client = Client::new(Config::new(base_url, Some(token.to_owned()))?);
        Ok(Self {
            name,
            base_url: base_url.trim_end_matches('/').to_owned(),
            token: token.to_owned(),
            data_dir,
            town: format!("bench-history-{}", crate::server::random_hex(4)?),
            http,
            client,
        })
    }

    /// The path of `agent`'s `suffix` (rig `r`).
    pub fn path(&self, agent: &str, suffix: &str) -> String {
        format!("/api/towns/{}/rigs/r/agents/{agent}{suffix}", self.town)
    }

    /// Sends `body` (JSON, or nothing) and answers the status, the JSON
    /// answer (`null` when empty) and how long the call took. A 503 is sent
    /// again after a short pause, a bounded number of times.
    pub fn call(
        &self,
        method: &str,
        path: &str,
        body: Option<&Value>,
    ) -> Result<(u16, Value, Duration)> {
        for _ in 0..RETRIES_503 {
            let url = format!("{}{path}", self.base_url);
            let auth = format!("Bearer {}", self.token);
            let started = Instant::now();
            let response = match (method, body) {
                ("GET", _) => self.http.get(&url).header("Authorization", &auth).call(),
                ("DELETE", _) => self.http.delete(&url).header("Authorization", &auth).call(),
                (_, body) => {
                    let text = body.map(Value::to_string).unwrap_or_default();
                    let request = match method {
                        "PUT" => self.http.put(&url),
                        _ => self.http.post(&url),
                    };
                    request
                        .header("Authorization", &auth)
                        .header("Content-Type", "application/json")
                        .send(text.as_str())
                }
            }
            .with_context(|| format!("{method} {path}"))?;
            let status = response.status().as_u16();
            let text = response.into_body().read_to_string()?;
            let took = started.elapsed();
            if status == 503 {
                std::thread::sleep(Duration::from_millis(200));
                continue;
            }
            let value = if text.is_empty() {
                Value::Null
            } else {
                serde_json::from_str(&text).unwrap_or(Value::String(text))
            };
            return Ok((status, value, took));
        }
        bail!("{method} {path} answered 503 {RETRIES_503} times")
    }

    /// [`Side::call`] that must answer 2xx: its JSON and its time.
    pub fn expect(
        &self,
        method: &str,
        path: &str,
        body: Option<&Value>,
    ) -> Result<(Value, Duration)> {
        let (status, value, took) = self.call(method, path, body)?;
        if !(200..300).contains(&status) {
            let text = value.to_string();
            bail!(
                "{method} {path} answered {status}: {}",
                &text[..text.len().min(400)]
            );
        }
        Ok((value, took))
    }

    /// `stasis-client snapshot push` of `db` as `agent`'s kilo.db, by
    /// chunks (the server's missing ones only), as a sidecar pushes.
    pub fn push(&self, agent: &str, db: &Path) -> Result<PushReceipt> {
        let agent = AgentRef::new(&self.town, "r", agent)?;
        let options = PushOptions {
            deadline: Some(Instant::now() + PUSH_DEADLINE),
            ..PushOptions::default()
        };
        Ok(snapshot::push(&self.client, &agent, db, &options)?)
    }

    /// The distinct chunk bytes every kept (and the current) kilo.db
    /// version of `agent` names, as the API lists them: (bytes, versions).
    pub fn chunk_bytes(&self, agent: &str) -> Result<(u64, usize)> {
        let mut versions = Vec::new();
        let mut after = String::new();
        for _ in 0..MAX_HISTORY_PAGES {
            let path = self.path(
                agent,
                &format!("/history?kind=db_snapshot&limit=1000{after}"),
            );
            let (page, _) = self.expect("GET", &path, None)?;
            let listed = page["versions"].as_array().context("no versions")?;
            versions.extend(listed.iter().filter_map(|v| v["version"].as_u64()));
            match page["next_after"].as_u64() {
                Some(next) if !listed.is_empty() => after = format!("&after={next}"),
                _ => break,
            }
        }
        let mut sizes: HashMap<String, u64> = HashMap::new();
        for version in &versions {
            let path = self.path(agent, &format!("/db-snapshot/manifest?version={version}"));
            let (manifest, _) = self.expect("GET", &path, None)?;
            for (name, size) in chunk_sizes(&manifest)? {
                sizes.insert(name, size);
            }
        }
        Ok((sizes.values().sum(), versions.len()))
    }
}

/// Each chunk a manifest names with its size (chunk `i` covers
/// `[i*chunk_size, min(size, (i+1)*chunk_size))`).
pub fn chunk_sizes(manifest: &Value) -> Result<Vec<(String, u64)>> {
    let size = manifest["size"]
        .as_u64()
        .context("a manifest without size")?;
    let chunk = manifest["chunk_size"]
        .as_u64()
        .context("no chunk_size")?
        .max(1);
    let names = manifest["chunks"].as_array().context("no chunks")?;
    Ok(names
        .iter()
        .enumerate()
        .filter_map(|(i, name)| {
            let start = (i as u64) * chunk;
            Some((
                name.as_str()?.to_owned(),
                size.min(start + chunk) - start.min(size),
            ))
        })
        .collect())
}

/// What the host stores for one agent, as its data folder tells.
#[derive(Debug, Clone, Copy, Default)]
pub struct HostStored {
    /// Bytes of the files in the agent's KV folder (`kv/snapshots/<town>/r/<agent>/`).
    pub kv: u64,
    /// Bytes of the agent's SQLite pages in use (`(page_count - freelist_count) ×
    /// page_size`, read through its WAL).
    pub sql: u64,
}

impl HostStored {
    /// Both together.
    pub fn total(&self) -> u64 {
        self.kv + self.sql
    }
}

/// What the host at `data_dir` stores for `agent` of `town`.
pub fn host_stored(data_dir: &Path, town: &str, agent: &str) -> Result<HostStored> {
    let kv = folder_bytes(&data_dir.join(format!("kv/snapshots/{town}/r/{agent}")))?;
    let db = data_dir.join(format!("towns/{town}/rigs/r/agents/{agent}/agent.sqlite"));
    let conn = rusqlite::Connection::open_with_flags(
        &db,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .with_context(|| format!("opening {}", db.display()))?;
    let pragma = |name: &str| -> Result<u64> {
        let value: i64 = conn.query_row(&format!("PRAGMA {name}"), [], |row| row.get(0))?;
        Ok(u64::try_from(value)?)
    };
    let sql = (pragma("page_count")? - pragma("freelist_count")?) * pragma("page_size")?;
    Ok(HostStored { kv, sql })
}

/// Bytes of the chunk files a fork's KV folder holds (`chunks/`).
pub fn host_chunk_files(data_dir: &Path, town: &str, agent: &str) -> Result<u64> {
    folder_bytes(&data_dir.join(format!("kv/snapshots/{town}/r/{agent}/chunks")))
}

/// Bytes of every file under `dir` (0 when it does not exist), a bounded walk.
fn folder_bytes(dir: &Path) -> Result<u64> {
    const MAX_ENTRIES: usize = 1_000_000;
    let mut total = 0;
    let mut pending = vec![dir.to_owned()];
    let mut seen = 0;
    while let Some(folder) = pending.pop() {
        let entries = match std::fs::read_dir(&folder) {
            Ok(entries) => entries,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => continue,
            Err(error) => return Err(error.into()),
        };
        for entry in entries {
            seen += 1;
            if seen > MAX_ENTRIES {
                bail!("{} holds more than {MAX_ENTRIES} entries", dir.display());
            }
            let entry = entry?;
            let meta = entry.metadata()?;
            if meta.is_dir() {
                pending.push(entry.path());
            } else {
                total += meta.len();
            }
        }
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_sizes_follow_positions_and_the_last_is_short() {
        let manifest = serde_json::json!({
            "size": 10, "chunk_size": 4, "chunks": ["a", "b", "c"]
        });
        let sizes = chunk_sizes(&manifest).unwrap_or_default();
        assert_eq!(
            sizes,
            vec![("a".into(), 4), ("b".into(), 4), ("c".into(), 2)]
        );
    }
}
