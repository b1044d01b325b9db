//! `GET /_fake/requests?containing=TEXT`: the recorded requests a test in
//! another process asks about (the conformance suite counts a summariser's
//! calls this way).

use super::request::ModelRequest;
use serde::Serialize;

#[derive(Serialize)]
struct Matching<'a> {
    /// How many requests had a message containing the text.
    count: usize,
    /// Their messages, oldest request first.
    requests: Vec<Vec<Message<'a>>>,
}

#[derive(Serialize)]
struct Message<'a> {
    role: &'a str,
    content: &'a str,
}

/// The `containing` parameter of `query` (empty when absent: every request).
pub(crate) fn containing(query: Option<&str>) -> String {
    form_urlencoded::parse(query.unwrap_or_default().as_bytes())
        .find(|(name, _)| name == "containing")
        .map(|(_, value)| value.into_owned())
        .unwrap_or_default()
}

/// The JSON of the requests in `requests` that mention `text`.
pub(crate) fn matching(requests: &[ModelRequest], text: &str) -> Vec<u8> {
    let requests: Vec<Vec<Message<'_>>> = requests
        .iter()
        .filter(|request| request.mentions(text))
        .map(|request| {
            request
                .messages
                .iter()
                .map(|m| Message {
                    role: &m.role,
                    content: &m.text,
                })
                .collect()
        })
        .collect();
    serde_json::to_vec(&Matching {
        count: requests.len(),
        requests,
    })
    .unwrap_or_default()
}
