//! FastCDC as the workspace runs it: cut points frozen, and local edits moving few chunks.

use std::collections::HashSet;

use stasis_domain::workspace::{ChunkParams, ContentHash};

use super::super::{Chunker, ScanOptions, WorkspaceError};
use super::{noise, scan_with, write};

fn cut(bytes: &[u8]) -> Vec<u32> {
    let chunker = Chunker::new(&ChunkParams::default()).expect("chunker");
    let content = chunker.chunk(bytes, |_, _| {}).expect("chunk");
    assert_eq!(content.sha256, ContentHash::of(bytes));
    assert_eq!(content.size, bytes.len() as u64);
    content.chunks.iter().map(|c| c.size).collect()
}

#[test]
fn the_default_cut_points_never_move() {
    // Recorded with fastcdc 5.0.0. If a new version of the crate moves them, every stored
    // workspace stops deduplicating: keep the old chunker under its name instead.
    let sizes = cut(&noise(42, 1 << 20));
    assert_eq!(sizes, GOLDEN);
}

const GOLDEN: &[u32] = &[
    101617, 60904, 95067, 164563, 149464, 98836, 84602, 172435, 104815, 16273,
];

#[test]
fn chunks_stay_within_their_bounds_and_an_empty_input_has_none() {
    let params = ChunkParams::default();
    let sizes = cut(&noise(7, 3 << 20));
    let (last, rest) = sizes.split_last().expect("chunks");
    assert!(
        rest.iter()
            .all(|&s| s >= params.min_size && s <= params.max_size)
    );
    assert!(*last <= params.max_size);
    assert!(cut(b"").is_empty());
    assert_eq!(cut(b"small"), [5]);
}

#[test]
fn unknown_or_odd_parameters_are_refused() {
    let params = ChunkParams {
        algorithm: "rabin".into(),
        ..ChunkParams::default()
    };
    assert!(matches!(
        Chunker::new(&params),
        Err(WorkspaceError::UnsupportedChunking(_))
    ));
    let mut params = ChunkParams::default();
    params.avg_size += 1;
    assert!(matches!(
        Chunker::new(&params),
        Err(WorkspaceError::UnsupportedChunking(_))
    ));
}

#[test]
fn an_edit_in_the_middle_of_a_big_file_moves_one_or_two_chunks() {
    let dir = tempfile::tempdir().expect("tempdir");
    let original = noise(1, 8 << 20);
    write(dir.path(), "big.bin", &original);
    let options = ScanOptions::default();
    let before = scan_with(dir.path(), &options);
    let known: HashSet<ContentHash> = before.manifest.unique_chunks().into_iter().collect();
    assert!(known.len() > 64, "{} chunks", known.len());

    let mut overwritten = original.clone();
    overwritten[4 << 20..(4 << 20) + 100].copy_from_slice(&[0xAA; 100]);
    write(dir.path(), "big.bin", &overwritten);
    let after = scan_with(dir.path(), &options);
    let moved = after.new_chunks(&known);
    assert!(
        (1..=2).contains(&moved.len()),
        "{} chunks moved",
        moved.len()
    );

    let mut inserted = original[..3 << 20].to_vec();
    inserted.extend_from_slice(b"a few inserted bytes");
    inserted.extend_from_slice(&original[3 << 20..]);
    write(dir.path(), "big.bin", &inserted);
    let after = scan_with(dir.path(), &options);
    let moved = after.new_chunks(&known);
    assert!(
        (1..=2).contains(&moved.len()),
        "{} chunks moved",
        moved.len()
    );
    assert_ne!(after.summary.root_hash, before.summary.root_hash);
}
