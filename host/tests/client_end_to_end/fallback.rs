//! f. against a server without the chunk routes (the release before them), push and pull move
//! the whole file, and boot still hydrates.

use stasis_client::snapshot::{self, PullOptions, PullOutcome, PushOptions, TransferMode};
use stasis_client::{AgentRef, Client, Config};

use crate::helpers::{
    admin_token, append_rows, create_db, entries, head_snapshot, old_server, rows_for, sha256_file,
    start_server,
};

#[test]
fn a_server_without_the_chunk_routes_is_pushed_and_pulled_whole() {
    let data = tempfile::tempdir().expect("temp dir");
    let server = start_server(data.path());
    let old = old_server(&server.base);
    let client = Client::new(Config::new(&old.base, Some(admin_token())).expect("config"));
    let work = tempfile::tempdir().expect("temp dir");
    let db = work.path().join("kilo.db");
    create_db(&db, rows_for(2_000_000), "wal");
    let mayor = AgentRef::new("e2e-old", "hq", "mayor").expect("ids");
    let cache = snapshot::ChunkCache::new(work.path().join("cache"), 1 << 30);

    let push_options = PushOptions {
        cache: Some(cache.clone()),
        ..PushOptions::default()
    };
    let first = snapshot::push(&client, &mayor, &db, &push_options).expect("push");
    append_rows(&db, 5);
    let second = snapshot::push(&client, &mayor, &db, &push_options).expect("push");
    for receipt in [&first, &second] {
        let transfer = receipt.transfer.expect("transfer");
        assert_eq!(transfer.mode, TransferMode::WholeFile);
        assert_eq!(transfer.bytes_sent, receipt.size);
    }
    assert_eq!(second.version, first.version + 1);
    assert_eq!(
        old.refused(),
        2,
        "one question about missing chunks per push"
    );

    let out = work.path().join("restored/kilo.db");
    let pull_options = PullOptions {
        cache: Some(cache),
        ..PullOptions::default()
    };
    let pulled = match snapshot::pull(&client, &mayor, &out, &pull_options).expect("pull") {
        PullOutcome::Pulled(pulled) => pulled,
        PullOutcome::NoSnapshot => panic!("the snapshot is there"),
    };
    assert_eq!(
        pulled.transfer.map(|t| (t.mode, t.bytes_fetched)),
        Some((TransferMode::WholeFile, second.size))
    );
    assert_eq!(old.refused(), 3, "and one manifest asked for");
    let on_disk = sha256_file(&out);
    assert_eq!(
        (pulled.sha256.as_str(), second.sha256.as_str()),
        (on_disk.as_str(), on_disk.as_str())
    );
    assert_eq!(head_snapshot(&server, &mayor).1, Some(on_disk));
    assert_eq!(entries(out.parent().expect("parent")), ["kilo.db"]);
}
