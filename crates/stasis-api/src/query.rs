//! Query-string parameters.

use crate::error::ApiError;
use stasis_domain::ids;

/// A parsed query string.
pub struct Query {
    pairs: Vec<(String, String)>,
}

impl Query {
    /// Parses `a=1&b=x` (percent-decoded).
    pub fn parse(raw: Option<&str>) -> Self {
        let pairs = form_urlencoded::parse(raw.unwrap_or("").as_bytes())
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
        Self { pairs }
    }

    /// The last value given for `name`.
    pub fn text(&self, name: &str) -> Option<&str> {
        self.pairs
            .iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// A non-negative integer parameter.
    pub fn u64(&self, name: &str) -> Result<Option<u64>, ApiError> {
        self.text(name)
            .map(|raw| {
                raw.parse::<u64>().map_err(|_| {
                    ApiError::invalid_request(format!(
                        "{name} must be a non-negative integer, got {raw:?}"
                    ))
                })
            })
            .transpose()
    }

    /// A `true`/`false` parameter (`1`/`0` too); absent is `false`.
    pub fn flag(&self, name: &str) -> Result<bool, ApiError> {
        match self.text(name) {
            None | Some("false" | "0") => Ok(false),
            Some("true" | "1") => Ok(true),
            Some(raw) => Err(ApiError::invalid_request(format!(
                "{name} must be true or false, got {raw:?}"
            ))),
        }
    }

    /// An id parameter.
    pub fn id(&self, name: &str) -> Result<Option<String>, ApiError> {
        self.text(name)
            .map(|raw| {
                ids::check_id(name, raw)
                    .map(str::to_owned)
                    .map_err(ApiError::from)
            })
            .transpose()
    }
}
