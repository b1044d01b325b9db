// The operator page: sign-in and navigation. The location's hash names
// what is shown (#/towns/T, #/towns/T/rigs/R/agents/A), so a reload or a
// shared link opens the same view (after signing in).

import { claimsOf, explainAuth, token } from "./api.js";
import { h } from "./dom.js";
import { agentView, townView } from "./views.js";

const $ = (id) => document.getElementById(id);
let stopTail = () => {};
// What the last restore or fork did, shown once above the next view.
let flash = "";

// After a restore or fork: show `message` over the agent (or the fork).
function done(message, hash) {
  flash = message;
  if (hash && hash !== location.hash) location.hash = hash;
  else render();
}

function route() {
  const parts = location.hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
  if (parts[0] === "towns" && parts[1]) {
    if (parts[2] === "rigs" && parts[4] === "agents" && parts[5]) {
      return { town: parts[1], rig: parts[3], agent: parts[5] };
    }
    return { town: parts[1] };
  }
  return {};
}

function showSignIn(message) {
  stopTail();
  $("view").hidden = true;
  $("sign-in").hidden = false;
  $("sign-out").hidden = true;
  $("who").textContent = "";
  $("crumbs").replaceChildren();
  const error = $("sign-in-error");
  error.textContent = message ?? "";
  error.hidden = !message;
  $("town").value ||= route().town ?? claimsOf(token.get())?.town ?? "";
}

function describeToken() {
  const claims = claimsOf(token.get());
  if (!claims) return "";
  const scope = claims.scope === "admin" ? "admin" : `${claims.scope} ${claims.town ?? ""}`.trim();
  const expires = claims.exp ? `, expires ${new Date(claims.exp * 1000).toLocaleString()}` : "";
  return `${scope}${claims.read_only ? " (read-only)" : ""}${expires}`;
}

function crumbs({ town, rig, agent }) {
  const items = [h("a", { href: `#/towns/${encodeURIComponent(town)}` }, `town ${town}`)];
  if (agent) items.push(" / ", h("span", {}, `${rig}/${agent}`));
  return items;
}

async function render() {
  stopTail();
  stopTail = () => {};
  const where = route();
  const message = flash;
  flash = "";
  if (!token.get() || !where.town) return showSignIn();
  $("sign-in").hidden = true;
  $("sign-out").hidden = false;
  $("who").textContent = describeToken();
  $("crumbs").replaceChildren(...crumbs(where));
  const view = $("view");
  view.hidden = false;
  view.replaceChildren(h("p", { class: "muted" }, "loading…"));
  try {
    if (where.agent) {
      const shown = await agentView(where.town, where.rig, where.agent, done);
      stopTail = shown.stop;
      const note = message ? h("p", { id: "flash", class: "flash", role: "status" }, message) : "";
      view.replaceChildren(note, shown.view, refreshButton());
    } else {
      view.replaceChildren(await townView(where.town), refreshButton());
    }
  } catch (err) {
    if (err.isAuth) return showSignIn(explainAuth(err));
    view.replaceChildren(h("p", { class: "error", role: "alert" }, `${err.code ?? "error"}: ${err.message}`));
  }
}

const refreshButton = () => {
  const button = h("button", { type: "button", class: "quiet", id: "refresh" }, "Refresh");
  button.addEventListener("click", render);
  return button;
};

$("sign-in-form").addEventListener("submit", (event) => {
  event.preventDefault();
  token.set($("token").value.trim());
  $("token").value = "";
  const hash = `#/towns/${encodeURIComponent($("town").value.trim())}`;
  if (location.hash === hash) render();
  else location.hash = hash;
});

$("sign-out").addEventListener("click", () => {
  token.clear();
  showSignIn();
});

window.addEventListener("hashchange", render);
render();
