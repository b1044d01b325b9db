//! `/db-snapshot`: the whole-file PUT, GET, HEAD and DELETE over chunked
//! storage (the server splits and assembles, streaming), and the headers
//! every snapshot answer shares. The delta routes are in
//! [`crate::snapshot_delta`].

use crate::{AfterCommit, Objects, Reply, Snapshots, error::ApiError, reply};
use bytes::Bytes;
use futures::{Stream, StreamExt, future::Either};
use http::{HeaderMap, HeaderValue, Response, StatusCode, header};
use stasis_domain::{
    DomainError, Refusal,
    chunk_store::{self, ports::BlobStore as _},
    ids::AgentKey,
    operation::snapshot as snapshot_op,
    snapshot::{
        Precondition, PutRequest, SnapshotMeta, chunk_saga,
        ports::SnapshotObject,
        whole::{WholeReader, WholeWriter},
    },
};

/// Accepts `application/octet-stream` or no content type at all.
pub fn check_content_type(headers: &HeaderMap) -> Result<(), ApiError> {
    crate::body::check_content_type(headers, "application/octet-stream")
}

/// `PUT`/`POST`: splits the body into chunks as it arrives (a small one
/// stays inline) and commits their manifest.
pub async fn put<O, S>(
    objects: &O,
    key: &AgentKey,
    headers: &HeaderMap,
    body: S,
) -> Result<Response<Bytes>, ApiError>
where
    O: Objects + Snapshots,
    S: Stream<Item = Result<Bytes, ApiError>>,
{
    let mut body = std::pin::pin!(body);
    let request = match put_request(objects, key, headers).await {
        Ok(request) => request,
        Err(err) => {
            // Read a small refused body before answering: the edge's local
            // runtime breaks a request answered while its body still flows.
            let mut drained = 0;
            while drained < DRAIN_LIMIT
                && let Some(Ok(piece)) = body.next().await
            {
                drained += piece.len();
            }
            return Err(err);
        }
    };
    let object = objects.snapshot_object(key);
    let blobs = objects.snapshot_blobs()?;
    let size_hint = crate::content_length(headers)?;
    let min_chunk_size = blobs.min_split_chunk_size();
    let mut writer = WholeWriter::new(request, size_hint, min_chunk_size);
    while let Some(piece) = body.next().await {
        writer.write(&object, &blobs, &piece?).await?;
    }
    let meta = writer.finish(&object, &blobs).await?;
    objects.snapshot_tidy(key, AfterCommit::Sweep).await;
    let mut response = reply::json(StatusCode::CREATED, &meta);
    describe(response.headers_mut(), &meta);
    Ok(response)
}

/// The most bytes of a refused body read before answering.
const DRAIN_LIMIT: usize = 16 * 1024 * 1024;

/// The PUT's headers as the domain reads them; a stale `If-Match` is
/// refused here, before any byte is stored.
async fn put_request<O: Objects + Snapshots>(
    objects: &O,
    key: &AgentKey,
    headers: &HeaderMap,
) -> Result<PutRequest, ApiError> {
    let request = PutRequest {
        expected_sha256: expected_sha256(headers)?,
        precondition: etag_list(headers, header::IF_MATCH)?,
        event_watermark: event_seq(headers)?,
        inline_limit: objects.snapshot_inline_limit(),
        key_prefix: chunk_store::key_prefix(key),
        limit: objects.snapshot_limit(),
        pending_ttl_ms: objects.snapshot_pending_ttl_ms(),
        stale_before: objects.snapshot_claims_stale_before(),
        grace_ms: objects.snapshot_grace_ms(),
    };
    if let Some(precondition) = &request.precondition {
        let check = snapshot_op::check_precondition(Some(precondition.clone()));
        objects.snapshot_object(key).run(check).await?;
    }
    Ok(request)
}

/// A whole-file GET whose head and first piece are read: the runtime
/// streams the rest with [`stream`].
pub struct Download {
    key: AgentKey,
    head: Response<()>,
    first: Option<Vec<u8>>,
    reader: WholeReader,
}

impl Download {
    /// The response head (status, `Content-Length` and the snapshot's
    /// headers).
    pub fn head(&self) -> Response<()> {
        let mut head = Response::new(());
        *head.status_mut() = self.head.status();
        *head.headers_mut() = self.head.headers().clone();
        head
    }
}

