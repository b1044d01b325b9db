// The page's views: a town (its state, containers, registry, pending
// dispatches, agents and log) and one agent (its record, rebuilt
// conversation, history, lineage, restore and fork, and live tail). Text
// from the server only ever goes into text nodes.

import { apiPath, getJson, newestEvents } from "./api.js";
import { actionsCard } from "./actions.js";
import { age, agentHash, badge, bytes, card, h, json, table, when } from "./dom.js";
import { historyCard, loadHistory } from "./history.js";
import { lineageCard, loadForks } from "./lineage.js";
import { openTail } from "./tail.js";

const TOWN_LOG_ROWS = 200;
const TAIL_BACKLOG = 50;
const TAIL_ROWS_KEPT = 500;

// The town: everything is read first, then drawn at once.
export async function townView(town) {
  const base = apiPath("towns", town);
  const [state, registry, agents, log] = await Promise.all([
    getJson(base),
    getJson(`${base}/container-registry`),
    getJson(`${base}/agents`),
    newestEvents(`${base}/events`, TOWN_LOG_ROWS),
  ]);
  const records = await Promise.all(
    agents.agents.map((a) => getJson(apiPath("towns", town, "rigs", a.rig_id, "agents", a.agent_id)).catch(() => null)),
  );
  return h("div", { id: "town-view" },
    h("h2", {}, `Town ${town}`),
    h("div", { class: "grid" }, stateCard(state, log.events), registryCard(registry)),
    pendingCard(state, log.events),
    agentsCard(town, agents.agents, records),
    townLogCard(log));
}

function stateCard(state, events) {
  const evicted = new Map();
  for (const e of events) {
    if (e.type === "container_eviction") evicted.set(e.data.container_id, e);
  }
  return card("town-state", "State",
    h("dl", {},
      h("dt", {}, "Draining"),
      h("dd", { id: "draining" }, state.draining ? badge("warn", "draining") : badge("ok", "no")),
      h("dt", {}, "Current container"), h("dd", { id: "current-container", class: "mono" }, state.current_container_id ?? "none"),
      h("dt", {}, "Evicting container"), h("dd", { class: "mono" }, state.evicting_container_id ?? "none"),
      h("dt", {}, "Last heartbeat"), h("dd", {}, age(state.last_heartbeat_at)),
      h("dt", {}, "Mayor"), h("dd", {}, state.mayor ? `${state.mayor.rig_id}/${state.mayor.agent_id}` : "none")),
    h("h3", {}, "Evicted containers"),
    evicted.size
      ? table("evicted", ["container", "reason", "when"], [...evicted.values()].reverse().map((e) =>
        h("tr", {}, h("td", { class: "mono" }, e.data.container_id), h("td", {}, e.data.reason ?? ""), h("td", {}, age(e.created_at)))))
      : h("p", { class: "muted" }, "none in the town log's newest events"));
}

function registryCard(registry) {
  return card("registry", "Registry",
    h("p", {}, "Container ", h("span", { class: "mono" }, registry.container_id ?? "none"),
      registry.updated_at ? `, updated ${age(registry.updated_at)}` : ""),
    table("registry-agents", ["rig", "agent", "role", "session", "port"], registry.agents.map((a) =>
      h("tr", {}, h("td", {}, a.rig_id), h("td", {}, a.agent_id), h("td", {}, a.role),
        h("td", { class: "mono" }, a.session_id ?? ""), h("td", { class: "num" }, a.port ?? "")))));
}

// Deferred dispatches wait while the town drains and are all released by
// the heartbeat that ends it (a `container_ready` that cleared the drain),
// so those deferred since the last such heartbeat are still pending.
function pendingCard(state, events) {
  const pending = new Map();
  if (state.draining) {
    for (const e of events) {
      if (e.type === "container_ready" && e.data.cleared_drain) pending.clear();
      if (e.type === "dispatch_deferred") pending.set(`${e.data.rig_id}/${e.data.agent_id}`, e);
    }
  }
  return card("pending", "Pending dispatches",
    pending.size
      ? table("pending-dispatches", ["rig", "agent", "deferred"], [...pending.values()].map((e) =>
        h("tr", {}, h("td", {}, e.data.rig_id), h("td", {}, e.data.agent_id), h("td", {}, age(e.created_at)))))
      : h("p", { class: "muted" }, state.draining ? "none yet" : "none: the town is not draining"));
}

function agentsCard(town, agents, records) {
  const rows = agents.map((a, i) => {
    const s = a.snapshot;
    const checkpoint = records[i] ? (records[i].has_checkpoint ? "yes" : "no") : "?";
    return h("tr", { "data-agent": `${a.rig_id}/${a.agent_id}` },
      h("td", {}, a.rig_id),
      h("td", {}, h("a", { href: agentHash(town, a.rig_id, a.agent_id) }, a.agent_id)),
      h("td", {}, a.role), h("td", { class: "num" }, a.last_seq),
      h("td", {}, s ? `v${s.version}, ${bytes(s.size)}, ${age(s.created_at)}` : "none"),
      h("td", { class: "checkpoint" }, checkpoint));
  });
  return card("agents", `Agents (${agents.length})`,
    table("agents-table", ["rig", "agent", "role", "last seq", "snapshot", "checkpoint"], rows));
}

