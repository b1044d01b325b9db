//! No two sibling modules use each other, in any crate of the tree.

use std::path::Path;

/// Every crate's source folder, from the repository's root.
const SOURCES: &[&str] = &[
    "crates/stasis-domain/src",
    "crates/stasis-api/src",
    "crates/stasis-sqlite/src",
    "host/src",
    "client/src",
    "edge/src",
    "components/guest/src",
    "components/event-log/src",
    "components/state/src",
    "bench/src",
    "tools/demo/src",
    "tools/structure/src",
    "tests/conformance/src",
    "tests/kilo-harness/src",
    "tests/kill-campaign/src",
];

#[test]
fn no_two_sibling_modules_use_each_other() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut found = Vec::new();
    for src in SOURCES {
        let circles = stasis_structure::circles(&root.join(src))
            .unwrap_or_else(|err| panic!("reading {src}: {err}"));
        found.extend(circles.iter().map(|circle| format!("{src}: {circle}")));
    }
    assert!(found.is_empty(), "import circles:\n{}", found.join("\n"));
}

#[test]
fn a_circle_between_two_siblings_is_found_and_a_parent_child_pair_is_not() {
    let dir = std::env::temp_dir().join(format!("stasis-structure-{}", std::process::id()));
    let src = dir.join("src");
    std::fs::create_dir_all(src.join("a")).expect("folders");
    let write = |path: &str, text: &str| std::fs::write(src.join(path), text).expect("write");
    write("lib.rs", "mod a;\nmod b;\n");
    write(
        "a/mod.rs",
        "mod c;\nuse crate::b::Thing;\n// crate::b::Comment is not code\n",
    );
    write("a/c.rs", "use super::Shared;\n");
    write("b.rs", "use crate::{a::c::Other, lib};\n");
    let circles = stasis_structure::circles(&src).expect("read");
    std::fs::remove_dir_all(&dir).expect("cleanup");
    let shown: Vec<String> = circles.iter().map(ToString::to_string).collect();
    assert_eq!(
        shown,
        vec!["a <-> b (a uses b::Thing; b uses a::c::Other)".to_owned()]
    );
}
