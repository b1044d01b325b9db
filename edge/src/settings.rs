//! Settings from the worker's environment (wrangler vars and secrets).

use stasis_api::auth::{KeyError, KeyRing, KeySettings};
use stasis_api::settings::{SettingsError, StorageSettings};
use stasis_api::summariser::{KEY_VAR, SummariserSettings, SummariserSettingsError};
use worker::Env;

/// The token keys, from the wrangler secrets `STASIS_SECRET` and
/// `STASIS_KEYS` and the secret or var `STASIS_SIGNING_KEY_ID`, read as the
/// host reads its settings; `None` when neither secret is set.
pub fn keys(env: &Env) -> Result<Option<KeyRing>, KeyError> {
    let secret = |name: &str| env.secret(name).ok().map(|s| s.to_string());
    let signing = secret("STASIS_SIGNING_KEY_ID")
        .or_else(|| env.var("STASIS_SIGNING_KEY_ID").ok().map(|v| v.to_string()));
    let (single, listed) = (secret("STASIS_SECRET"), secret("STASIS_KEYS"));
    KeyRing::from_settings(&KeySettings {
        secret: single.as_deref(),
        keys: listed.as_deref(),
        signing_key_id: signing.as_deref(),
    })
}

/// The storage settings from the wrangler vars, refused as the host
/// refuses them (`stasis_api::settings`).
pub fn storage(env: &Env) -> Result<StorageSettings, SettingsError> {
    StorageSettings::from_vars(|name| env.var(name).ok().map(|v| v.to_string()))
}

/// The summariser from the vars `STASIS_SUMMARISER_URL`,
/// `STASIS_SUMMARISER_MODEL`, `STASIS_SUMMARISER_DEADLINE_MS` and the secret
/// `STASIS_SUMMARISER_KEY`; `None` when neither URL nor model is set.
pub fn summariser(env: &Env) -> Result<Option<SummariserSettings>, SummariserSettingsError> {
    SummariserSettings::from_vars(|name| {
        let secret = (name == KEY_VAR)
            .then(|| env.secret(name).ok().map(|s| s.to_string()))
            .flatten();
        secret.or_else(|| env.var(name).ok().map(|v| v.to_string()))
    })
}

/// The clock (wasm32 has no portable one; the Workers runtime has Date).
pub fn now_ms() -> i64 {
    i64::try_from(worker::Date::now().as_millis()).unwrap_or(i64::MAX)
}
