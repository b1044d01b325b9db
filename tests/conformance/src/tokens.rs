//! Tokens for the server under test, minted here from its own keys (the
//! settings it reads: `STASIS_SECRET`, `STASIS_KEYS`,
//! `STASIS_SIGNING_KEY_ID`), and tokens it must refuse, each for one reason.

use crate::target;
use stasis_api::auth::{Grant, KeyRing, Scope};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The lifetime of the tokens the suite uses unless a case says otherwise.
pub const HOUR: Duration = Duration::from_secs(3600);

/// The key id of a token the server cannot know.
pub const UNKNOWN_KEY_ID: &str = "not-a-key-of-this-server";

fn now_s() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// A token for `grant`, valid from now for `ttl`, signed with the server's
/// signing key.
pub fn mint(grant: &Grant, ttl: Duration) -> String {
    target()
        .keys
        .mint(grant, now_s(), ttl)
        .unwrap_or_else(|err| panic!("minting a token: {err}"))
}

/// [`mint`] with the key `key_id`, any the server holds.
pub fn mint_with(key_id: &str, grant: &Grant, ttl: Duration) -> String {
    target()
        .keys
        .mint_with(key_id, grant, now_s(), ttl)
        .unwrap_or_else(|err| panic!("minting a token with key {key_id}: {err}"))
}

/// Every key id the server holds.
pub fn key_ids() -> Vec<String> {
    target().keys.key_ids().map(str::to_owned).collect()
}

/// An admin token for the server under test.
pub fn admin_token() -> String {
    mint(&Grant::new(Scope::Admin), HOUR)
}

/// A token that reaches `town` only.
pub fn town_token(town: &str) -> String {
    mint(&Grant::new(Scope::Town(town.to_owned())), HOUR)
}

/// A token of `town` bound to `container_id`.
pub fn container_token(town: &str, container_id: &str) -> String {
    let scope = Scope::Container {
        town: town.to_owned(),
        container_id: container_id.to_owned(),
    };
    mint(&Grant::new(scope), HOUR)
}

/// A bootstrap token of `town` (what a container is started with), with a
/// fresh id.
pub fn bootstrap_token(town: &str) -> String {
    let scope = Scope::Bootstrap {
        town: town.to_owned(),
        token_id: fresh_token_id(),
    };
    mint(&Grant::new(scope), HOUR)
}

/// 128 random bits in hex: no two bootstrap tokens of the suite share an id.
fn fresh_token_id() -> String {
    use std::io::Read as _;
    let mut bytes = [0_u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut random| random.read_exact(&mut bytes))
        .unwrap_or_else(|err| panic!("reading /dev/urandom: {err}"));
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A token for `grant`, issued now for `ttl`, in a line of tokens that
/// started at `origin_s` (as a refresh mints it).
pub fn mint_descendant(grant: &Grant, ttl: Duration, origin_s: u64) -> String {
    target()
        .keys
        .mint_descendant(grant, now_s(), ttl, origin_s)
        .unwrap_or_else(|err| panic!("minting a token: {err}"))
}

/// Seconds since the epoch, by this machine's clock.
pub fn now_secs() -> u64 {
    now_s()
}

/// A read-only token of `town`.
pub fn read_only_token(town: &str) -> String {
    let grant = Grant {
        scope: Scope::Town(town.to_owned()),
        read_only: true,
    };
    mint(&grant, HOUR)
}

/// A town token that expired a minute ago (minted two minutes ago to live
/// one).
pub fn expired_token(town: &str) -> String {
    let grant = Grant::new(Scope::Town(town.to_owned()));
    let minute = Duration::from_secs(60);
    target()
        .keys
        .mint(&grant, now_s() - 2 * minute.as_secs(), minute)
        .unwrap_or_else(|err| panic!("minting a token: {err}"))
}

/// An admin token signed by a key id the server does not hold.
pub fn unknown_key_token() -> String {
    foreign_keys(UNKNOWN_KEY_ID)
        .mint(&Grant::new(Scope::Admin), now_s(), HOUR)
        .unwrap_or_else(|err| panic!("minting a token: {err}"))
}

/// An admin token under the server's signing key id but another secret: a
/// forged signature.
pub fn foreign_token() -> String {
    foreign_keys(target().keys.signing_key_id())
        .mint(&Grant::new(Scope::Admin), now_s(), HOUR)
        .unwrap_or_else(|err| panic!("minting a token: {err}"))
}

fn foreign_keys(key_id: &str) -> KeyRing {
    let settings = stasis_api::auth::KeySettings {
        keys: Some(&format!("{key_id}=not-the-server-secret-at-all")),
        signing_key_id: Some(key_id),
        ..Default::default()
    };
    match KeyRing::from_settings(&settings) {
        Ok(Some(keys)) => keys,
        other => panic!("foreign keys: {other:?}"),
    }
}
