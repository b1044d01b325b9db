//! The worker's side of the summariser port: one `fetch` per call, raced
//! against a timer and aborted when the rebuild's time runs out. Waiting
//! on a subrequest costs no CPU time, and one rebuild makes at most
//! `stasis_api::summariser::MAX_SUMMARISER_CALLS` of them, within a
//! request's subrequest budget.

use crate::objects::EdgeObjects;
use futures::future::{Either, select};
use stasis_api::{
    Summariser,
    summariser::{ChatAnswer, PostFailure, SummariserSettings},
};
use std::{pin::pin, time::Duration};
use worker::{AbortController, Fetch, Headers, Method, Request, RequestInit};

impl Summariser for EdgeObjects {
    fn summariser(&self) -> Option<&SummariserSettings> {
        self.summariser.as_ref()
    }

    async fn summariser_post(
        &self,
        settings: &SummariserSettings,
        body: Vec<u8>,
        timeout: Duration,
    ) -> Result<ChatAnswer, PostFailure> {
        let request = request(settings, &body).map_err(transport)?;
        let controller = AbortController::default();
        let signal = controller.signal();
        let exchange = async {
            let mut response = Fetch::Request(request).send_with_signal(&signal).await?;
            let status = response.status_code();
            let body = response.bytes().await?;
            worker::Result::Ok(ChatAnswer { status, body })
        };
        match select(pin!(exchange), worker::Delay::from(timeout)).await {
            Either::Left((answer, _)) => answer.map_err(transport),
            Either::Right(_) => {
                controller.abort();
                Err(PostFailure::Timeout)
            }
        }
    }
}

fn request(settings: &SummariserSettings, body: &[u8]) -> worker::Result<Request> {
    let headers = Headers::new();
    headers.set("content-type", "application/json")?;
    if let Some(key) = &settings.key {
        headers.set("authorization", &format!("Bearer {key}"))?;
    }
    let mut init = RequestInit::new();
    init.with_method(Method::Post)
        .with_headers(headers)
        .with_body(Some(js_sys::Uint8Array::from(body).into()));
    Request::new_with_init(&settings.endpoint, &init)
}

fn transport(err: worker::Error) -> PostFailure {
    PostFailure::Transport(format!("the summariser could not be reached: {err}"))
}
