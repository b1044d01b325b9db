// A live tail of an agent's events over Server-Sent Events. EventSource
// cannot send an Authorization header, so the stream is read with fetch()
// and parsed here. After a broken connection it reconnects with backoff and
// resumes with Last-Event-ID (the newest seq shown), so nothing is missed
// and nothing is shown twice.

import { authHeaders, errorOf } from "./api.js";

const MAX_BACKOFF_MS = 15000;

// Starts tailing `url` after seq `after`; `onEvent(event)` gets each event
// once, in seq order, `onStatus(status)` the connection's state. Returns a
// function that stops the tail.
export function openTail(url, after, onEvent, onStatus) {
  const state = { last: after, reconnects: 0, duplicates: 0, gaps: [], connected: false };
  let stopped = false;
  let controller = null;
  const report = (extra) => onStatus({ ...state, ...extra });

  const deliver = (message) => {
    const event = JSON.parse(message.data);
    if (event.seq <= state.last) {
      state.duplicates += 1; // a resume that re-sent what was shown
      return;
    }
    state.last = event.seq;
    onEvent(event);
    report({ phase: "live" });
  };

  const connectOnce = async () => {
    controller = new AbortController();
    const response = await fetch(url, {
      headers: authHeaders({ Accept: "text/event-stream", "Last-Event-ID": String(state.last) }),
      cache: "no-store",
      signal: controller.signal,
    });
    if (response.status === 410) {
      // Retention dropped events past our cursor: say so, go on from the oldest kept.
      const err = await errorOf(response);
      const firstKept = Number(err.detail.first_seq ?? state.last + 1);
      state.gaps.push([state.last + 1, firstKept - 1]);
      state.last = Math.max(firstKept - 1, 0);
      return;
    }
    if (!response.ok) throw await errorOf(response);
    if (state.connected) state.reconnects += 1;
    state.connected = true;
    report({ phase: "live" });
    await readServerSentEvents(response.body, deliver);
  };

  (async () => {
    for (let attempt = 0; !stopped; attempt += 1) {
      try {
        await connectOnce();
        attempt = 0;
      } catch (err) {
        if (stopped) return;
        if (err.isAuth) {
          report({ phase: "stopped", error: err });
          return;
        }
      }
      if (stopped) return;
      const delay = Math.min(MAX_BACKOFF_MS, 500 * 2 ** Math.min(attempt, 5));
      report({ phase: "reconnecting", retryInMs: delay });
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
  })();

  return () => {
    stopped = true;
    controller?.abort();
  };
}

// Reads an SSE body, calling `onMessage({id, data})` per dispatched event;
// comments (keep-alives) and other fields are skipped. Ends with the body.
export async function readServerSentEvents(body, onMessage) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  let data = [];
  let id = null;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    const lines = buffer.split(/\r?\n/);
    buffer = lines.pop();
    for (const line of lines) {
      if (line === "") {
        if (data.length) onMessage({ id, data: data.join("\n") });
        data = [];
        id = null;
        continue;
      }
      if (line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      const text = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
      if (field === "data") data.push(text);
      else if (field === "id") id = text;
    }
  }
}
