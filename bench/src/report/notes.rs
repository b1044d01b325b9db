//! How the numbers were taken: the notes printed under each table.

/// How the numbers were taken, printed under the table.
pub(super) const NOTES: &str = "\
- The ratio column is stasis ÷ baseline: for rates above 1 means stasis is faster, for latencies
  below 1 means stasis is faster. Every baseline and peer figure comes from the same run, on the
  same machine, in the same temp filesystem.
- Client and servers share the machine's cores. The client is one Tokio thread with one
  keep-alive HTTP/1.1 connection per concurrent worker. Events carry `{\"type\":\"bench\",\"data\":…}`
  with `data` a JSON object of the stated size.
- Native baselines use the event log's own schema and PRAGMAs (`stasis_sqlite::SqliteStore`, WAL,
  `synchronous=FULL` for fsync, `NORMAL` for os), rusqlite in-process, one transaction per batch;
  16 files are written by 16 threads.
- The peer is `@durable-streams/server` 0.3.7 (file-backed, it fsyncs each append), one stream per
  connection where stasis uses one agent per connection; its catch-up read is `GET ?offset=-1`,
  its live delivery `?offset=now&live=sse`.
- Every append workload starts on fresh logs. stasis keeps the newest 10,000 events per agent by
  default; a row marked \"retention active\" pushed its agents past that, so most of its appends
  also deleted the oldest events (the peer keeps everything).
- A catch-up read follows `has_more` pages to the end of the log, as a client would: a page ends at
  10,000 events or once its events' data passes the server's page byte limit (8 MiB in
  docs/http-api.md), so 10,000 events of 1000 B are two requests.
- Host start: spawn of `stasis serve` to the first 200 of a read of an existing agent's events,
  after a first start that warmed the compiled-component cache.
";

/// How the snapshot, push, rebuild, recovery and memory figures were taken.
pub(super) const SNAPSHOT_NOTES: &str = "\
- Same run, same machine, same temp filesystem as the event-log section; the ratio column is
  stasis ÷ baseline on medians (below 1: stasis is faster). Each workload's first round is a
  warm-up and is not counted; every loop is bounded by a count of rounds and a time limit.
- Snapshot round trip: `PUT /db-snapshot` of pseudo-random bytes (each round's body differs in the
  first 8 bytes of every 4 KiB page, so every PUT stores a new version all of whose chunks are new,
  as the native baseline writes every byte), then `GET /db-snapshot`, timed to the 201 and
  to the last byte of the body, on one keep-alive connection; the bytes read are compared with
  those sent outside the clock. Snapshots over the inline limit (1 MiB) go to the KV folder on the
  host, Workers KV on the edge. The server hashes every PUT (each chunk, and the whole file on
  another thread) and checks every GET (each chunk against its name; the whole file too, unless,
  as here, the server computed its sha256 over those very chunks at the PUT): the second
  baseline adds two hashes (`sha2` crate, in-process) to the file written, `fsync`ed and read
  back, so the gap between the two baselines is the hashing floor on this CPU.
- Peak memory: a fresh `stasis serve` stores a 1 KiB snapshot (warm-up: the agent's object and the
  snapshot code loaded), the peak is reset (`5` into `/proc/PID/clear_refs`), `VmRSS` is read, one
  PUT of the stated size (1 GiB, the default snapshot limit) is sent and `VmHWM` read from
  `/proc/PID/status`; then the peak is reset again and the same is read around the GET of it. The
  growth is `VmHWM − VmRSS before` of the larger of the two, also as a multiple of the body: the
  server splits and assembles streaming, so it must not grow with the body.
