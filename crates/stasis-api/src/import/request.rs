//! Which import a request belongs to: a whole manifest (no parameters), or
//! part `part` of import `import_id`, the last one with `commit=true`.

use crate::{error::ApiError, query::Query};
use stasis_domain::operation::agent::{self as op, AgentOperation};

/// The query parameters of `PUT /import`.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct ImportRequest {
    /// `Some((import_id, part))` for a part of a multi-part import.
    part: Option<(String, u64)>,
    /// Whether this request ends the import with its commit.
    commit: bool,
}

impl ImportRequest {
    pub fn parse(query: &Query) -> Result<Self, ApiError> {
        let import_id = query.id("import_id")?;
        let part = query.u64("part")?;
        let commit = match query.text("commit") {
            None | Some("false") => false,
            Some("true") => true,
            Some(other) => {
                return Err(ApiError::invalid_request(format!(
                    "commit must be true or false, got {other:?}"
                )));
            }
        };
        match (import_id, part) {
            (None, None) if query.text("commit").is_some() => Err(ApiError::invalid_request(
                "commit belongs to a part: give import_id and part with it",
            )),
            (None, None) => Ok(Self {
                part: None,
                commit: true,
            }),
            (Some(_), Some(0)) => Err(ApiError::invalid_request("parts count from 1")),
            (Some(import_id), Some(part)) => Ok(Self {
                part: Some((import_id, part)),
                commit,
            }),
            _ => Err(ApiError::invalid_request(
                "import_id and part go together: a multi-part import names both on every part",
            )),
        }
    }

    /// The call that opens this request's share of the import: part 1 (or
    /// a whole manifest) begins one, a later part resumes it.
    pub fn opening(&self) -> AgentOperation<u64> {
        match &self.part {
            None => op::import_begin(None),
            Some((import_id, 1)) => op::import_begin(Some(import_id.clone())),
            Some((import_id, part)) => op::import_resume(import_id.clone(), *part),
        }
    }

    /// `(import_id, part)` when this request stages a part without
    /// committing.
    pub fn part_only(&self) -> Option<(&str, u64)> {
        match &self.part {
            Some((import_id, part)) if !self.commit => Some((import_id, *part)),
            _ => None,
        }
    }
}