/// `GET`/`HEAD`: the bytes (verified) or only their headers. A snapshot in
/// KV comes back as a [`Reply::Snapshot`] stream; its first piece is read
/// (and verified) here, so that a failure there is still an answer.
pub async fn get<O: Snapshots>(
    objects: &O,
    key: &AgentKey,
    headers: &HeaderMap,
    (with_bytes, version): (bool, Option<u64>),
) -> Result<Reply, ApiError> {
    let object = objects.snapshot_object(key);
    let plan = async |with_inline| match version {
        Some(version) => chunk_saga::plan_version(&object, with_inline, version).await,
        None => chunk_saga::plan(&object, with_inline).await,
    };
    if let Some(wanted) = etag_list(headers, header::IF_NONE_MATCH)?
        && let Some(plan) = plan(false).await?
        && wanted.holds(Some(&plan.meta))
    {
        let mut response = Response::new(Bytes::new());
        *response.status_mut() = StatusCode::NOT_MODIFIED;
        describe(response.headers_mut(), &plan.meta);
        return Ok(Reply::Full(response));
    }
    let plan = plan(with_bytes)
        .await
        .map_err(corrupt_or_other)?
        .ok_or_else(not_found)?;
    let mut head = Response::new(());
    let headers = head.headers_mut();
    describe(headers, &plan.meta);
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/octet-stream"),
    );
    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(plan.meta.size));
    if !with_bytes {
        return Ok(Reply::Full(head.map(|()| Bytes::new())));
    }
    let mut reader = WholeReader::new(plan, chunk_store::key_prefix(key));
    let blobs = objects.snapshot_blobs()?;
    let first = reader.next_piece(&blobs).await.map_err(corrupt_or_other)?;
    if reader.is_done() {
        let bytes = first.map(Bytes::from).unwrap_or_default();
        return Ok(Reply::Full(head.map(|()| bytes)));
    }
    Ok(Reply::Snapshot(Box::new(Download {
        key: key.clone(),
        head,
        first,
        reader,
    })))
}

/// A [`Download`]'s body, piece by piece, each verified; an `Err` (bytes
/// that fail their sha256, a chunk KV does not show) ends (cuts) it, so
/// the client sees fewer bytes than `Content-Length`, never a whole wrong
/// file. More chunks than one invocation may read are read range by range
/// ([`crate::snapshot_ranges`]).
pub fn stream<O: Snapshots + 'static>(
    objects: O,
    download: Box<Download>,
) -> impl Stream<Item = Result<Bytes, ApiError>> {
    let Download {
        key, first, reader, ..
    } = *download;
    read_rest(objects, key, first, reader)
}

/// What `reader` has left after `first` (if read already), verified; more
/// chunks than one invocation may read are read range by range
/// ([`crate::snapshot_ranges`]), and a runtime without such a budget reads
/// every chunk left as one range (through [`Snapshots::snapshot_range`],
/// which may read ahead while earlier chunks are sent). An export's
/// snapshot is read so too.
pub(crate) fn read_rest<O: Snapshots + 'static>(
    objects: O,
    key: AgentKey,
    first: Option<Vec<u8>>,
    reader: WholeReader,
) -> impl Stream<Item = Result<Bytes, ApiError>> {
    let ranged = match objects.snapshot_range_chunks() {
        Some(per_range) if reader.chunks_left() > per_range => Some(per_range),
        None if reader.chunks_left() > 0 => Some(usize::MAX),
        _ => None,
    };
    match ranged {
        Some(per_range) => {
            let first = futures::stream::iter(first.map(|first| Ok(Bytes::from(first))));
            let rest = crate::snapshot_ranges::ranged(reader, per_range, move |chunks| {
                objects.snapshot_range(&key, chunks)
            })
            .map(|piece| piece.map_err(corrupt_or_other));
            Either::Left(first.chain(rest))
        }
        _ => Either::Right(pieces_here(objects, first, reader)),
    }
}

/// The pieces read one after the other in this invocation.
fn pieces_here<O: Snapshots + 'static>(
    objects: O,
    first: Option<Vec<u8>>,
    reader: WholeReader,
) -> impl Stream<Item = Result<Bytes, ApiError>> {
    futures::stream::try_unfold(
        (objects, first, reader),
        |(objects, first, mut reader)| async move {
            if let Some(first) = first {
                return Ok(Some((Bytes::from(first), (objects, None, reader))));
            }
            let blobs = objects.snapshot_blobs()?;
            let piece = reader.next_piece(&blobs).await.map_err(corrupt_or_other)?;
            Ok(piece.map(|piece| (Bytes::from(piece), (objects, None, reader))))
        },
    )
}

