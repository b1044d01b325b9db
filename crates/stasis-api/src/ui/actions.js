// Restore and fork, offered only with a token that may write. Each asks
// for confirmation first. A restore refused because a live container holds
// the agent (409 agent_live) says so, and the fence is an explicit choice
// of the confirmation; every other refusal shows the contract's message.

import { mayWrite, postJson } from "./api.js";
import { agentHash, card, h } from "./dom.js";

const ID_PATTERN = "[A-Za-z0-9_.:\\-]{1,128}";

// The card; `restore(body, what)` (null for a read-only token) asks to
// restore to a point (`{seq}`, `{kind, version, key?}`, `{pin}`).
// `onDone(message, hash)` runs after a success.
export function actionsCard({ town, rig, agent, base, record, onDone }) {
  if (!mayWrite()) {
    return {
      node: card("actions", "Restore and fork",
        h("p", { id: "actions-read-only", class: "muted" },
          "This token is read-only: restoring or forking needs a token that may write ",
          h("code", {}, `stasis token --town ${town}`), ".")),
      restore: null,
    };
  }
  const confirm = confirmPanel();
  const restore = (body, what) => confirm.ask({
    text: `Restore ${rig}/${agent} ${what}? Its kilo.db, workspace, checkpoint and memory ` +
      "become what they were then; a restore-undo pin keeps the way back.",
    action: "Restore",
    fence: true,
    go: async (fence) => {
      const done = await postJson(`${base}/restore`, fence ? { ...body, fence: true } : body);
      onDone(`Restored to seq ${done.point_seq}: stasis.restored is event ${done.seq}; ` +
        `undo with pin ${done.undo.pin}.`);
    },
  });
  const node = card("actions", "Restore and fork",
    restoreForm(record, restore),
    forkForm({ town, rig, agent, base, record, onDone, ask: confirm.ask }),
    confirm.node);
  return { node, restore };
}

function restoreForm(record, restore) {
  const seq = seqInput("restore-seq", record.last_seq);
  const form = h("form", { id: "restore-form" },
    h("label", {}, "Restore to seq", seq),
    h("button", { type: "submit" }, "Restore…"));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    restore({ seq: Number(seq.value) }, `to seq ${seq.value}`);
  });
  return form;
}

function forkForm({ town, rig, agent, base, record, onDone, ask }) {
  const name = h("input", { id: "fork-agent", required: "", pattern: ID_PATTERN, placeholder: `${agent}-fork`, autocomplete: "off", spellcheck: "false" });
  const forkRig = h("input", { id: "fork-rig", required: "", pattern: ID_PATTERN, value: rig, autocomplete: "off", spellcheck: "false" });
  const seq = seqInput("fork-seq", record.last_seq);
  const form = h("form", { id: "fork-form" },
    h("label", {}, "Fork into agent", name),
    h("label", {}, "in rig", forkRig),
    h("label", {}, "at seq", seq),
    h("button", { type: "submit" }, "Fork…"));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const target = { rig: forkRig.value.trim(), agent: name.value.trim(), seq: Number(seq.value) };
    ask({
      text: `Fork ${rig}/${agent} at seq ${target.seq} into a new agent ${target.rig}/${target.agent}? ` +
        `It gets the events 1 to ${target.seq} and the state as of then; no chunk is copied.`,
      action: "Fork",
      fence: false,
      go: async () => {
        const fork = await postJson(`${base}/fork`, { point: { seq: target.seq }, agent: target.agent, rig: target.rig });
        onDone(`Forked ${rig}/${agent} at seq ${fork.forked_from.seq} into ${fork.rig_id}/${fork.agent_id}.`,
          agentHash(town, fork.rig_id, fork.agent_id));
      },
    });
  });
  return form;
}

const seqInput = (id, last) =>
  h("input", { id, type: "number", min: "0", max: String(last), value: String(last), required: "", class: "narrow" });

// One confirmation at a time: what will happen, the fence choice (restore
// only), Confirm and Cancel, and the refusal if there is one.
function confirmPanel() {
  const text = h("p", { id: "confirm-text" });
  const fence = h("input", { type: "checkbox", id: "fence" });
  const fenceChoice = h("label", { class: "check", id: "fence-choice" }, fence,
    "Fence the live container: its next write to this agent is refused (409 container_fenced) and its runtime stops");
  const go = h("button", { type: "button", id: "confirm-go" }, "Confirm");
  const cancel = h("button", { type: "button", class: "quiet", id: "confirm-cancel" }, "Cancel");
  const error = h("p", { id: "action-error", class: "error", role: "alert", hidden: "" });
  const node = h("div", { id: "confirm", class: "confirm", hidden: "" },
    text, fenceChoice, h("div", { class: "buttons" }, go, cancel), error);
  let pending = null;
  const close = () => {
    node.hidden = true;
    pending = null;
  };
  cancel.addEventListener("click", close);
  go.addEventListener("click", async () => {
    if (!pending) return;
    go.disabled = true;
    error.hidden = true;
    try {
      await pending.go(fence.checked);
      close();
    } catch (err) {
      showRefusal(error, fenceChoice, err);
    } finally {
      go.disabled = false;
    }
  });
  const ask = (request) => {
    pending = request;
    text.textContent = request.text;
    go.textContent = `Confirm: ${request.action}`;
    fence.checked = false;
    fenceChoice.hidden = !request.fence;
    fenceChoice.classList.remove("attention");
    error.hidden = true;
    node.hidden = false;
    node.scrollIntoView({ block: "nearest" });
  };
  return { node, ask };
}

function showRefusal(error, fenceChoice, err) {
  error.dataset.code = err.code ?? "";
  if (err.code === "agent_live") {
    error.textContent = `A live container holds this agent (409 agent_live): ${err.message}. ` +
      "Tick “Fence the live container” and confirm again, or stop the container first.";
    fenceChoice.classList.add("attention");
  } else {
    const status = err.status ? `${err.status} ` : "";
    const reason = err.reason ? ` (${err.reason})` : "";
    error.textContent = `${status}${err.code ?? "error"}${reason}: ${err.message}`;
  }
  error.hidden = false;
}
