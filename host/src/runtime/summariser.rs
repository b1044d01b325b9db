//! The host's side of the summariser port: one `POST` with a blocking HTTP
//! client (ureq, https through rustls) on Tokio's blocking pool, bounded by
//! the time the rebuild has left. Summaries are rare (a rebuild whose cache
//! is behind), so no connection is pooled.

use super::objects::HostObjects;
use stasis_api::{
    Summariser,
    summariser::{ChatAnswer, PostFailure, SummariserSettings},
};
use std::time::Duration;

/// The most bytes of an answer read: a summary is a paragraph.
const ANSWER_LIMIT: u64 = 1024 * 1024;

impl Summariser for HostObjects {
    fn summariser(&self) -> Option<&SummariserSettings> {
        self.summariser_settings()
    }

    async fn summariser_post(
        &self,
        settings: &SummariserSettings,
        body: Vec<u8>,
        timeout: Duration,
    ) -> Result<ChatAnswer, PostFailure> {
        let endpoint = settings.endpoint.clone();
        let key = settings.key.clone();
        let call =
            tokio::task::spawn_blocking(move || post(&endpoint, key.as_deref(), &body, timeout));
        // ureq's own timeout ends the thread's wait; this one bounds ours
        // even if a resolver ignores it.
        match tokio::time::timeout(timeout, call).await {
            Err(_) => Err(PostFailure::Timeout),
            Ok(Err(join)) => Err(PostFailure::Transport(format!(
                "the summariser's call did not finish: {join}"
            ))),
            Ok(Ok(answer)) => answer,
        }
    }
}

fn post(
    endpoint: &str,
    key: Option<&str>,
    body: &[u8],
    timeout: Duration,
) -> Result<ChatAnswer, PostFailure> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(timeout))
        .user_agent(concat!("stasis/", env!("CARGO_PKG_VERSION")))
        .build()
        .into();
    let mut request = agent
        .post(endpoint)
        .header("content-type", "application/json");
    if let Some(key) = key {
        request = request.header("authorization", format!("Bearer {key}"));
    }
    let failure = |err: ureq::Error| match err {
        ureq::Error::Timeout(_) => PostFailure::Timeout,
        other => PostFailure::Transport(format!("the summariser could not be reached: {other}")),
    };
    let mut response = request.send(body).map_err(failure)?;
    let status = response.status().as_u16();
    let body = response
        .body_mut()
        .with_config()
        .limit(ANSWER_LIMIT)
        .read_to_vec()
        .map_err(failure)?;
    Ok(ChatAnswer { status, body })
}
