// Two runs of the same recipe side by side: outcomes, steps with their timings, and slots.

import { api } from "./api.js";
import { badge, duration, h, replace, section } from "./dom.js";

export async function showDiff(root, a, b) {
  const [runA, runB, stepsA, stepsB] = await Promise.all([
    api(`/api/runs/${encodeURIComponent(a)}`),
    api(`/api/runs/${encodeURIComponent(b)}`),
    api(`/api/runs/${encodeURIComponent(a)}/steps`),
    api(`/api/runs/${encodeURIComponent(b)}/steps`),
  ]);
  const link = (id) => h("a", { href: `#/runs/${encodeURIComponent(id)}` }, id);
  const head = h("tr", {}, h("th", {}, ""), h("th", {}, link(a)), h("th", {}, link(b)));
  const differs = (x, y) => (JSON.stringify(x) === JSON.stringify(y) ? "same" : "differs");
  const row = (name, x, y, same = differs(x, y)) => h("tr", { class: same, dataset: { row: name } }, h("th", {}, name), h("td", {}, x ?? "–"), h("td", {}, y ?? "–"));

  const outcome = h(
    "table",
    { class: "diff", id: "diff-outcome" },
    h("thead", {}, head.cloneNode(true)),
    h(
      "tbody",
      {},
      row("recipe", runA.recipe_id, runB.recipe_id),
      row("task", runA.task.description, runB.task.description),
      h("tr", { dataset: { row: "status" }, class: differs(runA.status, runB.status) }, h("th", {}, "status"), h("td", {}, badge(runA.status)), h("td", {}, badge(runB.status))),
      row("definition of done", dodText(runA.dod), dodText(runB.dod)),
      row("took", duration(runA.created_at, runA.completed_at), duration(runB.created_at, runB.completed_at), "timing"),
      row("error", runA.error, runB.error),
    ),
  );

  const byInstance = (steps) => new Map(steps.map((s) => [s.instance_id, s]));
  const mapA = byInstance(stepsA);
  const mapB = byInstance(stepsB);
  const instances = [...mapA.keys(), ...[...mapB.keys()].filter((k) => !mapA.has(k))];
  const stepRows = instances.map((instance) => {
    const x = mapA.get(instance);
    const y = mapB.get(instance);
    const cell = (s) => (s ? [badge(s.status), ` ${duration(s.started_at, s.completed_at)}`, s.model ? h("div", { class: "muted" }, s.model) : null] : "–");
    const same = x && y && x.output_hash === y.output_hash ? "same" : "differs";
    return h("tr", { class: same, dataset: { row: instance } }, h("th", {}, instance), h("td", {}, cell(x)), h("td", {}, cell(y)), h("td", {}, same === "same" ? "same output" : "output differs"));
  });

  const slotNames = [...new Set([...Object.keys(runA.cache_summary), ...Object.keys(runB.cache_summary)])];
  const slotRows = slotNames.map((name) => {
    const x = runA.cache_summary[name];
    const y = runB.cache_summary[name];
    return row(name, x ? x.preview : null, y ? y.preview : null);
  });

  replace(
    root,
    h("h1", {}, "Compare runs"),
    runA.recipe_id !== runB.recipe_id ? h("p", { class: "error" }, "These runs follow different recipes.") : null,
    section("Outcome", outcome),
    section("Steps", h("table", { class: "diff", id: "diff-steps" }, h("thead", {}, h("tr", {}, h("th", {}, "step"), h("th", {}, a), h("th", {}, b), h("th", {}, ""))), h("tbody", {}, stepRows))),
    section("Slots", h("table", { class: "diff", id: "diff-slots" }, h("thead", {}, head.cloneNode(true)), h("tbody", {}, slotRows))),
  );
}

function dodText(dod) {
  if (!dod) return "not checked";
  const passed = dod.results.filter((r) => r.passed).length;
  return `${dod.passed ? "passed" : "failed"} (${passed} of ${dod.results.length} checks)`;
}
