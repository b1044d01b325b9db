//! Chunks and manifest pages over the wire: which ones the agent's store lacks
//! (`POST /workspace/missing`, in batches); their uploads and downloads go many per request
//! ([`super::batches`]).

use std::collections::HashSet;
use std::time::Instant;

use serde::{Deserialize, Serialize};
use stasis_domain::workspace::ContentHash;

use crate::error::{Error, Result};
use crate::http::Client;
use crate::ids::AgentRef;

/// The most names one `missing` call may ask about (the contract's limit).
pub const MISSING_BATCH: usize = 32_768;

/// The code of a chunk the agent's store does not hold.
pub(crate) const CHUNK_NOT_FOUND: &str = "chunk_not_found";

/// One agent's chunk routes, with a deadline for every call.
#[derive(Clone, Copy)]
pub(crate) struct ChunkRoutes<'a> {
    pub client: &'a Client,
    pub agent: &'a AgentRef,
    pub deadline: Option<Instant>,
}

#[derive(Serialize)]
struct MissingQuery<'a> {
    chunks: &'a [ContentHash],
}

#[derive(Deserialize)]
struct MissingAnswer {
    missing: Vec<ContentHash>,
}

impl ChunkRoutes<'_> {
    /// Those of `names` the store lacks, asked [`MISSING_BATCH`] at a time.
    pub fn missing(&self, names: &[ContentHash]) -> Result<HashSet<ContentHash>> {
        let path = self.agent.path("/workspace/missing");
        let mut missing = HashSet::new();
        for batch in names.chunks(MISSING_BATCH) {
            let body = MissingQuery { chunks: batch };
            let answer: MissingAnswer = self.client.post_json(&path, &body, self.deadline)?;
            let asked: HashSet<&ContentHash> = batch.iter().collect();
            if let Some(stranger) = answer.missing.iter().find(|m| !asked.contains(m)) {
                return Err(Error::Protocol {
                    what: format!("POST {path}"),
                    detail: format!("{stranger} is missing, but it was not asked about"),
                });
            }
            missing.extend(answer.missing);
        }
        Ok(missing)
    }
}
