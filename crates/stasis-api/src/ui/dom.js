// Small builders shared by the views. Text from the server only ever goes
// into text nodes (a string child) or attributes set with setAttribute:
// never into innerHTML.

// An element with attributes and children (strings become text nodes).
export function h(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value !== null && value !== undefined && value !== false) node.setAttribute(name, value);
  }
  for (const child of children.flat()) {
    if (child !== null && child !== undefined) node.append(child);
  }
  return node;
}

export const when = (ms) => (ms ? new Date(ms).toLocaleString() : "—");

export function age(ms) {
  if (!ms) return "—";
  const s = Math.max(0, Math.round((Date.now() - ms) / 1000));
  if (s < 90) return `${s} s ago`;
  if (s < 5400) return `${Math.round(s / 60)} min ago`;
  if (s < 129600) return `${Math.round(s / 3600)} h ago`;
  return `${Math.round(s / 86400)} d ago`;
}

export function bytes(n) {
  if (n < 1024) return `${n} B`;
  const units = ["KiB", "MiB", "GiB"];
  let value = n / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${value.toFixed(1)} ${units[unit]}`;
}

export const badge = (kind, text) => h("span", { class: `badge ${kind}` }, text);
export const json = (value) => h("pre", {}, JSON.stringify(value));
export const card = (id, title, ...body) => h("section", { class: "card", id }, h("h3", {}, title), ...body);
export const table = (id, headings, rows) =>
  h("table", { id }, h("thead", {}, h("tr", {}, headings.map((t) => h("th", {}, t)))), h("tbody", {}, rows));
export const agentHash = (town, rig, agent) =>
  `#/towns/${encodeURIComponent(town)}/rigs/${encodeURIComponent(rig)}/agents/${encodeURIComponent(agent)}`;
