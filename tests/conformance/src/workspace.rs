//! One agent's workspace (`/workspace`): trees built with the domain's own
//! manifest types, cut into chunks and pages as a client cuts them, pushed
//! (missing, chunks, pages, commit) and pulled back (head, pages, chunks),
//! each piece checked.

use std::collections::HashMap;

use stasis_domain::workspace::{
    ChunkParams, ContentHash, ContentHasher, Entry, Node, TreeLimits, TreeManifest,
    pages::{self, DEFAULT_PAGE_BYTES, ManifestHead},
};

use crate::{AgentLog, Reply, Value, call, json};

/// The largest chunk the default chunking allows: what a big file is cut
/// into here.
pub const CHUNK: usize = 256 * 1024;
/// Names asked about per `POST /missing`.
const MISSING_BATCH: usize = 32_768;
/// Uploads and downloads in flight at once.
const PARALLEL: usize = 4;

/// A tree being built, with every chunk's bytes.
#[derive(Default)]
pub struct Tree {
    entries: Vec<Entry>,
    /// Every file chunk, by its sha256.
    pub chunks: HashMap<ContentHash, Vec<u8>>,
}

/// A tree's manifest as pushed: the head and its pages' bytes.
pub struct Paged {
    /// The head.
    pub head: ManifestHead,
    /// The pages, in order.
    pub pages: Vec<Vec<u8>>,
}

impl Paged {
    /// The head as the commit's JSON body.
    pub fn body(&self) -> Value {
        let text = serde_json::to_string(&self.head).expect("a head encodes");
        serde_json::from_str(&text).expect("and reads back")
    }

    /// The pages' names.
    pub fn page_names(&self) -> Vec<String> {
        self.head.pages.iter().map(|p| p.sha256.to_hex()).collect()
    }

    /// The ETag of this tree: its quoted root hash.
    pub fn etag(&self) -> String {
        format!("\"{}\"", self.head.root_hash)
    }
}

impl Tree {
    /// A directory.
    pub fn dir(&mut self, path: impl Into<Vec<u8>>) -> &mut Self {
        self.entries.push(Entry::dir(path));
        self
    }

    /// A symlink, never followed.
    pub fn symlink(&mut self, path: impl Into<Vec<u8>>, target: &str) -> &mut Self {
        self.entries.push(Entry::symlink(path, target));
        self
    }

    /// Any entry, as given (its chunks' bytes are not known here).
    pub fn entry(&mut self, entry: Entry) -> &mut Self {
        self.entries.push(entry);
        self
    }

    /// A file of `bytes`, cut into chunks of [`CHUNK`] bytes.
    pub fn file(&mut self, path: impl Into<Vec<u8>>, executable: bool, bytes: &[u8]) -> &mut Self {
        let pieces: Vec<Vec<u8>> = bytes.chunks(CHUNK).map(<[u8]>::to_vec).collect();
        self.file_of(path, executable, pieces)
    }

    /// A file made of these chunks, in order.
    pub fn file_of(
        &mut self,
        path: impl Into<Vec<u8>>,
        executable: bool,
        pieces: Vec<Vec<u8>>,
    ) -> &mut Self {
        let mut whole = ContentHasher::default();
        let mut refs = Vec::with_capacity(pieces.len());
        let mut size = 0u64;
        for piece in pieces {
            whole.update(&piece);
            let hash = ContentHash::of(&piece);
            size += piece.len() as u64;
            refs.push((hash, u32::try_from(piece.len()).expect("a chunk fits u32")));
            self.chunks.entry(hash).or_insert(piece);
        }
        let entry = Entry::file(path, executable, size, whole.finish(), refs);
        self.entries.push(entry);
        self
    }

    /// The manifest, checked.
    pub fn manifest(&self) -> TreeManifest {
        TreeManifest::new(ChunkParams::default(), self.entries.clone())
    }

    /// The manifest split into pages of the default bound.
    pub fn paged(&self) -> Paged {
        // No size limit here: the server judges that.
        let limits = TreeLimits {
            max_total_size: u64::MAX,
            ..TreeLimits::default()
        };
        let (head, pages) = pages::split(&self.manifest(), &limits, DEFAULT_PAGE_BYTES)
            .expect("the tree is a valid manifest");
        Paged {
            head,
            pages: pages.into_iter().map(|p| p.bytes).collect(),
        }
    }
}

/// An agent in a town of its own, seen through its `/workspace`.
pub struct WorkspaceAgent {
    /// The agent.
    pub log: AgentLog,
}

impl WorkspaceAgent {
    /// An agent in a fresh town named after the case.
    pub fn fresh(case: &str) -> Self {
        Self {
            log: AgentLog::fresh(case),
        }
    }

    /// The agent's `/workspace` path followed by `suffix`.
    pub fn path(&self, suffix: &str) -> String {
        self.log.path(&format!("/workspace{suffix}"))
    }

    /// `POST /workspace/missing`: the names the store lacks.
    pub fn missing(&self, names: &[String]) -> Vec<String> {
        let mut lacking = Vec::new();
        for batch in names.chunks(MISSING_BATCH) {
            let reply = call("POST", &self.path("/missing"))
                .json(&json!({ "chunks": batch }))
                .send();
            let body = reply.expect_json(200);
            let list = body["missing"].as_array().expect("missing is a list");
            lacking.extend(
                list.iter()
                    .map(|v| v.as_str().unwrap_or_default().to_owned()),
            );
        }
        lacking
    }

