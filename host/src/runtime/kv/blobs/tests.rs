use super::{writing::WRITES_IN_FLIGHT, *};
use futures::StreamExt as _;
use stasis_domain::chunk_store::{chunk_key, sha256_hex};
use stasis_sqlite::Durability;

const PREFIX: &str = "t/r/a/";

fn blobs() -> (tempfile::TempDir, Arc<KvFolder>, HostBlobs) {
    let dir = tempfile::tempdir().expect("temp dir");
    let kv = Arc::new(KvFolder::new(dir.path().join("kv"), Durability::Fsync));
    let blobs = HostBlobs::open(&kv).expect("bucket");
    (dir, kv, blobs)
}

fn temp_files(dir: &tempfile::TempDir) -> usize {
    super::super::folder::tests::temp_files(&dir.path().join("kv").join(KV_BUCKET))
}

/// `count` distinct chunks of a few hundred KB.
fn chunks(count: u8) -> Vec<Vec<u8>> {
    (0..count)
        .map(|k| (0..300_000u32).map(|i| (i % 251) as u8 ^ k).collect())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chunks_staged_in_the_background_are_named_then_appear_once_published() {
    let (dir, kv, blobs) = blobs();
    let bucket = kv.open(KV_BUCKET).expect("bucket");
    let chunks = chunks(u8::try_from(WRITES_IN_FLIGHT + 3).expect("few"));
    let mut whole = RunningHash::default();
    whole.update(b"taken before the chunks");
    let mut names = Vec::new();
    for chunk in &chunks {
        let staged = blobs.stage_chunk(PREFIX, &mut whole, chunk.clone()).await;
        names.push(staged.expect("staged"));
    }
    let first_key = chunk_key(PREFIX, &sha256_hex(&chunks[0]));
    blobs.staged_names().await.expect("named");
    // Named, but not visible until published: the names are claimed first.
    assert_eq!(kv.get(&bucket, &first_key).expect("get"), None);
    blobs
        .publish(PREFIX, names.clone())
        .await
        .expect("published");
    for (staged, chunk) in names.iter().zip(&chunks) {
        let name = staged.name.get().expect("named once staged");
        assert_eq!(name, sha256_hex(chunk));
        let stored = kv.get(&bucket, &chunk_key(PREFIX, name)).expect("get");
        assert_eq!(stored.as_ref(), Some(chunk));
    }
    assert_eq!(temp_files(&dir), 0);
    let sha256 = blobs.finish_whole(whole).await.expect("hashed");
    let fed = [b"taken before the chunks".to_vec(), chunks.concat()].concat();
    assert_eq!(sha256, sha256_hex(&fed), "the file's hash, in order");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_with_no_chunk_put_is_hashed_from_what_it_was_fed() {
    let (_dir, _kv, blobs) = blobs();
    let mut whole = RunningHash::default();
    whole.update(b"inline");
    assert_eq!(
        blobs.finish_whole(whole).await.expect("hashed"),
        sha256_hex(b"inline")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chunks_never_published_leave_no_temporary_file() {
    let (dir, kv, blobs) = blobs();
    let mut whole = RunningHash::default();
    for chunk in chunks(u8::try_from(WRITES_IN_FLIGHT + 2).expect("few")) {
        blobs
            .stage_chunk(PREFIX, &mut whole, chunk)
            .await
            .expect("staged");
    }
    drop(blobs);
    // Writes still running when the handle went are discarded once done.
    for _ in 0..200 {
        if temp_files(&dir) == 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(temp_files(&dir), 0);
    let bucket = kv.open(KV_BUCKET).expect("bucket");
    assert_eq!(kv.list(&bucket, "", None).expect("list").0.len(), 0);
}

/// `count` chunks of `len` bytes stored in the folder: the bucket, the
/// chunks, their names.
fn stored_chunks(
    kv: &KvFolder,
    count: u8,
    len: usize,
) -> (BucketHandle, Vec<Vec<u8>>, Vec<String>) {
    let bucket = kv.open(KV_BUCKET).expect("bucket");
    let chunks: Vec<Vec<u8>> = (0..count).map(|k| vec![k; len]).collect();
    let names: Vec<String> = chunks.iter().map(|c| sha256_hex(c)).collect();
    for (name, bytes) in names.iter().zip(&chunks) {
        kv.set(&bucket, &chunk_key(PREFIX, name), bytes)
            .expect("set");
    }
    (bucket, chunks, names)
}

/// Every piece a read-ahead of `names` sends, each expected to be read.
async fn read_all(blobs: &HostBlobs, names: &[String]) -> Vec<Vec<u8>> {
    let all: Vec<_> = blobs
        .clone()
        .read_ahead(PREFIX.into(), names.to_vec())
        .collect()
        .await;
    all.into_iter().map(|r| r.expect("read").to_vec()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_of_many_values_is_synced_at_once_and_settled_whole() {
    let (dir, kv, blobs) = blobs();
    let bucket = kv.open(KV_BUCKET).expect("bucket");
    for count in [3usize, 40] {
        let values: Vec<(String, Vec<u8>)> = (0..count)
            .map(|k| {
                (
                    format!("{PREFIX}chunks/b{count}-{k}"),
                    vec![u8::try_from(k % 251).unwrap_or(0); 1000 + k],
                )
            })
            .collect();
        blobs.put_many(values.clone()).await.expect("put many");
        for (key, value) in &values {
            assert_eq!(kv.get(&bucket, key).expect("get").as_ref(), Some(value));
        }
    }
    assert_eq!(temp_files(&dir), 0);
    let bad = vec![("../escape".to_owned(), b"x".to_vec()); 20];
    assert!(blobs.put_many(bad).await.is_err());
    assert_eq!(temp_files(&dir), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reading_ahead_stops_at_the_first_corrupt_chunk() {
    let (_dir, kv, blobs) = blobs();
    let (bucket, chunks, names) = stored_chunks(&kv, 4, 100_000);
    let read = read_all(&blobs, &names).await;
    assert_eq!(
        read,
        vec![chunks.concat()],
        "small chunks gathered into one piece"
    );

    kv.set(&bucket, &chunk_key(PREFIX, &names[1]), b"not it")
        .expect("corrupt");
    let all: Vec<_> = blobs.read_ahead(PREFIX.into(), names).collect().await;
    assert_eq!(
        all.len(),
        2,
        "the chunk before, then the failure, then nothing"
    );
    assert_eq!(all[0].as_ref().expect("first chunk").to_vec(), chunks[0]);
    let err = all[1].as_ref().expect_err("the corrupt chunk fails");
    assert!(err.to_string().contains("snapshot_corrupt"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_chunks_verified_on_two_threads_come_in_order_up_to_a_corrupt_one() {
    let (_dir, kv, blobs) = blobs();
    let (bucket, chunks, names) = stored_chunks(&kv, 5, 1_500_000);
    let read = read_all(&blobs, &names).await;
    assert_eq!(read, chunks, "each large chunk its own piece, in order");

    // The fourth fails after three verified pieces went out.
    kv.set(&bucket, &chunk_key(PREFIX, &names[3]), b"not it")
        .expect("corrupt");
    let all: Vec<_> = blobs.read_ahead(PREFIX.into(), names).collect().await;
    assert_eq!(all.len(), 4, "three chunks, then the failure, then nothing");
    for (got, want) in all.iter().zip(&chunks[..3]) {
        assert_eq!(&got.as_ref().expect("a verified chunk").to_vec(), want);
    }
    let err = all[3].as_ref().expect_err("the corrupt chunk fails");
    assert!(err.to_string().contains("snapshot_corrupt"), "{err}");
}
