use super::*;
use futures::StreamExt as _;
use stasis_domain::snapshot::chunk_key;
use stasis_sqlite::Durability;

const PREFIX: &str = "t/r/a/";

fn blobs() -> (tempfile::TempDir, Arc<KvFolder>, HostBlobs) {
    let dir = tempfile::tempdir().expect("temp dir");
    let kv = Arc::new(KvFolder::new(dir.path().join("kv"), Durability::Fsync));
    let blobs = HostBlobs::open(&kv).expect("bucket");
    (dir, kv, blobs)
}

fn temp_files(dir: &tempfile::TempDir) -> usize {
    std::fs::read_dir(dir.path().join("kv").join(KV_BUCKET).join(".tmp")).map_or(0, Iterator::count)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chunk_hashed_beside_the_file_gets_the_same_hashes() {
    let (_dir, _kv, blobs) = blobs();
    let (first, second) = (vec![7u8; 300_000], vec![9u8; 5]);
    let mut whole = RunningHash::default();
    assert_eq!(
        blobs.hash_chunk(&mut whole, &first).await,
        sha256_hex(&first)
    );
    assert_eq!(
        blobs.hash_chunk(&mut whole, &second).await,
        sha256_hex(&second)
    );
    assert_eq!(whole.finish_hex(), sha256_hex(&[first, second].concat()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batched_values_written_in_the_background_appear_once_settled() {
    let (dir, kv, blobs) = blobs();
    let bucket = kv.open(KV_BUCKET).expect("bucket");
    for k in 0..(WRITES_IN_FLIGHT + 3) {
        blobs
            .put_batched(&format!("{PREFIX}v{k}"), format!("value {k}").into_bytes())
            .await
            .expect("staged");
    }
    assert_eq!(kv.get(&bucket, &format!("{PREFIX}v0")).expect("get"), None);
    blobs.settle().await.expect("settled");
    for k in 0..(WRITES_IN_FLIGHT + 3) {
        let value = kv.get(&bucket, &format!("{PREFIX}v{k}")).expect("get");
        assert_eq!(value, Some(format!("value {k}").into_bytes()));
    }
    assert_eq!(temp_files(&dir), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn values_never_settled_leave_no_temporary_file() {
    let (dir, kv, blobs) = blobs();
    for k in 0..(WRITES_IN_FLIGHT + 2) {
        blobs
            .put_batched(&format!("{PREFIX}v{k}"), vec![1; 1000])
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

    // The fourth is the second of its batch: checked on the other thread.
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
