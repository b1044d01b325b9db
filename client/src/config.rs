//! Where the server is and how to prove who we are: `STASIS_URL` and `STASIS_TOKEN`.

use std::time::Duration;

use crate::error::{Error, Result};

/// The environment variable naming the server's base URL.
pub const URL_ENV: &str = "STASIS_URL";
/// The environment variable holding the bearer token.
pub const TOKEN_ENV: &str = "STASIS_TOKEN";

/// The server's base URL and the bearer token sent with every request.
#[derive(Clone)]
pub struct Config {
    base_url: String,
    token: Option<String>,
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("base_url", &self.base_url)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

impl Config {
    /// A configuration for the server at `url` (`http://` or `https://`, no query), sending
    /// `token` as a bearer token when given (an empty token counts as none).
    pub fn new(url: &str, token: Option<String>) -> Result<Self> {
        let url = url.trim();
        let rest = url
            .strip_prefix("http://")
            .or_else(|| url.strip_prefix("https://"))
            .ok_or_else(|| {
                Error::Config(format!(
                    "{URL_ENV} must start with http:// or https://, got {url:?}"
                ))
            })?;
        if rest.is_empty() || rest.starts_with('/') {
            return Err(Error::Config(format!("{URL_ENV} has no host: {url:?}")));
        }
        if rest.contains(['?', '#', ' ']) {
            return Err(Error::Config(format!(
                "{URL_ENV} must be a base URL without query, fragment or spaces: {url:?}"
            )));
        }
        let token = token.map(|t| t.trim().to_owned()).filter(|t| !t.is_empty());
        Ok(Config {
            base_url: url.trim_end_matches('/').to_owned(),
            token,
        })
    }

    /// The configuration from `STASIS_URL` (required) and `STASIS_TOKEN` (optional).
    pub fn from_env() -> Result<Self> {
        let url = std::env::var(URL_ENV)
            .map_err(|_| Error::Config(format!("{URL_ENV} is not set (or pass --url)")))?;
        Config::new(&url, std::env::var(TOKEN_ENV).ok())
    }

    /// The base URL, without a trailing slash.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The full URL of `path` (which starts with `/`).
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base_url)
    }

    /// The configured token, if any.
    pub fn token(&self) -> Option<&str> {
        self.token.as_deref()
    }

    /// The `Authorization` header value, when a token is configured.
    pub fn authorization(&self) -> Option<String> {
        self.token.as_ref().map(|t| format!("Bearer {t}"))
    }
}

/// Parses a duration such as `10m`, `90s`, `1h30m`, `500ms`, or a bare number of seconds.
pub fn parse_duration(text: &str) -> Result<Duration> {
    let bad = || {
        Error::Config(format!(
            "invalid duration {text:?}: use e.g. 10m, 90s, 1h30m, 500ms or a number of seconds"
        ))
    };
    let text = text.trim();
    if text.is_empty() {
        return Err(bad());
    }
    if let Ok(secs) = text.parse::<u64>() {
        return Ok(Duration::from_secs(secs));
    }
    let mut total = Duration::ZERO;
    let mut rest = text;
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
        if digits == 0 {
            return Err(bad());
        }
        let value: u64 = rest[..digits].parse().map_err(|_| bad())?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(rest.len());
        let unit = match &rest[..unit_len] {
            "ms" => Duration::from_millis(value),
            "s" => Duration::from_secs(value),
            "m" => Duration::from_secs(value.saturating_mul(60)),
            "h" => Duration::from_secs(value.saturating_mul(3600)),
            _ => return Err(bad()),
        };
        total = total.saturating_add(unit);
        rest = &rest[unit_len..];
    }
    Ok(total)
}

/// Parses a size such as `64MiB`, `512KiB`, `1GiB` or a bare number of bytes.
pub fn parse_size(text: &str) -> Result<u64> {
    let bad = || {
        Error::Config(format!(
            "invalid size {text:?}: use e.g. 64MiB, 512KiB, 1GiB or a number of bytes"
        ))
    };
    let text = text.trim();
    let digits = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let value: u64 = text[..digits].parse().map_err(|_| bad())?;
    let unit: u64 = match text[digits..].trim() {
        "" | "B" => 1,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        _ => return Err(bad()),
    };
    value.checked_mul(unit).ok_or_else(bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_base_url_loses_its_trailing_slash() -> Result<()> {
        let config = Config::new("http://127.0.0.1:8787/", Some("t".into()))?;
        assert_eq!(config.url("/healthz"), "http://127.0.0.1:8787/healthz");
        assert_eq!(config.authorization().as_deref(), Some("Bearer t"));
        Ok(())
    }

    #[test]
    fn urls_without_scheme_or_with_a_query_are_refused() {
        assert!(Config::new("127.0.0.1:8787", None).is_err());
        assert!(Config::new("ftp://x", None).is_err());
        assert!(Config::new("http://", None).is_err());
        assert!(Config::new("http://x/?a=1", None).is_err());
    }

    #[test]
    fn an_empty_token_is_no_token() -> Result<()> {
        let config = Config::new("https://stasis.example", Some("  ".into()))?;
        assert_eq!(config.authorization(), None);
        assert!(!format!("{config:?}").contains("Bearer"));
        Ok(())
    }

    #[test]
    fn sizes_parse_with_binary_units_and_as_bare_bytes() -> Result<()> {
        assert_eq!(parse_size("64MiB")?, 64 << 20);
        assert_eq!(parse_size("512 KiB")?, 512 << 10);
        assert_eq!(parse_size("1GiB")?, 1 << 30);
        assert_eq!(parse_size("1000")?, 1000);
        for bad in ["", "MiB", "5MB", "1.5GiB", "-1", "99999999999999GiB"] {
            assert!(parse_size(bad).is_err(), "{bad:?} should be refused");
        }
        Ok(())
    }

    #[test]
    fn durations_parse_with_units_and_as_bare_seconds() -> Result<()> {
        assert_eq!(parse_duration("10m")?, Duration::from_secs(600));
        assert_eq!(parse_duration("90")?, Duration::from_secs(90));
        assert_eq!(parse_duration("1h30m")?, Duration::from_secs(5400));
        assert_eq!(parse_duration("250ms")?, Duration::from_millis(250));
        for bad in ["", "m", "10x", "1.5m", "-3s"] {
            assert!(parse_duration(bad).is_err(), "{bad:?} should be refused");
        }
        Ok(())
    }
}
