//! Where a fork's reads find the chunks it took from its ancestors: the KV
//! key `<agent folder>lineage` lists, one per line, the folders of the
//! agents it descends from (its source first, then its source's source).
//! A chunk key the fork's own folder lacks is looked up in each of them
//! before the read waits for KV to show it ([`super::ports::fetch_visible`]):
//! a key named by its content cannot hold other bytes there, and every
//! read is verified against its name anyway. The key is written before the
//! fork's object names any chunk, never changes, and the listing sweep
//! keeps it.

use super::keys::{CHUNKS_FOLDER, chunk_key};

/// The name of the lineage key under an agent's folder.
pub const LINEAGE: &str = "lineage";

/// The lineage key of the agent whose folder is `key_prefix`.
pub fn lineage_key(key_prefix: &str) -> String {
    format!("{key_prefix}{LINEAGE}")
}

/// The lineage key's value: the ancestors' folders, nearest first.
pub fn encode(ancestors: &[String]) -> Vec<u8> {
    ancestors.join("\n").into_bytes()
}

/// The ancestors' folders a lineage key lists (lines that are not a folder
/// are skipped).
pub fn decode(value: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(value)
        .lines()
        .filter(|line| line.ends_with('/') && line.matches('/').count() == 3)
        .map(str::to_owned)
        .collect()
}

/// A chunk key's folder and chunk name, or `None` for another key.
pub fn split_chunk_key(key: &str) -> Option<(&str, &str)> {
    let marker = format!("/{CHUNKS_FOLDER}/");
    let at = key.rfind(&marker)?;
    let (folder, name) = (&key[..=at], &key[at + marker.len()..]);
    super::digest::is_sha256_hex(name).then_some((folder, name))
}

/// The keys to try, in order, for chunk `name` of a fork whose lineage
/// lists `ancestors`.
pub fn ancestor_keys(ancestors: &[String], name: &str) -> Vec<String> {
    ancestors
        .iter()
        .map(|folder| chunk_key(folder, name))
        .collect()
}
