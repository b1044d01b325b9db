//! What a scan keeps: every kind of entry, `.git` too; what git ignores left out in a real
//! worktree (and only there); excludes and includes; special files skipped and counted.

use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::net::UnixListener;
use std::process::Command;

use stasis_domain::workspace::{ContentHash, Node};

use super::super::ScanOptions;
use super::{noise, paths, scan_with, set_executable, write};

#[test]
fn every_kind_of_entry_is_kept_as_what_it_is() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    std::fs::create_dir_all(root.join("empty/nested-empty")).expect("mkdir");
    write(root, "bin/run.sh", b"#!/bin/sh\necho hi\n");
    set_executable(&root.join("bin/run.sh"));
    write(root, "zero", b"");
    write(root, "big.bin", &noise(3, 3 << 20));
    std::os::unix::fs::symlink("../nowhere/at/all", root.join("dangling")).expect("symlink");
    std::os::unix::fs::symlink("bin", root.join("bin-link")).expect("symlink");
    let odd = std::ffi::OsStr::from_bytes(b"caf\xe9.txt");
    std::fs::write(root.join(odd), b"latin-1 name").expect("write");
    let _socket = UnixListener::bind(root.join("agent.sock")).expect("socket");

    let scan = scan_with(root, &ScanOptions::default());
    assert_eq!(
        paths(&scan),
        [
            "big.bin",
            "bin",
            "bin-link",
            "bin/run.sh",
            "caf\u{fffd}.txt",
            "dangling",
            "empty",
            "empty/nested-empty",
            "zero"
        ]
    );
    let by_path = |p: &[u8]| {
        let entry = scan
            .manifest
            .entries
            .iter()
            .find(|e| e.path.as_bytes() == p);
        entry.expect("entry").node.clone()
    };
    assert!(matches!(by_path(b"bin/run.sh"), Node::File(f) if f.executable));
    assert!(matches!(by_path(b"big.bin"), Node::File(f) if !f.executable && f.chunks.len() > 10));
    assert!(
        matches!(by_path(b"zero"), Node::File(f) if f.size == 0 && f.chunks.is_empty()
        && f.sha256 == ContentHash::of(b""))
    );
    assert_eq!(
        by_path(b"dangling"),
        Node::Symlink {
            target: b"../nowhere/at/all".to_vec()
        }
    );
    assert_eq!(
        by_path(b"bin-link"),
        Node::Symlink {
            target: b"bin".to_vec()
        }
    );
    assert_eq!(by_path(b"empty/nested-empty"), Node::Dir);
    assert!(matches!(by_path(b"caf\xe9.txt"), Node::File(_)));
    assert_eq!(scan.stats.special_skipped, 1);
    assert_eq!(scan.summary.files, 4);
    assert_eq!(scan.summary.total_size, (3 << 20) + 18 + 12);
}

#[test]
fn a_few_thousand_small_files_are_all_kept() {
    let dir = tempfile::tempdir().expect("tempdir");
    for n in 0..3000 {
        write(
            dir.path(),
            &format!("d{:02}/f{n:04}.txt", n % 30),
            format!("file {n}\n").as_bytes(),
        );
    }
    let scan = scan_with(dir.path(), &ScanOptions::default());
    assert_eq!(scan.summary.files, 3000);
    assert_eq!(scan.summary.dirs, 30);
    assert_eq!(scan.chunks.len(), 3000);
    assert_eq!(scan.stats.files_read, 3000);
}

fn git(root: &std::path::Path, args: &[&str]) {
    let status = Command::new("git")
        .args(args)
        .current_dir(root)
        .status()
        .expect("git");
    assert!(status.success(), "git {args:?}");
}

fn ignoring_tree(root: &std::path::Path) {
    write(root, ".gitignore", b"target/\n*.log\n");
    write(root, "src/main.rs", b"fn main() {}\n");
    write(root, "src/.gitignore", b"generated.rs\n");
    write(root, "src/generated.rs", b"// generated\n");
    write(root, "target/debug/app", b"binary");
    write(root, "build.log", b"log");
    write(root, "node_modules/x/index.js", b"module.exports = 1;\n");
    write(root, "secret.txt", b"not for git");
}

#[test]
fn what_git_ignores_in_a_worktree_is_left_out_and_git_itself_kept() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    git(root, &["init", "-q"]);
    ignoring_tree(root);
    write(root, ".gitignore", b"target/\n*.log\nnode_modules/\n");
    write(root, ".git/info/exclude", b"secret.txt\n");
    let scan = scan_with(root, &ScanOptions::default());
    let kept = paths(&scan);
    for present in [
        ".git",
        ".git/HEAD",
        ".git/info/exclude",
        ".gitignore",
        "src/main.rs",
        "src/.gitignore",
    ] {
        assert!(
            kept.iter().any(|p| p == present),
            "{present} missing from {kept:?}"
        );
    }
    for absent in [
        "target",
        "build.log",
        "src/generated.rs",
        "node_modules",
        "secret.txt",
    ] {
        assert!(
            !kept.iter().any(|p| p.starts_with(absent)),
            "{absent} kept: {kept:?}"
        );
    }

    let options = ScanOptions {
        includes: vec!["node_modules/".into(), "*.log".into()],
        excludes: vec!["src/".into()],
        ..ScanOptions::default()
    };
    let kept = paths(&scan_with(root, &options));
    for present in [
        "node_modules",
        "node_modules/x",
        "node_modules/x/index.js",
        "build.log",
    ] {
        assert!(
            kept.iter().any(|p| p == present),
            "{present} missing from {kept:?}"
        );
    }
    for absent in ["src", "target", "secret.txt"] {
        assert!(
            !kept.iter().any(|p| p.starts_with(absent)),
            "{absent} kept: {kept:?}"
        );
    }

    let everything = ScanOptions {
        gitignore: false,
        ..ScanOptions::default()
    };
    let kept = paths(&scan_with(root, &everything));
    for present in [
        "target/debug/app",
        "build.log",
        "src/generated.rs",
        "secret.txt",
    ] {
        assert!(
            kept.iter().any(|p| p == present),
            "{present} missing from {kept:?}"
        );
    }
}

#[test]
fn gitignore_files_outside_a_git_worktree_are_just_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    ignoring_tree(dir.path());
    let kept = paths(&scan_with(dir.path(), &ScanOptions::default()));
    assert!(kept.iter().any(|p| p == "target/debug/app"), "{kept:?}");
    assert!(kept.iter().any(|p| p == "build.log"), "{kept:?}");
}

#[test]
fn a_bad_pattern_is_refused_by_name() {
    let dir = tempfile::tempdir().expect("tempdir");
    let options = ScanOptions {
        excludes: vec!["a{b".into()],
        ..ScanOptions::default()
    };
    let err = super::super::scan(dir.path(), &options).expect_err("refused");
    assert!(err.to_string().contains("a{b"), "{err}");
}
