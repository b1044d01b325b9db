// Starts the Durable Streams reference server in file-backed mode for
// stasis-bench, prints its base URL on stdout, and stops on SIGTERM, SIGINT
// or when stdin closes (so it never outlives the bench that spawned it).
//
// usage: node server.mjs --data-dir DIR [--port PORT]
import { DurableStreamTestServer } from "@durable-streams/server";

function arg(name, fallback) {
  const at = process.argv.indexOf(name);
  return at >= 0 && at + 1 < process.argv.length ? process.argv[at + 1] : fallback;
}

const dataDir = arg("--data-dir");
if (!dataDir) {
  console.error("usage: node server.mjs --data-dir DIR [--port PORT]");
  process.exit(2);
}
const port = Number(arg("--port", "0"));

const server = new DurableStreamTestServer({ port, host: "127.0.0.1", dataDir });
await server.start();
process.stdout.write(`${server.url}\n`);

let stopping = false;
async function stop() {
  if (stopping) return;
  stopping = true;
  try {
    await server.stop();
  } finally {
    process.exit(0);
  }
}
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
process.stdin.on("end", stop);
process.stdin.on("close", stop);
process.stdin.resume();
