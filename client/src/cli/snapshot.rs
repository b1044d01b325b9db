//! `snapshot push` and `snapshot pull`.

use super::args::{CacheArgs, PullArgs, PushArgs};
use super::output::Output;
use super::{agent_ref, show_version};
use serde_json::json;
use stasis_client::snapshot::{self, ChunkCache, PullOptions, PullOutcome, PushOptions};
use stasis_client::{Client, Error, exit};

pub fn push(client: &Client, out: &Output, args: PushArgs) -> Result<u8, Error> {
    let agent = agent_ref(&args.agent)?;
    let options = PushOptions {
        event_seq: args.event_seq,
        if_match: args.if_match,
        progress: !out.quiet,
        whole_file: args.whole_file,
        cache: chunk_cache(&args.cache),
        ..PushOptions::default()
    };
    let receipt = snapshot::push(client, &agent, &args.db, &options)?;
    out.note(&format!(
        "pushed {agent}: version {}, {} bytes, stored {}, sha256 {}; {}",
        receipt.version,
        receipt.size,
        receipt.storage.as_deref().unwrap_or("(as before)"),
        receipt.sha256,
        receipt.transfer.map(|t| t.summary()).unwrap_or_default()
    ));
    out.result(&json!(receipt))?;
    Ok(exit::OK)
}

pub fn pull(client: &Client, out: &Output, args: PullArgs) -> Result<u8, Error> {
    let agent = agent_ref(&args.agent)?;
    let options = PullOptions {
        progress: !out.quiet,
        whole_file: args.whole_file,
        cache: chunk_cache(&args.cache),
        ..PullOptions::default()
    };
    match snapshot::pull(client, &agent, &args.out, &options)? {
        PullOutcome::Pulled(pulled) => {
            let verb = if pulled.unchanged {
                "already current"
            } else {
                "pulled"
            };
            out.note(&format!(
                "{verb} {agent} -> {}: version {}, {} bytes, sha256 {}{}",
                args.out.display(),
                show_version(pulled.version),
                pulled.size,
                pulled.sha256,
                pulled
                    .transfer
                    .map(|t| format!("; {}", t.summary()))
                    .unwrap_or_default()
            ));
            let mut value = json!(pulled);
            value["path"] = json!(args.out);
            out.result(&value)?;
            Ok(exit::OK)
        }
        PullOutcome::NoSnapshot => {
            eprintln!(
                "no snapshot stored for {agent}; {} left as it was",
                args.out.display()
            );
            Ok(exit::NO_SNAPSHOT)
        }
    }
}

/// The chunk cache the arguments name (none with --no-chunk-cache, or when no default
/// directory can be found).
pub fn chunk_cache(args: &CacheArgs) -> Option<ChunkCache> {
    if args.no_chunk_cache {
        return None;
    }
    let dir = args.chunk_cache.clone().or_else(ChunkCache::default_dir)?;
    Some(ChunkCache::new(dir, args.chunk_cache_bytes))
}
