// The audit view: the run as it stood at any version (a slider over its events), and the
// badge that says whether its stored events still match their hash chain.

import { api } from "./api.js";
import { badge, errorBox, h, replace } from "./dom.js";

const verifyAsked = new WeakMap(); // node -> the number of the latest check asked of it

export async function showVerified(node, base) {
  const ask = (verifyAsked.get(node) || 0) + 1;
  verifyAsked.set(node, ask);
  replace(node, h("span", { class: "verify pending", id: "verified", dataset: { verified: "checking" } }, "checking the hash chain…"));
  try {
    const result = await api(`${base}/verify`);
    // Checks overlap (the run's end and the button both ask); an older answer, slower to
    // come back, must not overwrite a newer one that may have seen a changed store.
    if (ask !== verifyAsked.get(node)) return;
    const recheck = h("button", { type: "button", class: "small", id: "verify-again", onclick: () => showVerified(node, base) }, "Check again");
    // The chain is computable by anyone who can write the store: say what it cannot prove.
    const uncovered = result.not_covered
      ? h("p", { class: "muted", id: "verify-uncovered", dataset: { outcomeUnproven: String(result.not_covered.outcome_unproven) } }, `not proven: ${result.not_covered.message}`)
      : null;
    if (result.verified) {
      replace(node, h("span", { class: "verify ok", id: "verified", dataset: { verified: "true" } }, `✓ verified: ${result.events} events match their hash chain`), " ", recheck, uncovered);
    } else {
      replace(
        node,
        h("span", { class: "verify bad", id: "verified", dataset: { verified: "false" } }, `✗ tampered: ${result.problems.length} problem(s)`),
        " ",
        recheck,
        h("ul", { class: "problems" }, result.problems.map((p) => h("li", {}, `v${p.version} ${p.kind}: ${p.message}`))),
      );
    }
  } catch (error) {
    if (ask !== verifyAsked.get(node)) return;
    replace(node, h("span", { class: "verify bad", id: "verified", dataset: { verified: "error" } }, "✗ cannot verify"), errorBox(error));
  }
}

// The slider moves by version; "previous step" and "next step" move it to the version at
// which a step instance ended (its StepCompleted, or its StepFailed), numbered from 1 as the
// timeline numbers them. The run page sends them with each version, from the events it
// has folded: the view reads no trail of its own for them.
export function showAudit(node, base) {
  const slider = h("input", { type: "range", min: 1, max: 1, value: 1, id: "audit-slider", "aria-label": "version" });
  const label = h("span", { id: "audit-label" }, "");
  const previous = h("button", { type: "button", class: "small", id: "audit-prev-step", disabled: true }, "◀ previous step");
  const next = h("button", { type: "button", class: "small", id: "audit-next-step", disabled: true }, "next step ▶");
  const stepLabel = h("span", { id: "audit-step-label", "aria-live": "polite" }, "");
  const view = h("div", { id: "audit-view", class: "audit-view" });
  let following = true; // the slider tracks the last version until moved by hand
  let timer = null;
  let asked = 0;
  let stops = []; // {version, number, instance, failed}: where each step instance ended
  let totalSteps = 0;
  replace(
    node,
    h("div", { class: "slider" }, h("label", {}, "As of version ", slider), " ", label),
    h("div", { class: "slider", role: "group", "aria-label": "step by step" }, previous, " ", next, " ", stepLabel),
    view,
  );

  async function load() {
    const version = Number(slider.value);
    const ask = ++asked;
    try {
      const at = await api(`${base}/audit?at=${version}`);
      if (ask !== asked) return; // a later move of the slider has overtaken this answer
      replace(view, auditView(at));
      view.dataset.version = String(version);
    } catch (error) {
      if (ask === asked) replace(view, errorBox(error));
    }
  }

  function showStep() {
    const version = Number(slider.value);
    const done = stops.filter((s) => s.version <= version);
    const last = done[done.length - 1];
    const of = totalSteps || stops.length;
    if (last) {
      stepLabel.textContent = `after step ${last.number} of ${of}: ${last.instance}${last.failed ? " (failed)" : ""}${last.version === version ? "" : ` (+${version - last.version} events)`}`;
      stepLabel.dataset.version = String(last.version);
      stepLabel.dataset.instance = last.instance;
    } else {
      stepLabel.textContent = stops.length ? "before the first step ended" : "";
      delete stepLabel.dataset.version;
      delete stepLabel.dataset.instance;
    }
    previous.disabled = !stops.some((s) => s.version < version);
    next.disabled = !stops.some((s) => s.version > version);
  }

  function move(forward) {
    const version = Number(slider.value);
    const target = forward ? stops.find((s) => s.version > version) : [...stops].reverse().find((s) => s.version < version);
    if (!target) return;
    slider.value = String(target.version);
    following = Number(slider.value) === Number(slider.max);
    update();
  }
  previous.addEventListener("click", () => move(false));
  next.addEventListener("click", () => move(true));

  function update() {
    label.textContent = `${slider.value} of ${slider.max}`;
    showStep();
    clearTimeout(timer);
    timer = setTimeout(load, 120);
  }

  slider.addEventListener("input", () => {
    following = Number(slider.value) === Number(slider.max);
    update();
  });
  node.addEventListener("version", (event) => {
    // {version, stops, totalSteps}: the run's last version and where its steps ended.
    ({ stops, totalSteps } = event.detail);
    slider.max = String(event.detail.version);
    if (following) {
      slider.value = String(event.detail.version);
      update();
    } else {
      label.textContent = `${slider.value} of ${slider.max}`;
      showStep();
    }
  });
}

function auditView(at) {
  return h(
    "div",
    {},
    h("p", {}, "status ", badge(at.status), ` · phase ${at.phase || "–"} · step ${at.current_step_index + 1} of ${at.total_steps}`),
    h(
      "table",
      { class: "audit-steps" },
      h("thead", {}, h("tr", {}, ["step", "kind", "status", "output"].map((c) => h("th", {}, c)))),
      h(
        "tbody",
        {},
        at.steps.map((s) => h("tr", {}, h("td", {}, s.instance_id || s.step_id), h("td", {}, s.tool || s.agent_archetype || s.kind || ""), h("td", {}, badge(s.status)), h("td", { class: "muted" }, s.output_preview || s.error || ""))),
      ),
    ),
    h(
      "table",
      { class: "audit-slots" },
      h("thead", {}, h("tr", {}, ["slot", "type", "preview"].map((c) => h("th", {}, c)))),
      h("tbody", {}, Object.entries(at.cache_summary).map(([name, slot]) => h("tr", {}, h("td", {}, name), h("td", {}, slot.type), h("td", { class: "muted" }, slot.preview)))),
    ),
  );
}
