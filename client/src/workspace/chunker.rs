//! Content-defined chunking with FastCDC (the `fastcdc` crate's `v2020`, normalisation level
//! 1, seed 0), each chunk named by its sha256. The parameters come from the manifest: a
//! workspace is always cut the way its first version was, so unchanged stretches of a file
//! keep their chunks.

use std::io::Read;

use fastcdc::v2020::{self, StreamCDC};
use stasis_domain::workspace::{ChunkParams, ChunkRef, ContentHash, ContentHasher, FASTCDC_2020};

use super::error::{WorkspaceError, WorkspaceResult};

/// A file's content as chunked: its size and sha256, and its chunks in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkedContent {
    /// Bytes read.
    pub size: u64,
    /// The sha256 of all of them.
    pub sha256: ContentHash,
    /// The chunks; none for an empty file.
    pub chunks: Vec<ChunkRef>,
}

/// A chunker for one set of parameters.
#[derive(Debug, Clone)]
pub struct Chunker {
    min: usize,
    avg: usize,
    max: usize,
}

impl Chunker {
    /// A chunker for `params`, refused unless they are FastCDC 2020's with sizes it accepts
    /// (even, within its bounds).
    pub fn new(params: &ChunkParams) -> WorkspaceResult<Self> {
        if params.algorithm != FASTCDC_2020 {
            return Err(WorkspaceError::UnsupportedChunking(format!(
                "algorithm {:?}; this client cuts with {FASTCDC_2020:?}",
                params.algorithm
            )));
        }
        let sizes = [params.min_size, params.avg_size, params.max_size].map(|s| s as usize);
        let [min, avg, max] = sizes;
        let in_bounds = (v2020::MINIMUM_MIN..=v2020::MINIMUM_MAX).contains(&min)
            && (v2020::AVERAGE_MIN..=v2020::AVERAGE_MAX).contains(&avg)
            && (v2020::MAXIMUM_MIN..=v2020::MAXIMUM_MAX).contains(&max)
            && min <= avg
            && avg <= max
            && sizes.iter().all(|s| s % 2 == 0);
        if !in_bounds {
            return Err(WorkspaceError::UnsupportedChunking(format!(
                "sizes {min}/{avg}/{max} are outside FastCDC's bounds or odd"
            )));
        }
        Ok(Self { min, avg, max })
    }

    /// Reads `source` to its end, cutting it into chunks. `on_chunk` sees each chunk's bytes
    /// as it is cut (a caller that uploads them needs no second read).
    pub fn chunk(
        &self,
        source: impl Read,
        mut on_chunk: impl FnMut(&ChunkRef, &[u8]),
    ) -> std::io::Result<ChunkedContent> {
        let mut whole = ContentHasher::default();
        let mut chunks = Vec::new();
        let mut size = 0u64;
        for cut in StreamCDC::new(source, self.min, self.avg, self.max) {
            let cut = cut.map_err(std::io::Error::from)?;
            whole.update(&cut.data);
            // A chunk is at most max_size (<= 16 MiB), so its length fits a u32.
            let chunk = ChunkRef {
                sha256: ContentHash::of(&cut.data),
                size: u32::try_from(cut.length).unwrap_or(u32::MAX),
            };
            on_chunk(&chunk, &cut.data);
            size += cut.data.len() as u64;
            chunks.push(chunk);
        }
        Ok(ChunkedContent {
            size,
            sha256: whole.finish(),
            chunks,
        })
    }
}
