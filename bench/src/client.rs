//! A lean keep-alive HTTP/1.1 client: one hyper connection per worker, no
//! pool, so that the load generator leaves the CPU to the server it measures.

use anyhow::{Context, Result, anyhow, bail};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{
    Method, Request, Response, StatusCode,
    body::Incoming,
    client::conn::http1::{self, SendRequest},
    header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HOST, HeaderValue},
};
use hyper_util::rt::TokioIo;
use std::{net::SocketAddr, sync::Arc, time::Duration};
use tokio::net::TcpStream;

/// No request the bench makes should take longer than this.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// A server to talk to: where it listens and the token it wants, if any.
#[derive(Debug)]
pub struct Endpoint {
    addr: SocketAddr,
    authority: HeaderValue,
    bearer: Option<HeaderValue>,
    token: Option<String>,
}

impl Endpoint {
    /// An endpoint from a base URL such as `http://127.0.0.1:8787`.
    ///
    /// Only loopback addresses are accepted: the bench generates heavy load
    /// and must never aim it at another machine.
    pub fn new(base_url: &str, token: Option<&str>) -> Result<Arc<Self>> {
        let uri: hyper::Uri = base_url.parse().context("parsing the base URL")?;
        if uri.scheme_str() != Some("http") {
            bail!("only http:// base URLs are supported, got {base_url}");
        }
        let host = uri.host().context("the base URL has no host")?;
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let port = uri.port_u16().unwrap_or(80);
        let ip = match host {
            "localhost" => std::net::Ipv4Addr::LOCALHOST.into(),
            other => other
                .parse::<std::net::IpAddr>()
                .with_context(|| format!("{other} is not an IP address or localhost"))?,
        };
        if !ip.is_loopback() {
            bail!("refusing to load {ip}: the bench only targets loopback addresses");
        }
        let bearer = token
            .map(|t| HeaderValue::from_str(&format!("Bearer {t}")))
            .transpose()
            .context("the token is not a valid header value")?;
        let authority = HeaderValue::from_str(&format!("{host}:{port}"))?;
        Ok(Arc::new(Self {
            addr: SocketAddr::new(ip, port),
            authority,
            bearer,
            token: token.map(str::to_owned),
        }))
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// Its base URL (`http://127.0.0.1:PORT`), for clients other than this
    /// one (`stasis-client`).
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The bearer token it is sent, if any.
    pub fn token(&self) -> Option<&str> {
        self.token.as_deref()
    }
}

/// A request without its connection: method, path, body and the two
/// headers the workloads vary.
#[derive(Debug, Clone)]
pub struct Call {
    /// The HTTP method.
    pub method: Method,
    /// The path and query, starting with `/`.
    pub path: String,
    /// The body; empty for none.
    pub body: Bytes,
    /// `Content-Type`, when there is a body.
    pub content_type: Option<&'static str>,
    /// `Accept`, e.g. `text/event-stream`.
    pub accept: Option<&'static str>,
}

impl Call {
    /// A GET of `path`.
    pub fn get(path: impl Into<String>) -> Self {
        Self {
            method: Method::GET,
            path: path.into(),
            body: Bytes::new(),
            content_type: None,
            accept: None,
        }
    }

    /// A request with a JSON body.
    pub fn json(method: Method, path: impl Into<String>, body: Bytes) -> Self {
        Self {
            method,
            path: path.into(),
            body,
            content_type: Some("application/json"),
            accept: None,
        }
    }

    /// A request with a binary body (`application/octet-stream`).
    pub fn octets(method: Method, path: impl Into<String>, body: Bytes) -> Self {
        Self {
            method,
            path: path.into(),
            body,
            content_type: Some("application/octet-stream"),
            accept: None,
        }
    }

    fn to_request(&self, endpoint: &Endpoint) -> Result<Request<Full<Bytes>>> {
        let mut request = Request::builder()
            .method(self.method.clone())
            .uri(self.path.as_str())
            .header(HOST, endpoint.authority.clone());
        if let Some(bearer) = &endpoint.bearer {
            request = request.header(AUTHORIZATION, bearer.clone());
        }
        if let Some(content_type) = self.content_type {
            request = request.header(CONTENT_TYPE, content_type);
        }
        if let Some(accept) = self.accept {
            request = request.header(ACCEPT, accept);
        }
        Ok(request.body(Full::new(self.body.clone()))?)
    }
}

/// One keep-alive connection; reopened transparently when the server has
/// closed it between requests.
pub struct Conn {
    endpoint: Arc<Endpoint>,
    sender: SendRequest<Full<Bytes>>,
}

impl Conn {
    /// Opens a connection to `endpoint`.
    pub async fn open(endpoint: &Arc<Endpoint>) -> Result<Self> {
        let sender = handshake(endpoint).await?;
        Ok(Self {
            endpoint: Arc::clone(endpoint),
            sender,
        })
    }

    /// Sends `call` and returns the response head with its body unread.
    ///
    /// A request the server never saw (the connection had closed) is sent
    /// again once on a fresh connection.
    pub async fn send(&mut self, call: &Call) -> Result<Response<Incoming>> {
        if self.sender.ready().await.is_err() {
            self.sender = handshake(&self.endpoint).await?;
        }
        let first = tokio::time::timeout(
            REQUEST_TIMEOUT,
            self.sender.send_request(call.to_request(&self.endpoint)?),
        )
        .await
        .with_context(|| format!("{} {} timed out", call.method, call.path))?;
        match first {
            Ok(response) => Ok(response),
            Err(error) if error.is_canceled() || error.is_closed() => {
                self.sender = handshake(&self.endpoint).await?;
                let again = self.sender.send_request(call.to_request(&self.endpoint)?);
                tokio::time::timeout(REQUEST_TIMEOUT, again)
                    .await
                    .with_context(|| format!("{} {} timed out", call.method, call.path))?
                    .with_context(|| format!("{} {}", call.method, call.path))
            }
            Err(error) => Err(anyhow!(error).context(format!("{} {}", call.method, call.path))),
        }
    }

    /// Sends `call` and reads the whole body.
    pub async fn call(&mut self, call: &Call) -> Result<(StatusCode, Bytes)> {
        let response = self.send(call).await?;
        let status = response.status();
        let body = tokio::time::timeout(REQUEST_TIMEOUT, response.into_body().collect())
            .await
            .context("reading a response body timed out")??
            .to_bytes();
        Ok((status, body))
    }

    /// Sends `call` and fails unless the status is 2xx; returns the body.
    pub async fn expect_ok(&mut self, call: &Call) -> Result<Bytes> {
        let (status, body) = self.call(call).await?;
        if !status.is_success() {
            bail!(
                "{} {} answered {status}: {}",
                call.method,
                call.path,
                String::from_utf8_lossy(&body[..body.len().min(400)])
            );
        }
        Ok(body)
    }
}

async fn handshake(endpoint: &Endpoint) -> Result<SendRequest<Full<Bytes>>> {
    let stream = TcpStream::connect(endpoint.addr)
        .await
        .with_context(|| format!("connecting to {}", endpoint.addr))?;
    stream.set_nodelay(true)?;
    let (sender, connection) = http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(async move {
        // The connection ends when the server closes it or the sender is
        // dropped; either is normal here, and the next request reports it.
        let _ = connection.await;
    });
    Ok(sender)
}
