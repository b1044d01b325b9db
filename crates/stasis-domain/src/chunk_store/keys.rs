//! Where the chunk store's bytes are in KV: one bucket, a folder per agent
//! (`<town>/<rig>/<agent>/`), and under it each chunk as
//! `chunks/<lowercase hex sha256>`, immutable (a key named by its content
//! cannot hold other bytes). An owner may keep keys of its own under the
//! agent's folder beside `chunks/` (kilo.db's single-key snapshots,
//! `v<version>`).

/// The KV bucket the chunk store lives in (on the edge: the namespace
/// bound as `AGENT_DB_SNAPSHOTS_KV`).
pub const KV_BUCKET: &str = "snapshots";

/// The folder under an agent's prefix that holds its chunks.
pub const CHUNKS_FOLDER: &str = "chunks";

/// The KV key prefix of an agent's keys (the bucket holds nothing else).
pub fn key_prefix(key: &crate::ids::AgentKey) -> String {
    format!("{}/{}/{}/", key.town, key.rig, key.agent)
}

/// The KV key of one of an agent's chunks.
pub fn chunk_key(key_prefix: &str, chunk: &str) -> String {
    format!("{key_prefix}{CHUNKS_FOLDER}/{chunk}")
}