    /// `PUT /workspace/chunks/{name}`.
    pub fn put_chunk(&self, name: &str, bytes: &[u8]) -> Reply {
        call("PUT", &self.path(&format!("/chunks/{name}")))
            .header("Content-Type", "application/octet-stream")
            .body(bytes.to_vec())
            .send()
    }

    /// `GET /workspace/chunks/{name}`.
    pub fn get_chunk(&self, name: &str) -> Reply {
        call("GET", &self.path(&format!("/chunks/{name}"))).send()
    }

    /// Uploads every piece the store lacks, a few at once.
    pub fn upload(&self, pieces: &[&[u8]]) {
        let names: Vec<String> = pieces.iter().map(|p| ContentHash::of(p).to_hex()).collect();
        let lacking = self.missing(&names);
        let todo: Vec<(&String, &&[u8])> = names
            .iter()
            .zip(pieces)
            .filter(|(name, _)| lacking.contains(name))
            .collect();
        let per = todo.len().div_ceil(PARALLEL).max(1);
        std::thread::scope(|scope| {
            for share in todo.chunks(per) {
                scope.spawn(move || {
                    for (name, bytes) in share {
                        let status = self.put_chunk(name, bytes).status;
                        assert!(status == 201 || status == 200, "chunk {name}: {status}");
                    }
                });
            }
        });
    }

    /// `PUT /workspace/manifest` with these headers.
    pub fn commit(&self, body: &Value, headers: &[(&str, &str)]) -> Reply {
        let mut request = call("PUT", &self.path("/manifest"));
        for (name, value) in headers {
            request = request.header(name, value);
        }
        request.json(body).send()
    }

    /// Uploads the tree's chunks and pages, then commits with `headers`.
    pub fn push(&self, tree: &Tree, paged: &Paged, headers: &[(&str, &str)]) -> Reply {
        let mut pieces: Vec<&[u8]> = tree.chunks.values().map(Vec::as_slice).collect();
        pieces.extend(paged.pages.iter().map(Vec::as_slice));
        self.upload(&pieces);
        self.commit(&paged.body(), headers)
    }

    /// `GET /workspace/manifest`.
    pub fn head(&self) -> Reply {
        call("GET", &self.path("/manifest")).send()
    }

    /// Pulls the current version: its head, every page and every chunk,
    /// each checked against its name; returns the head's JSON and the
    /// manifest the pages hold, with every file's bytes checked against its
    /// sha256 (`files`: each file's bytes, by path).
    pub fn pull(&self) -> (Value, TreeManifest, HashMap<Vec<u8>, Vec<u8>>) {
        let head_json = self.head().expect_json(200);
        let head: ManifestHead =
            serde_json::from_value(head_json.clone()).expect("the reply holds a head");
        let pages: Vec<Vec<u8>> = head
            .pages
            .iter()
            .map(|page| self.fetch(&page.sha256.to_hex()))
            .collect();
        let manifest = pages::assemble(
            &head,
            pages.iter().map(Vec::as_slice),
            &TreeLimits::default(),
        )
        .expect("the pages rebuild the manifest");
        let mut names: Vec<String> = manifest
            .unique_chunks()
            .iter()
            .map(ContentHash::to_hex)
            .collect();
        names.sort();
        let fetched = self.fetch_all(&names);
        let mut files = HashMap::new();
        for entry in &manifest.entries {
            let Node::File(file) = &entry.node else {
                continue;
            };
            let mut bytes = Vec::with_capacity(usize::try_from(file.size).unwrap_or(0));
            for chunk in &file.chunks {
                bytes.extend_from_slice(&fetched[&chunk.sha256]);
            }
            assert_eq!(
                ContentHash::of(&bytes),
                file.sha256,
                "{} as pulled",
                entry.path
            );
            files.insert(entry.path.as_bytes().to_vec(), bytes);
        }
        (head_json, manifest, files)
    }

    /// One chunk's bytes, checked against its name.
    pub fn fetch(&self, name: &str) -> Vec<u8> {
        let reply = self.get_chunk(name);
        assert_eq!(reply.status, 200, "chunk {name}: {}", reply.text());
        assert_eq!(
            ContentHash::of(&reply.body).to_hex(),
            name,
            "chunk {name}'s bytes"
        );
        reply.body
    }

    fn fetch_all(&self, names: &[String]) -> HashMap<ContentHash, Vec<u8>> {
        let per = names.len().div_ceil(PARALLEL).max(1);
        std::thread::scope(|scope| {
            let workers: Vec<_> = names
                .chunks(per)
                .map(|share| {
                    scope.spawn(move || {
                        share
                            .iter()
                            .map(|name| (name.parse().expect("a hash"), self.fetch(name)))
                            .collect::<Vec<(ContentHash, Vec<u8>)>>()
                    })
                })
                .collect();
            workers
                .into_iter()
                .flat_map(|w| w.join().expect("a fetch worker"))
                .collect()
        })
    }
}

/// `len` deterministic pseudo-random bytes (splitmix64) from `seed`.
pub fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x5747_4153_4953_0002;
    let mut bytes = Vec::with_capacity(len + 8);
    while bytes.len() < len {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        bytes.extend_from_slice(&(z ^ (z >> 31)).to_le_bytes());
    }
    bytes.truncate(len);
    bytes
}
