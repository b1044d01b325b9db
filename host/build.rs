//! Builds the wasm components and hands their bytes to the host, so that the
//! `stasis` binary carries its guests and needs no files beside it.
//!
//! The components form their own workspace (`components/`), built for
//! `wasm32-wasip2` into `target/components` with a nested cargo. A prebuilt
//! set can be used instead by pointing `STASIS_COMPONENTS_DIR` at a folder
//! holding the `.wasm` files.

#![allow(
    clippy::expect_used,
    clippy::panic,
    reason = "a build script reports failure by panicking"
)]

use std::{env, path::PathBuf, process::Command};

const COMPONENTS: &[&str] = &["stasis_event_log_component", "stasis_state_component"];

fn main() {
    let manifest_dir =
        PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let root = manifest_dir
        .parent()
        .expect("host/ sits in the repository")
        .to_path_buf();
    let out_dir = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    println!("cargo:rerun-if-env-changed=STASIS_COMPONENTS_DIR");

    let wasm_dir = match env::var_os("STASIS_COMPONENTS_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => build_components(&root),
    };
    for name in COMPONENTS {
        let from = wasm_dir.join(format!("{name}.wasm"));
        let to = out_dir.join(format!("{name}.wasm"));
        std::fs::copy(&from, &to).unwrap_or_else(|err| panic!("copy {}: {err}", from.display()));
    }
}

fn build_components(root: &std::path::Path) -> PathBuf {
    for watched in [
        "components",
        "crates/stasis-domain/src",
        "crates/stasis-domain/Cargo.toml",
        "wit",
    ] {
        println!("cargo:rerun-if-changed={}", root.join(watched).display());
    }
    let target_dir = root.join("target").join("components");
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut command = Command::new(cargo);
    command
        .current_dir(root.join("components"))
        .args([
            "build",
            "--release",
            "--target",
            "wasm32-wasip2",
            "--target-dir",
        ])
        .arg(&target_dir);
    // The outer build's flags and wrappers (clippy, coverage) are for the
    // host, not the guests.
    for var in [
        "CARGO_ENCODED_RUSTFLAGS",
        "RUSTFLAGS",
        "RUSTC_WRAPPER",
        "RUSTC_WORKSPACE_WRAPPER",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_TARGET",
        "CARGO_MAKEFLAGS",
        "CARGO_PRIMARY_PACKAGE",
        "CARGO_MANIFEST_DIR",
        "CARGO_MANIFEST_PATH",
    ] {
        command.env_remove(var);
    }
    let status = command.status().expect("run cargo for the components");
    assert!(
        status.success(),
        "building the wasm32-wasip2 components failed; is the target installed? \
         (rustup target add wasm32-wasip2)"
    );
    target_dir.join("wasm32-wasip2").join("release")
}
