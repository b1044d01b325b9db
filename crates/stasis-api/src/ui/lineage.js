// An agent's lineage: the agent it was forked from (its record's
// `forked_from`), and its forks. The API names no forks of an agent, so
// they are found among the town's agents whose record names this one.

import { apiPath, getJson } from "./api.js";
import { agentHash, card, h, table, when } from "./dom.js";

// The town's agents whose records are read to find forks, at most.
const MAX_SCANNED = 200;

// The forks of `rig/agent`: `{forks, scanned, total}`.
export async function loadForks(town, rig, agent) {
  const listed = await getJson(apiPath("towns", town, "agents"));
  const others = listed.agents
    .filter((a) => !(a.rig_id === rig && a.agent_id === agent))
    .slice(0, MAX_SCANNED);
  const records = await Promise.all(
    others.map((a) => getJson(apiPath("towns", town, "rigs", a.rig_id, "agents", a.agent_id)).catch(() => null)),
  );
  const forks = records.filter((r) => r?.forked_from?.rig === rig && r.forked_from.agent === agent);
  return { forks, scanned: others.length, total: listed.agents.length - 1 };
}

export function lineageCard(town, record, found) {
  const from = record.forked_from;
  const source = from
    ? h("p", { id: "forked-from" }, "Forked from ",
      h("a", { href: agentHash(town, from.rig, from.agent) }, `${from.rig}/${from.agent}`),
      ` at seq ${from.seq}`)
    : h("p", { id: "forked-from", class: "muted" }, "Not a fork.");
  const note = found.scanned < found.total
    ? h("p", { class: "muted" }, `Forks among the first ${found.scanned} of the town's ${found.total} other agents.`)
    : null;
  const forks = found.forks.length
    ? table("forks", ["fork", "at seq", "role", "created"], found.forks.map((f) =>
      h("tr", { "data-fork": `${f.rig_id}/${f.agent_id}` },
        h("td", {}, h("a", { href: agentHash(town, f.rig_id, f.agent_id) }, `${f.rig_id}/${f.agent_id}`)),
        h("td", { class: "num" }, String(f.forked_from.seq)),
        h("td", {}, f.role),
        h("td", { class: "time" }, when(f.created_at)))))
    : h("p", { id: "no-forks", class: "muted" }, "No forks.");
  return card("lineage", "Lineage", source, h("h4", {}, "Forks"), forks, note);
}
