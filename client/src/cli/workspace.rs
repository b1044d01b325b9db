//! `workspace push` and `workspace pull`.

use serde_json::json;
use stasis_client::workspace_sync::{self, PullOptions, PullOutcome, PushOptions, StateDir};
use stasis_client::{AgentRef, Client, Error, exit};

use super::output::Output;
use super::workspace_args::{StateArgs, WorkspaceAgent, WorkspacePullArgs, WorkspacePushArgs};

fn agent_ref(args: &WorkspaceAgent) -> Result<AgentRef, Error> {
    AgentRef::new(&args.town, &args.rig, &args.agent)
}

fn state_dir(args: &StateArgs, dir: &std::path::Path) -> StateDir {
    args.state_dir
        .clone()
        .map_or_else(|| StateDir::beside(dir), StateDir::new)
}

pub fn push(client: &Client, out: &Output, args: WorkspacePushArgs) -> Result<u8, Error> {
    let agent = agent_ref(&args.agent)?;
    let mut options = PushOptions::beside(&args.dir);
    options.state = state_dir(&args.state, &args.dir);
    options.scan.gitignore = !args.no_gitignore;
    options.scan.excludes = args.excludes;
    options.scan.includes = args.includes;
    options.event_watermark = args.event_seq;
    let pushed = workspace_sync::push(client, &agent, &args.dir, &options)?;
    let scan = &pushed.scan;
    let read = format!(
        "read {} files ({} bytes), {} unchanged",
        scan.files_read, scan.bytes_read, scan.files_reused
    );
    match &pushed.receipt {
        None => out.note(&format!(
            "{agent}: {} unchanged since the last sync (root {}); {read}; nothing sent",
            args.dir.display(),
            pushed.root_hash
        )),
        Some(receipt) => {
            let sent = &pushed.transfer;
            out.note(&format!(
                "pushed {} as {agent}: version {}, {} files, {} bytes, root {}; {read}; sent {} \
                 of {} chunks and {} of {} pages ({} bytes) in {} ms",
                args.dir.display(),
                receipt.version,
                pushed.files,
                pushed.total_size,
                pushed.root_hash,
                sent.chunks_sent,
                sent.chunks_total,
                sent.pages_sent,
                sent.pages_total,
                sent.bytes_sent,
                pushed.took_ms
            ));
        }
    }
    let mut value = json!(pushed);
    value["skipped"] = json!(pushed.skipped());
    out.result(&value)?;
    Ok(exit::OK)
}

pub fn pull(client: &Client, out: &Output, args: WorkspacePullArgs) -> Result<u8, Error> {
    let agent = agent_ref(&args.agent)?;
    let options = PullOptions {
        state: state_dir(&args.state, &args.dir),
        deadline: None,
    };
    match workspace_sync::pull(client, &agent, &args.dir, &options)? {
        PullOutcome::Restored(restored) => {
            out.note(&format!(
                "restored {agent} -> {}: version {}, {} files, {} folders, {} links, {} bytes, \
                 root {} verified; fetched {} chunks ({} bytes) in {} ms",
                args.dir.display(),
                restored.version,
                restored.files,
                restored.dirs,
                restored.symlinks,
                restored.bytes,
                restored.root_hash,
                restored.chunks_fetched,
                restored.bytes_fetched,
                restored.took_ms
            ));
            let mut value = json!(restored);
            value["path"] = json!(args.dir);
            out.result(&value)?;
            Ok(exit::OK)
        }
        PullOutcome::NoWorkspace => {
            eprintln!(
                "no workspace stored for {agent}; {} left as it was",
                args.dir.display()
            );
            Ok(exit::NO_SNAPSHOT)
        }
    }
}
