// An agent's history: the versions kept of each kind (kilo.db, workspace,
// checkpoint, memory) with their seq, time and size, and its pins. With a
// token that may write, each version and pin has a restore button (a
// `restore-undo-*` pin's undoes that restore).

import { bodySize, getJson, headSize } from "./api.js";
import { bytes, card, h, table, when } from "./dom.js";

export const KINDS = [
  ["db_snapshot", "kilo.db"],
  ["workspace", "workspace"],
  ["checkpoint", "checkpoint"],
  ["memory", "memory"],
];
// The newest versions shown per kind (each costs one read for its size).
const SHOWN_PER_KIND = 10;
// Listing pages of 1,000 read per kind at most, to find the newest.
const MAX_PAGES = 5;

// Reads every kind's newest versions (with their sizes) and the pins.
export async function loadHistory(base) {
  const [kinds, pins] = await Promise.all([
    Promise.all(KINDS.map(([kind]) => kindHistory(base, kind))),
    getJson(`${base}/history/pins`),
  ]);
  return { kinds, pins: pins.pins };
}

async function kindHistory(base, kind) {
  let newest = [];
  let total = 0;
  let after = 0;
  let complete = false;
  for (let page = 0; page < MAX_PAGES; page += 1) {
    const listed = await getJson(`${base}/history`, { kind, limit: 1000, after });
    total += listed.versions.length;
    newest = newest.concat(listed.versions).slice(-SHOWN_PER_KIND);
    if (listed.next_after === undefined) {
      complete = true;
      break;
    }
    after = listed.next_after;
  }
  const sizes = await Promise.all(newest.map((v) => sizeOf(base, v).catch(() => null)));
  const versions = newest.map((v, i) => ({ ...v, size: sizes[i] })).reverse();
  return { kind, versions, total, complete };
}

// A version's size in bytes, read through its kind's own route.
async function sizeOf(base, v) {
  if (v.deleted) return null;
  const version = v.current ? {} : { version: v.version };
  switch (v.kind) {
    case "db_snapshot":
      return headSize(`${base}/db-snapshot`, version);
    case "workspace":
      return (await getJson(`${base}/workspace/manifest`, version)).total_size ?? null;
    case "checkpoint":
      return bodySize(`${base}/checkpoint`, version);
    case "memory": {
      const entry = await getJson(`${base}/memory/${encodeURIComponent(v.key)}`, version);
      return new TextEncoder().encode(JSON.stringify(entry.value)).byteLength;
    }
    default:
      return null;
  }
}

// The history card; `restore(body, what)` (null for a read-only token)
// asks to restore to a point.
export function historyCard(history, restore) {
  const label = Object.fromEntries(KINDS);
  const sections = history.kinds.map((k) => {
    const shown = k.versions.length;
    const more = k.total > shown ? `, newest ${shown} shown` : "";
    const count = `${k.total}${k.complete ? "" : "+"} versions${more}`;
    return h("div", { class: "kind", "data-kind": k.kind },
      h("h4", {}, label[k.kind], " ", h("span", { class: "muted" }, `(${count})`)),
      shown
        ? table(`history-${k.kind}`, ["version", "seq", "written", "size", "", ""], k.versions.map((v) => versionRow(v, restore)))
        : h("p", { class: "muted" }, "no versions"));
  });
  return card("history", "History",
    ...sections,
    h("h4", {}, "Pins"),
    history.pins.length
      ? table("pins", ["pin", "seq", "created", ""], history.pins.map((p) => pinRow(p, restore)))
      : h("p", { class: "muted" }, "none"));
}

function versionRow(v, restore) {
  const name = v.key === undefined ? `v${v.version}` : `${v.key} v${v.version}`;
  const state = v.current ? "current" : v.deleted ? "deleted" : "";
  const button = restore && !v.current
    ? h("button", { type: "button", class: "quiet small", "data-restore": `${v.kind}:${v.version}` }, "Restore…")
    : null;
  button?.addEventListener("click", () => {
    const body = { kind: v.kind, version: v.version };
    if (v.key !== undefined) body.key = v.key;
    restore(body, `to ${name} of ${v.kind} (seq ${v.seq}): every kind as it was at that point`);
  });
  return h("tr", { "data-version": v.version, "data-seq": v.seq, class: v.current ? "current" : null },
    h("td", { class: "mono" }, name),
    h("td", { class: "num" }, String(v.seq)),
    h("td", { class: "time" }, when(v.created_at)),
    h("td", { class: "num size" }, v.deleted ? "—" : v.size === null ? "?" : bytes(v.size)),
    h("td", {}, state),
    h("td", {}, button));
}

function pinRow(pin, restore) {
  const undo = pin.name.startsWith("restore-undo-");
  const button = restore
    ? h("button", { type: "button", class: "quiet small", "data-pin": pin.name }, undo ? "Undo restore…" : "Restore…")
    : null;
  button?.addEventListener("click", () => {
    const what = undo
      ? `back to how it was before that restore (pin ${pin.name}, seq ${pin.seq})`
      : `to pin ${pin.name} (seq ${pin.seq})`;
    restore({ pin: pin.name }, what);
  });
  return h("tr", { "data-pin": pin.name },
    h("td", { class: "mono" }, pin.name),
    h("td", { class: "num" }, String(pin.seq)),
    h("td", { class: "time" }, when(pin.created_at)),
    h("td", {}, button));
}