/// `DELETE`: the manifest goes; the chunks only it named are collected
/// once their grace ends.
pub async fn delete(objects: &impl Snapshots, key: &AgentKey) -> Result<Response<Bytes>, ApiError> {
    objects.snapshot_delete(key).await?;
    objects.snapshot_tidy(key, AfterCommit::Collect).await;
    let mut response = Response::new(Bytes::new());
    *response.status_mut() = StatusCode::NO_CONTENT;
    Ok(response)
}

/// Bytes that fail their sha256 are a 500 with a code of their own, so that
/// a client knows retrying will not help.
pub(crate) fn corrupt_or_other(err: DomainError) -> ApiError {
    match err {
        DomainError::Storage(message) if message.starts_with(chunk_store::digest::CORRUPT) => {
            ApiError::new(
                http::StatusCode::INTERNAL_SERVER_ERROR,
                chunk_store::digest::CORRUPT,
                message,
            )
        }
        other => ApiError::from(other),
    }
}

pub(crate) fn not_found() -> ApiError {
    ApiError::from(DomainError::NotFound(Refusal::new(
        "snapshot_not_found",
        "the agent has no snapshot",
    )))
}

/// The headers every snapshot answer carries.
pub(crate) fn describe(headers: &mut HeaderMap, meta: &SnapshotMeta) {
    let pairs = [
        (header::ETAG.as_str(), meta.etag()),
        ("x-stasis-sha256", meta.sha256.clone()),
        ("x-stasis-snapshot-version", meta.version.to_string()),
        ("x-stasis-event-seq", meta.event_watermark.to_string()),
    ];
    for (name, value) in pairs {
        if let (Ok(name), Ok(value)) = (
            header::HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(&value),
        ) {
            headers.insert(name, value);
        }
    }
}

fn text<'a>(headers: &'a HeaderMap, name: &str) -> Result<Option<&'a str>, ApiError> {
    match headers.get(name) {
        None => Ok(None),
        Some(value) => value
            .to_str()
            .map(|v| Some(v.trim()))
            .map_err(|_| ApiError::invalid_request(format!("{name} must be ASCII text"))),
    }
}

fn expected_sha256(headers: &HeaderMap) -> Result<Option<String>, ApiError> {
    let Some(value) = text(headers, "x-stasis-sha256")? else {
        return Ok(None);
    };
    if !chunk_store::is_sha256_hex(value) {
        return Err(ApiError::invalid_request(
            "X-Stasis-Sha256 must be 64 hex digits (the sha256 of the body)",
        ));
    }
    Ok(Some(value.to_ascii_lowercase()))
}

pub(crate) fn event_seq(headers: &HeaderMap) -> Result<Option<u64>, ApiError> {
    let Some(value) = text(headers, "x-stasis-event-seq")? else {
        return Ok(None);
    };
    value
        .parse::<u64>()
        .ok()
        .filter(|seq| i64::try_from(*seq).is_ok())
        .map(Some)
        .ok_or_else(|| {
            ApiError::invalid_request("X-Stasis-Event-Seq must be a non-negative integer seq")
        })
}

/// `If-Match` / `If-None-Match`: `*` or a list of (possibly weak) ETags,
/// each compared by its sha256.
pub(crate) fn etag_list(
    headers: &HeaderMap,
    name: header::HeaderName,
) -> Result<Option<Precondition>, ApiError> {
    let Some(value) = text(headers, name.as_str())? else {
        return Ok(None);
    };
    if value == "*" {
        return Ok(Some(Precondition::Exists));
    }
    let mut etags = Vec::new();
    for item in value.split(',') {
        let item = item.trim();
        let bare = item.strip_prefix("W/").unwrap_or(item);
        let bare = bare
            .strip_prefix('"')
            .and_then(|b| b.strip_suffix('"'))
            .unwrap_or(bare);
        if bare.is_empty() || bare.contains('"') {
            return Err(ApiError::invalid_request(format!(
                "{name} must be * or a list of quoted ETags"
            )));
        }
        etags.push(bare.to_ascii_lowercase());
    }
    Ok(Some(Precondition::OneOf(etags)))
}
