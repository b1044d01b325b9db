//! A fake OpenAI-compatible model on loopback: `GET /v1/models` and
//! `POST /v1/chat/completions` (streamed when the request asks, else one
//! `chat.completion` object), answering from a [`Script`] and recording
//! every request. `GET /_fake/requests?containing=TEXT` tells a test in
//! another process how many requests had a message containing TEXT (and
//! their messages), as JSON.

mod chunks;
mod completion;
mod recorded;
mod request;
mod script;

pub use request::{ChatMessage, ModelRequest};
pub use script::{Reply, Script};

use anyhow::{Context, Result};
use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use std::convert::Infallible;
use std::net::{SocketAddr, TcpListener};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use tokio::sync::oneshot;

type Body = UnsyncBoxBody<Bytes, Infallible>;

/// The model's id in kilo's config: `local/fake`.
pub const MODEL_ID: &str = "fake";

/// A running fake model; stopped when dropped.
pub struct FakeModel {
    address: SocketAddr,
    state: Arc<State>,
    shutdown: Option<oneshot::Sender<()>>,
    server: Option<JoinHandle<()>>,
}

struct State {
    script: Script,
    requests: Mutex<Vec<ModelRequest>>,
}

impl FakeModel {
    /// Starts the model on a free loopback port.
    ///
    /// # Errors
    ///
    /// When no port can be bound or the server's runtime cannot start.
    pub fn start(script: Script) -> Result<Self> {
        Self::start_on(SocketAddr::from(([127, 0, 0, 1], 0)), script)
    }

    /// Starts the model on `address` (port 0: a free one).
    ///
    /// # Errors
    ///
    /// When the address cannot be bound or the server's runtime cannot
    /// start.
    pub fn start_on(address: SocketAddr, script: Script) -> Result<Self> {
        let listener = TcpListener::bind(address).context("binding the fake model")?;
        listener.set_nonblocking(true)?;
        let address = listener.local_addr()?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("the fake model's runtime")?;
        let state = Arc::new(State {
            script,
            requests: Mutex::new(Vec::new()),
        });
        let (shutdown, stopped) = oneshot::channel();
        let serving = Arc::clone(&state);
        let server = std::thread::Builder::new()
            .name("fake-model".into())
            .spawn(move || runtime.block_on(serve(listener, serving, stopped)))
            .context("starting the fake model's thread")?;
        Ok(Self {
            address,
            state,
            shutdown: Some(shutdown),
            server: Some(server),
        })
    }

    /// The OpenAI base URL: `http://127.0.0.1:PORT/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.address)
    }

    /// Every chat request so far, oldest first.
    pub fn requests(&self) -> Vec<ModelRequest> {
        self.state.requests().clone()
    }

    /// Stops serving (open streams end with the server).
    pub fn stop(mut self) {
        self.shut_down();
    }

    fn shut_down(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        if let Some(server) = self.server.take() {
            let _ = server.join();
        }
    }
}

impl Drop for FakeModel {
    fn drop(&mut self) {
        self.shut_down();
    }
}

impl State {
    fn requests(&self) -> std::sync::MutexGuard<'_, Vec<ModelRequest>> {
        self.requests.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

async fn serve(listener: TcpListener, state: Arc<State>, mut stopped: oneshot::Receiver<()>) {
    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
        return;
    };
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                let state = Arc::clone(&state);
                let service = service_fn(move |request| answer(Arc::clone(&state), request));
                tokio::spawn(async move {
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
            _ = &mut stopped => return,
        }
    }
}

async fn answer(
    state: Arc<State>,
    request: Request<Incoming>,
) -> Result<Response<Body>, Infallible> {
    let path = request.uri().path().to_owned();
    let response = match (request.method(), path.as_str()) {
        (&Method::GET, "/v1/models") => json(
            StatusCode::OK,
            r#"{"object":"list","data":[{"id":"fake","object":"model","owned_by":"stasis"}]}"#,
        ),
        (&Method::POST, "/v1/chat/completions") => complete(&state, request).await,
        (&Method::GET, "/_fake/requests") => {
            let containing = recorded::containing(request.uri().query());
            let body = recorded::matching(&state.requests(), &containing);
            json_bytes(StatusCode::OK, body)
        }
        _ => json(
            StatusCode::NOT_FOUND,
            r#"{"error":{"message":"no such route"}}"#,
        ),
    };
    Ok(response)
}

async fn complete(state: &State, request: Request<Incoming>) -> Response<Body> {
    let Ok(body) = request.into_body().collect().await else {
        return json(
            StatusCode::BAD_REQUEST,
            r#"{"error":{"message":"unreadable body"}}"#,
        );
    };
    let request = ModelRequest::parse(&body.to_bytes());
    let reply = state.script.reply_to(&request);
    let streams = request.streams();
    let number = {
        let mut requests = state.requests();
        requests.push(request);
        requests.len()
    };
    if let Reply::Failure { status } = reply {
        let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        return json_bytes(status, completion::error("the fake model was told to fail"));
    }
    if !streams {
        // A slow reply is slow as a whole: one pause, then the answer.
        if let Reply::Text {
            chunk_delay: Some(delay),
            ..
        } = &reply
        {
            tokio::time::sleep(*delay).await;
        }
        let (status, body) = completion::answer(&reply, number);
        let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        return json_bytes(status, body);
    }
    let Ok(frames) = chunks::frames(&reply, number) else {
        return json(
            StatusCode::INTERNAL_SERVER_ERROR,
            r#"{"error":{"message":"no reply"}}"#,
        );
    };
    let stream = futures::stream::unfold(frames.into_iter(), |mut frames| async move {
        let (delay, bytes) = frames.next()?;
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        Some((Ok::<_, Infallible>(Frame::data(bytes)), frames))
    });
    let mut response = Response::new(StreamBody::new(stream).boxed_unsync());
    let headers = response.headers_mut();
    headers.insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(
        http::header::CACHE_CONTROL,
        http::HeaderValue::from_static("no-cache"),
    );
    response
}

fn json(status: StatusCode, body: &'static str) -> Response<Body> {
    json_bytes(status, body.as_bytes().to_vec())
}

fn json_bytes(status: StatusCode, body: Vec<u8>) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(body)).boxed_unsync());
    *response.status_mut() = status;
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    response
}
