//! h. a delta push that knows the chunks of its previous push (as the sidecar does) uploads the
//! chunks that differ without asking `missing`; when the server does not hold what the push
//! believes (here: another agent, which holds none of them), the commit's `409 chunks_missing`
//! makes it upload the rest, and the server ends with the whole, correct snapshot.

use std::path::Path;
use std::sync::Arc;

use stasis_client::AgentRef;
use stasis_client::backup::{BackupOptions, backup_database};
use stasis_client::snapshot::{self, ChunkedFile, PullOptions, PullOutcome, PushOptions};
use stasis_client::snapshot::{PushReceipt, TransferMode};

use crate::helpers::start_server;
use crate::helpers::{append_rows, client, create_db, head_snapshot, rows_for, sha256_file};
use crate::support::Server;

/// A consistent copy of `db` at `copy`, and its chunks.
fn copy_of(db: &Path, copy: &Path) -> ChunkedFile {
    backup_database(db, copy, &BackupOptions::default(), |_, _| {}).expect("backup");
    ChunkedFile::scan(copy).expect("scan")
}

fn push(
    server: &Server,
    who: &AgentRef,
    file: &Path,
    previous: Option<&ChunkedFile>,
) -> PushReceipt {
    let chunked = ChunkedFile::scan(file).expect("scan");
    let options = PushOptions {
        previous: previous.cloned().map(Arc::new),
        ..PushOptions::default()
    };
    snapshot::upload_file(&client(server), who, file, &chunked, &options).expect("push")
}

#[test]
fn a_push_knowing_its_previous_chunks_skips_missing_and_a_stale_view_still_stores_the_whole() {
    let data = tempfile::tempdir().expect("temp dir");
    let server = start_server(data.path());
    let work = tempfile::tempdir().expect("temp dir");
    let db = work.path().join("live/kilo.db");
    create_db(&db, rows_for(3_000_000), "wal");
    let mayor = AgentRef::new("e2e-known", "hq", "mayor").expect("ids");
    let (v1_path, v2_path) = (work.path().join("v1.db"), work.path().join("v2.db"));
    let v1 = copy_of(&db, &v1_path);
    push(&server, &mayor, &v1_path, None);
    append_rows(&db, 3);
    let v2 = copy_of(&db, &v2_path);
    let changed = v2
        .unique_chunks()
        .into_iter()
        .filter(|c| !v1.chunks.contains(c))
        .count() as u64;

    // The true previous push: only the changed chunks, and no `missing` body (its JSON would
    // add about 67 bytes per chunk on top of the manifest's).
    let second = push(&server, &mayor, &v2_path, Some(&v1));
    let sent = second.transfer.expect("transfer");
    assert_eq!(sent.mode, TransferMode::Chunks);
    assert!(changed > 0 && changed <= 10, "{changed}");
    assert_eq!(sent.chunks_sent, changed);
    let json = sent.body_bytes_sent - sent.bytes_sent;
    assert!(
        json < 68 * sent.chunks_total + 400,
        "{json} bytes of JSON: `missing` was asked"
    );
    assert_eq!(head_snapshot(&server, &mayor).1, Some(v2.sha256.clone()));

    // A stale view: the polecat holds none of v1's chunks, yet the push believes it does.
    let polecat = AgentRef::new("e2e-known", "hq", "polecat").expect("ids");
    let stale = push(&server, &polecat, &v2_path, Some(&v1));
    let sent = stale.transfer.expect("transfer");
    assert_eq!(sent.mode, TransferMode::Chunks);
    assert_eq!(
        sent.chunks_sent,
        v2.unique_chunks().len() as u64,
        "the changed chunks first, then every chunk the 409 named"
    );
    assert_eq!(head_snapshot(&server, &polecat).1, Some(v2.sha256.clone()));
    let out = work.path().join("restored/kilo.db");
    match snapshot::pull(&client(&server), &polecat, &out, &PullOptions::default()) {
        Ok(PullOutcome::Pulled(pulled)) => assert_eq!(pulled.sha256, v2.sha256),
        other => panic!("the polecat's snapshot: {other:?}"),
    }
    assert_eq!(sha256_file(&out), v2.sha256);
}