function townLogCard(log) {
  const rows = [...log.events].reverse().map((e) =>
    h("tr", { "data-seq": e.seq }, h("td", { class: "num" }, e.seq), h("td", { class: "time" }, when(e.created_at)),
      h("td", {}, e.type), h("td", {}, json(e.data))));
  return card("town-log", `Town log (newest ${log.events.length} of ${log.last_seq})`,
    h("div", { class: "scroll" }, table("town-log-table", ["seq", "time", "type", "data"], rows)));
}

// One agent; returns the view and a function that stops its live tail.
// `onDone(message, hash)` is called after a restore or fork succeeded.
export async function agentView(town, rig, agent, onDone) {
  const base = apiPath("towns", town, "rigs", rig, "agents", agent);
  const [record, conversation, history] = await Promise.all([
    getJson(base), getJson(`${base}/conversation`), loadHistory(base),
  ]);
  const forks = await loadForks(town, rig, agent);
  // Start within what retention keeps, so only a real loss shows as a gap.
  const after = Math.max(record.last_seq - TAIL_BACKLOG, record.last_seq - record.event_count, 0);
  const tail = tailCard(`${base}/events`, after);
  const actions = actionsCard({ town, rig, agent, base, record, onDone });
  const view = h("div", { id: "agent-view" },
    h("h2", {}, `Agent ${rig}/${agent}`),
    h("div", { class: "grid" }, recordCard(record), conversationCard(conversation)),
    h("div", { class: "grid" }, historyCard(history, actions.restore), lineageCard(town, record, forks)),
    actions.node,
    tail.node);
  return { view, stop: tail.stop };
}

function recordCard(r) {
  const s = r.snapshot;
  return card("record", "Record",
    h("dl", {},
      h("dt", {}, "Role"), h("dd", { id: "role" }, r.role),
      h("dt", {}, "Last seq"), h("dd", {}, String(r.last_seq)),
      h("dt", {}, "Events kept"), h("dd", {}, String(r.event_count)),
      h("dt", {}, "Snapshot"),
      h("dd", {}, s ? `v${s.version}, ${bytes(s.size)} (${s.storage}), watermark ${s.event_watermark}, ${age(s.created_at)}` : "none"),
      h("dt", {}, "Checkpoint"), h("dd", {}, r.has_checkpoint ? "yes" : "no"),
      h("dt", {}, "Updated"), h("dd", {}, age(r.updated_at))));
}

function conversationCard(c) {
  const turns = c.turns.map((t) =>
    h("div", { class: `turn ${t.role}` },
      h("div", { class: "role" }, t.role, t.unfinished ? " (unfinished)" : ""),
      h("pre", {}, t.content)));
  return card("conversation", "Conversation",
    h("p", { class: "muted" }, `${c.turns.length} turns, ${c.omitted_turns} older omitted, ~${c.token_estimate} tokens`),
    h("div", { class: "scroll" }, turns.length ? turns : h("p", { class: "muted" }, "no turns yet")));
}

function tailCard(url, after) {
  const rows = h("tbody", {});
  const status = h("p", { id: "tail-status", class: "muted" }, "connecting…");
  const onEvent = (e) => {
    rows.prepend(h("tr", { "data-seq": e.seq },
      h("td", { class: "num" }, e.seq), h("td", { class: "time" }, new Date(e.created_at).toLocaleTimeString([], { hour12: false })),
      h("td", {}, e.type),
      h("td", { class: "mono" }, e.session_id ?? ""), h("td", {}, json(e.data))));
    while (rows.childElementCount > TAIL_ROWS_KEPT) rows.lastElementChild.remove();
  };
  const onStatus = (s) => {
    const phase = s.phase === "reconnecting" ? `reconnecting in ${s.retryInMs / 1000} s`
      : s.phase === "stopped" ? `stopped: ${s.error.message}` : "live";
    const gaps = s.gaps.map(([a, b]) => `${a}–${b}`).join(", ");
    status.textContent = `${phase} · after seq ${s.last} · reconnects ${s.reconnects}` +
      ` · duplicates ${s.duplicates}${gaps ? ` · dropped by retention: ${gaps}` : ""}`;
    status.dataset.phase = s.phase;
    status.dataset.reconnects = s.reconnects;
    status.dataset.duplicates = s.duplicates;
  };
  const stop = openTail(url, after, onEvent, onStatus);
  const node = card("tail", "Live tail", status,
    h("div", { class: "scroll" }, h("table", { id: "tail-table" },
      h("thead", {}, h("tr", {}, ["seq", "time", "type", "session", "data"].map((t) => h("th", {}, t)))), rows)));
  return { node, stop };
}
