//! One connection under hyper, closed by its [`Clock`] when a request head
//! is late or the connection rests too long between requests.

use super::{
    Body, Cut, Site,
    capacity::Place,
    clock::{Clock, Clocked, InFlight},
    respond,
};
use bytes::Bytes;
use http::{Request, Response};
use hyper::{
    body::{Frame, Incoming, SizeHint},
    server::conn::http1,
    service::service_fn,
};
use hyper_util::{rt::TokioIo, server::graceful::GracefulShutdown};
use std::{
    convert::Infallible,
    future::Future,
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
};
use tokio::{net::TcpStream, sync::OwnedSemaphorePermit};

/// Serves `stream` through the API, timed by `clock`, holding `place`
/// until it closes.
pub fn serve(
    stream: TcpStream,
    site: Arc<Site>,
    graceful: &GracefulShutdown,
    clock: Arc<Clock>,
    place: Place,
) -> impl Future<Output = ()> + Send + 'static {
    let place_id = place.id();
    let io = TokioIo::new(Clocked::new(
        stream_with_nodelay(stream),
        Arc::clone(&clock),
    ));
    let service = {
        let (clock, site) = (Arc::clone(&clock), Arc::clone(&site));
        service_fn(move |request| {
            let in_flight = clock.begin();
            let site = Arc::clone(&site);
            async move {
                let response = respond::respond(&site, request, place_id).await;
                Ok::<_, Infallible>(tracked(response, in_flight))
            }
        })
    };
    let connection = graceful.watch(http1::Builder::new().serve_connection(io, service));
    async move {
        let _place = place;
        tokio::select! {
            ended = connection => {
                if let Err(err) = ended {
                    tracing::debug!(%err, "connection ended with an error");
                }
            }
            why = clock.expired(&site.limits) => {
                tracing::debug!(?why, "closing a connection that ran out of time");
            }
        }
    }
}

/// Answers every request on `stream` (normally its only one) with 503,
/// then closes it; `slot` bounds how many such answers are pending.
pub fn refuse(
    stream: TcpStream,
    site: Arc<Site>,
    slot: OwnedSemaphorePermit,
) -> impl Future<Output = ()> + Send + 'static {
    let clock = Clock::start();
    let io = TokioIo::new(Clocked::new(
        stream_with_nodelay(stream),
        Arc::clone(&clock),
    ));
    let max_connections = site.limits.max_connections;
    let service = {
        let clock = Arc::clone(&clock);
        service_fn(move |request: Request<Incoming>| {
            let in_flight = clock.begin();
            let response = respond::over_capacity(&request, max_connections);
            async move { Ok::<_, Infallible>(tracked(response, in_flight)) }
        })
    };
    let connection = http1::Builder::new()
        .keep_alive(false)
        .serve_connection(io, service);
    async move {
        let _slot = slot;
        tokio::select! {
            _ = connection => {}
            _ = clock.expired(&site.limits) => {}
        }
    }
}

fn stream_with_nodelay(stream: TcpStream) -> TcpStream {
    let _ = stream.set_nodelay(true);
    stream
}

fn tracked(response: Response<Body>, in_flight: InFlight) -> Response<Tracked> {
    response.map(|body| Tracked {
        body,
        _in_flight: in_flight,
    })
}

/// A response body that keeps its request in flight until hyper drops it
/// (after the last frame, or when the connection goes).
pub struct Tracked {
    body: Body,
    _in_flight: InFlight,
}

impl hyper::body::Body for Tracked {
    type Data = Bytes;
    type Error = Cut;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Cut>>> {
        Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
