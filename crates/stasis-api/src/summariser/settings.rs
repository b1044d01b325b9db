//! The summariser's settings, under one set of rules for both runtimes
//! (host flags and environment, edge vars and a secret): none, or a URL and
//! a model together, an optional key, and a deadline.

use std::fmt;
use thiserror::Error;

/// How long one rebuild waits on the summariser when none is named.
pub const DEFAULT_SUMMARISER_DEADLINE_MS: u64 = 10_000;

/// The variable (and the edge's var) naming the summariser's URL.
pub const URL_VAR: &str = "STASIS_SUMMARISER_URL";
/// The variable naming the model.
pub const MODEL_VAR: &str = "STASIS_SUMMARISER_MODEL";
/// The variable (the edge's secret) holding the API key.
pub const KEY_VAR: &str = "STASIS_SUMMARISER_KEY";
/// The edge's var for the deadline, in ms (the host takes a duration).
pub const DEADLINE_MS_VAR: &str = "STASIS_SUMMARISER_DEADLINE_MS";

const CHAT_PATH: &str = "/chat/completions";

/// An OpenAI-compatible chat-completions summariser.
#[derive(Clone, PartialEq, Eq)]
pub struct SummariserSettings {
    /// The `POST` endpoint (`…/chat/completions`).
    pub endpoint: String,
    /// The `model` of each request.
    pub model: String,
    /// Sent as `Authorization: Bearer <key>` when set.
    pub key: Option<String>,
    /// How long one rebuild may wait on it, in ms, all its calls together.
    pub deadline_ms: u64,
}

/// A summariser setting the rules refuse.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SummariserSettingsError {
    /// A URL without a model, or a model without a URL.
    #[error(
        "{URL_VAR} (--summariser-url) and {MODEL_VAR} (--summariser-model) go together: set \
         both, or neither"
    )]
    Incomplete,
    /// Not an http(s) URL.
    #[error("{URL_VAR} (--summariser-url) must be an http:// or https:// URL; got {0:?}")]
    NotAUrl(String),
    /// A deadline of nothing, or not a number.
    #[error("the summariser's deadline must be a positive number of ms; got {0:?}")]
    BadDeadline(String),
}

impl SummariserSettings {
    /// The settings from their parts; `Ok(None)` when neither URL nor model
    /// is set. `url` is an OpenAI base URL (`https://host/v1`, to which
    /// `/chat/completions` is added) or the full endpoint.
    pub fn new(
        url: Option<&str>,
        model: Option<&str>,
        key: Option<&str>,
        deadline_ms: u64,
    ) -> Result<Option<Self>, SummariserSettingsError> {
        let (url, model) = match (present(url), present(model)) {
            (None, None) => return Ok(None),
            (Some(url), Some(model)) => (url, model),
            _ => return Err(SummariserSettingsError::Incomplete),
        };
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(SummariserSettingsError::NotAUrl(url.to_owned()));
        }
        if deadline_ms == 0 {
            return Err(SummariserSettingsError::BadDeadline("0".into()));
        }
        let endpoint = if url.ends_with(CHAT_PATH) {
            url.to_owned()
        } else {
            format!("{}{CHAT_PATH}", url.trim_end_matches('/'))
        };
        Ok(Some(Self {
            endpoint,
            model: model.to_owned(),
            key: present(key).map(str::to_owned),
            deadline_ms,
        }))
    }

    /// The settings from named variables (the edge's vars and secret).
    pub fn from_vars(
        var: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<Self>, SummariserSettingsError> {
        let deadline_ms = match var(DEADLINE_MS_VAR) {
            None => DEFAULT_SUMMARISER_DEADLINE_MS,
            Some(raw) => raw
                .trim()
                .parse::<u64>()
                .map_err(|_| SummariserSettingsError::BadDeadline(raw.clone()))?,
        };
        Self::new(
            var(URL_VAR).as_deref(),
            var(MODEL_VAR).as_deref(),
            var(KEY_VAR).as_deref(),
            deadline_ms,
        )
    }
}

/// `value` trimmed, if anything is left.
fn present(value: Option<&str>) -> Option<&str> {
    value.map(str::trim).filter(|v| !v.is_empty())
}

/// The key never goes to a log.
impl fmt::Debug for SummariserSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SummariserSettings")
            .field("endpoint", &self.endpoint)
            .field("model", &self.model)
            .field("key", &self.key.as_ref().map(|_| "<redacted>"))
            .field("deadline_ms", &self.deadline_ms)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_base_url_gets_the_chat_path_and_a_full_one_is_kept() {
        let base = SummariserSettings::new(Some("http://h/v1/"), Some("m"), None, 5);
        assert_eq!(
            base.map(|s| s.map(|s| s.endpoint)),
            Ok(Some("http://h/v1/chat/completions".to_owned()))
        );
        let full = SummariserSettings::new(
            Some("https://h/x/chat/completions"),
            Some("m"),
            Some(" "),
            5,
        );
        let full = full.ok().flatten();
        assert_eq!(
            full.as_ref().map(|s| s.endpoint.as_str()),
            Some("https://h/x/chat/completions")
        );
        assert_eq!(full.and_then(|s| s.key), None);
    }

    #[test]
    fn half_a_setting_or_a_bad_one_is_refused() {
        assert_eq!(SummariserSettings::new(None, None, Some("k"), 5), Ok(None));
        assert_eq!(
            SummariserSettings::new(Some("http://h"), None, None, 5),
            Err(SummariserSettingsError::Incomplete)
        );
        assert!(matches!(
            SummariserSettings::new(Some("ftp://h"), Some("m"), None, 5),
            Err(SummariserSettingsError::NotAUrl(_))
        ));
        let vars = |name: &str| match name {
            URL_VAR => Some("http://h".to_owned()),
            MODEL_VAR => Some("m".to_owned()),
            DEADLINE_MS_VAR => Some("soon".to_owned()),
            _ => None,
        };
        assert!(matches!(
            SummariserSettings::from_vars(vars),
            Err(SummariserSettingsError::BadDeadline(_))
        ));
    }

    #[test]
    fn the_key_is_not_shown() {
        let settings = SummariserSettings::new(Some("http://h"), Some("m"), Some("sk-secret"), 5);
        let shown = format!("{settings:?}");
        assert!(!shown.contains("sk-secret"), "{shown}");
    }
}