- `snapshot push --whole-file`: `stasis_client::snapshot::push` as a container runs it, the whole
  file in one request (SQLite's online backup of the open WAL database into memory, as for any
  database up to 256 MiB (a temp folder above), its chunk hashes and sha256 on two threads, the
  upload streamed from memory with `X-Stasis-Sha256`, the receipt checked), no writer running
  meanwhile; each push is followed by its local part alone (the copy and its hashes, no
  request), timed apart. The baseline, right after the pushes, is as many PUTs of as many
  pseudo-random bytes by the bench's own HTTP client.
- Delta push after one turn: each round first pushes the live database by chunks (untimed: the
  server then holds its chunks, as after a sidecar's previous push), then rewrites 6 `part` rows
  spread over the file with new text of the same length in one transaction (a kilo turn changed 6
  of 6,623 pages of a real 27 MB kilo.db), then times `snapshot push` (the backup copy into
  memory, its 32 KiB chunks and whole sha256 hashed on two threads; knowing the chunks of the
  untimed push, as the sidecar keeps those of its last push, it uploads the chunks that differ
  from them, 8 at a time from memory, without asking `POST .../missing`, then commits the
  manifest; a `409 chunks_missing` would upload what it names and commit again, none did),
  then, same round, `snapshot push --whole-file` of the same database: the baseline. Bytes sent
  are the chunks' bytes (the largest round); the request bodies with the JSON of the manifest (64
  hex digits per chunk) are given beside them.
- Pull (restore): a SQLite database pushed once by chunks (32 KiB), then `snapshot pull` into a
  fresh path with no chunk cache: the manifest, then, since every one of its many chunks must be
  fetched, the whole file in one `GET` (the client goes by chunks, 8 at a time, each checked
  against its sha256, only when fewer than 64 distinct chunks or at most half the bytes are to
  fetch: a request per 32 KiB chunk costs more than its bytes), streamed into a temp file while
  hashed, its sha256 checked, `PRAGMA quick_check` and fsync at once, rename; then, same round,
  the baseline: a native copy of the pulled file, `fsync`, and its sha256.
- Conversation rebuild: 10,000 events shaped as an agent SDK streams them (a user message is one
  `message.completed` with its text; an assistant message a `message.created`, 10 to 70
  `message_part.updated` with a `delta` of a few words, and a `message.completed`), appended to one
  agent. Then `GET /conversation?max_turns=1000&max_tokens=1000000`, its first answer checked to
  equal `stasis_domain::conversation::rebuild` of the events read (that in-process rebuild is timed
  too), and right after as many `GET /events?after=0&limit=10000` of the same events (one page).
- Dispatch with a summariser: a second `--durability fsync` host beside the main one, configured
  with a fake OpenAI-compatible summariser on loopback (the kilo harness's); both hold the same
  Mayor with 300 user turns of about 190 characters, so the default budget of 50 turns omits 251.
  The second host's first dispatches (not timed) make the summary, until one answers `cached`;
  then `POST /dispatch` is timed on both hosts in 5 alternating rounds, each answer checked
  (`cached` with the summary turn first; `not_configured` on the main host, the turns cut).
- Recovery: the spec's scenario. Container A registers a Mayor and two polecats, heartbeats,
  publishes its registry, streams 300 events of the Mayor's conversation, saves a checkpoint and
  pushes a kilo.db per agent (a SQLite database of pseudo-random text rows, the stated size:
  the pull checks it with `PRAGMA quick_check`). Each round, the last container is
  evicted and the user messages the Mayor in the gap (deferred); then a new container runs
  `stasis-client`'s boot steps, timed: the heartbeat (which clears the drain and carries the
  Mayor's dispatch, rebuilt with the gap message) and each agent's snapshot pulled in turn into an
  empty folder (by chunks in parallel: the server's own, at least 1 MiB, of a whole-file PUT; each
  and the whole sha256-verified, `quick_check`, fsynced, renamed into place). Checked outside the
  clock: every digest, every file's size, the dispatch's checkpoint and the gap message in its prompt.
  The 5–7 minutes and the 6–10 s target are the issue's figures for the system stasis replaces,
  not measured here.
";
