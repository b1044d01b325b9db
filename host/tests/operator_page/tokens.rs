//! The tokens the test signs in with, under the server's secret.

use stasis_api::auth::{Grant, KeyRing, Scope};
use std::{process::Command, time::Duration};

/// An admin token, for seeding the town through the API.
pub fn admin(secret: &str) -> String {
    mint(secret, Grant::new(Scope::Admin), now(), super::support::DAY)
}

/// A read-only token for `town`, minted by `stasis token` as an operator would.
pub fn read_only_by_cli(secret: &str, town: &str) -> String {
    by_cli(secret, &["token", "--town", town, "--read-only"])
}

/// A town token that may write, minted by `stasis token` as an operator would.
pub fn writer_by_cli(secret: &str, town: &str) -> String {
    by_cli(secret, &["token", "--town", town])
}

fn by_cli(secret: &str, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_stasis"))
        .args(args)
        .env("STASIS_SECRET", secret)
        .output()
        .expect("stasis token runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .expect("a token is text")
        .trim()
        .to_owned()
}

/// A genuine read-only token of `town` that lived one minute, two minutes ago.
pub fn expired_read_only(secret: &str, town: &str) -> String {
    let mut grant = Grant::new(Scope::Town(town.to_owned()));
    grant.read_only = true;
    mint(secret, grant, now() - 120, Duration::from_secs(60))
}

fn mint(secret: &str, grant: Grant, issued_at: u64, ttl: Duration) -> String {
    let keys = KeyRing::single(secret).expect("the server's secret is a valid key");
    keys.mint(&grant, issued_at, ttl).expect("a token mints")
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("the clock is past 1970")
        .as_secs()
}
