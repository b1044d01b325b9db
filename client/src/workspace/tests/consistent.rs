//! A file that changes while it is read is read again and stored as one state; one that never
//! stops changing fails the scan by name, and nothing torn is stored.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use stasis_domain::workspace::{ContentHash, Node};

use super::super::{ScanOptions, WorkspaceError};
use super::{noise, scan_with, write};

#[test]
fn a_file_changed_during_its_read_is_read_again() {
    let dir = tempfile::tempdir().expect("tempdir");
    let original = noise(5, 1 << 20);
    write(dir.path(), "busy.bin", &original);
    write(dir.path(), "calm.txt", b"calm");
    let changed = noise(6, 1 << 20); // same size, other bytes
    let target = dir.path().join("busy.bin");
    let replacement = changed.clone();
    let options = ScanOptions {
        after_read: Some(Arc::new(move |path: &Path, attempt| {
            if path == target && attempt == 1 {
                std::fs::write(path, &replacement).expect("rewrite");
            }
        })),
        ..ScanOptions::default()
    };
    let scan = scan_with(dir.path(), &options);
    assert_eq!(scan.stats.rereads, 1);
    let busy = scan
        .manifest
        .entries
        .iter()
        .find(|e| e.path.as_bytes() == b"busy.bin");
    let Some(Node::File(file)) = busy.map(|e| &e.node) else {
        panic!("busy.bin missing");
    };
    assert_eq!(file.sha256, ContentHash::of(&changed));
    assert_ne!(file.sha256, ContentHash::of(&original));
}

#[test]
fn a_file_that_never_stops_changing_fails_the_scan_by_name() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(dir.path(), "log.txt", b"line\n");
    let writes = Arc::new(AtomicU32::new(0));
    let counter = Arc::clone(&writes);
    let options = ScanOptions {
        max_read_attempts: 3,
        after_read: Some(Arc::new(move |path: &Path, _| {
            let n = counter.fetch_add(1, Ordering::SeqCst);
            std::fs::write(path, format!("line {n}\n")).expect("append");
        })),
        ..ScanOptions::default()
    };
    let err = super::super::scan(dir.path(), &options).expect_err("unstable");
    assert!(
        matches!(&err, WorkspaceError::Unstable { attempts: 3, path } if path.ends_with("log.txt")),
        "{err}"
    );
    assert_eq!(writes.load(Ordering::SeqCst), 3);
}
