//! One fuzz request: its parts while the fuzz shapes it, the check of the
//! contract's order it must be refused by, and sending it.

use std::time::Duration;

use super::bodies::Payload;
use super::catalog::Route;
use crate::Reply;
use crate::raw::{self, Framing};

/// How long a request may wait for its answer before it counts as lost.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(30);

/// Where a request's effect would show, for the state check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Target {
    /// `/healthz`: no state.
    Nowhere,
    /// The world's town (and its Mayor's log).
    Town,
    /// The world's agent with this index.
    Agent(usize),
}

/// The checks of `docs/http-api.md` in their order ("auth (401) → route
/// (404, 405) → ids (400) → town scope (403) → content type (415) → body
/// size (413) → body (400)"), with the query beside the body. A request
/// broken at several places is refused by the first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Stage {
    /// No, or a wrong, token: 401.
    Auth,
    /// A path no route has: 404.
    Route,
    /// A method the route does not take: 405.
    Method,
    /// An invalid id in the path: 400 `invalid_id`.
    Id,
    /// A dot segment in the path: 400 `invalid_id` (on the edge the URL
    /// standard resolves it first: 404 or 405, README "Known limits").
    DotId,
    /// A town token on another town: 403.
    Scope,
    /// A content type the route does not take: 415.
    ContentType,
    /// A declared or real body over the route's limit: 413.
    Size,
    /// A query parameter or header the read cannot use: 400.
    Query,
    /// A body the operation must refuse: some documented 4xx.
    Body,
}

impl Stage {
    /// True when `status` is what this stage refuses with.
    pub fn allows(self, status: u16, on_edge: bool) -> bool {
        match self {
            Stage::Auth => status == 401,
            Stage::Route => status == 404,
            Stage::Method => status == 405,
            Stage::Id | Stage::Query => status == 400,
            Stage::DotId if on_edge => matches!(status, 400 | 404 | 405),
            Stage::DotId => status == 400,
            Stage::Scope => status == 403,
            Stage::ContentType => status == 415,
            Stage::Size => status == 413,
            Stage::Body => (400..500).contains(&status),
        }
    }
}

/// A request as the fuzz shapes it.
#[derive(Debug, Clone)]
pub struct Request {
    /// The method, as sent (odd ones included).
    pub method: String,
    /// The endpoint the path was built for.
    pub route: Route,
    /// Where its effect would show.
    pub target: Target,
    /// Path segments, each flagged when it is an id.
    pub segments: Vec<(String, bool)>,
    /// Appended after the path when set (`/` at the end).
    pub trailing_slash: bool,
    /// Query pairs, written as given (already encoded).
    pub query: Vec<(String, String)>,
    /// The `Authorization` header value and what it is, for the report.
    pub auth: Option<(String, &'static str)>,
    /// The check the token breaks (401 or 403), if it breaks one.
    pub auth_breaks: Option<Stage>,
    /// Other headers.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub payload: Payload,
    /// How the body is framed.
    pub framing: Framing,
    /// The checks a mutation broke.
    pub stages: Vec<Stage>,
    /// False once the path no longer names `route`.
    pub shape_kept: bool,
    /// What the fuzz did to it, for the report.
    pub notes: Vec<String>,
}

impl Request {
    /// The check that must refuse it, if a mutation broke one. Whether a
    /// broken content type, body or query counts depends on the method it
    /// ended with; whether the method does on the route.
    pub fn first_stage(&self) -> Option<Stage> {
        let method = self.method.as_str();
        let takes = self.route.methods().contains(&method);
        let writes = takes && matches!(method, "PUT" | "POST");
        let reads = matches!(method, "GET" | "HEAD");
        // `/healthz` needs no token and belongs to no town.
        let public = self.target_path().split('?').next() == Some("/healthz");
        let applies = |stage: &Stage| match stage {
            Stage::Auth => !public,
            Stage::Scope => self.route != Route::Health,
            Stage::ContentType | Stage::Body => writes,
            Stage::Query => reads,
            _ => true,
        };
        let wrong_method = (!takes).then_some(Stage::Method);
        let wrong_type = self.wrong_content_type().then_some(Stage::ContentType);
        self.stages
            .iter()
            .copied()
            .chain(wrong_type)
            .chain(self.auth_breaks)
            .filter(applies)
            .chain(wrong_method)
            .min()
    }

    /// True for `GET` and `HEAD`, which change nothing whatever they answer.
    pub fn is_read(&self) -> bool {
        matches!(self.method.as_str(), "GET" | "HEAD")
    }

    /// Sets header `name` (any case), replacing an earlier value.
    pub fn set_header(&mut self, name: &str, value: &str) {
        self.headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
        self.headers.push((name.to_owned(), value.to_owned()));
    }

    /// The value of header `name`, if set.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// True when the request carries a content type its route does not take.
    fn wrong_content_type(&self) -> bool {
        let wanted = match self.route {
            Route::Snapshot => "application/octet-stream",
            _ => "application/json",
        };
        // An empty value counts as none (docs/http-api.md, Conventions).
        self.header("content-type").is_some_and(|value| {
            let essence = value.split(';').next().unwrap_or_default().trim();
            !essence.is_empty() && !essence.eq_ignore_ascii_case(wanted)
        })
    }

    /// The body as it goes on the wire.
    pub fn body_bytes(&self) -> Vec<u8> {
        match &self.payload {
            Payload::Empty => Vec::new(),
            Payload::Json(json) => json.render().into_bytes(),
            Payload::Bytes(bytes) => bytes.clone(),
        }
    }

    /// The path and query as sent.
    pub fn target_path(&self) -> String {
        let mut path: String = self
            .segments
            .iter()
            .map(|(segment, _)| format!("/{segment}"))
            .collect();
        if self.trailing_slash {
            path.push('/');
        }
        if !self.query.is_empty() {
            let pairs: Vec<String> = self.query.iter().map(|(k, v)| format!("{k}={v}")).collect();
            path.push('?');
            path.push_str(&pairs.join("&"));
        }
        path
    }

    /// Sends it over a fresh connection: an error when no answer came.
    pub fn send(&self) -> Result<Reply, String> {
        let mut headers: Vec<(&str, &str)> = Vec::new();
        if let Some((value, _)) = &self.auth {
            headers.push(("Authorization", value));
        }
        headers.extend(self.headers.iter().map(|(n, v)| (n.as_str(), v.as_str())));
        raw::try_request(
            &self.method,
            &self.target_path(),
            &headers,
            self.framing,
            self.body_bytes(),
            ANSWER_TIMEOUT,
        )
    }

    /// A one-paragraph account for the report: method, path, headers
    /// (tokens by their kind), the start of the body and what was done.
    pub fn describe(&self) -> String {
        let body = self.body_bytes();
        let shown = String::from_utf8_lossy(&body[..body.len().min(240)]).into_owned();
        let auth = self.auth.as_ref().map_or("no token", |(_, kind)| kind);
        format!(
            "{} {} [{auth}; headers {:?}; {:?} framing; body {} bytes: {shown:?}] ({})",
            self.method,
            self.target_path(),
            self.headers,
            self.framing,
            body.len(),
            self.notes.join(", ")
        )
    }
}
