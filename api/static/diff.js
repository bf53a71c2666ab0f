// Two runs side by side (any two, of any recipes): outcomes and totals; per step the request
// sent, the output, verdicts, tokens, cost and latency (the server's `controlroom diff`,
// GET /api/runs/{a}/diff/{b}); and a full-text side-by-side diff of any slot of one run
// against any slot of the other.

import { api, offers } from "./api.js";
import { badge, duration, errorBox, formatMs, h, replace, section } from "./dom.js";
import { lineDiff } from "./linediff.js";

export async function showDiff(root, a, b) {
  const path = (id) => `/api/runs/${encodeURIComponent(id)}`;
  const [runA, runB, stepsA, stepsB, compared] = await Promise.all([
    api(path(a)),
    api(path(b)),
    api(`${path(a)}/steps`),
    api(`${path(b)}/steps`),
    // The per-step comparison is the server's (one fold of both runs' events, the CLI's).
    offers("/api/runs/{run_id}/diff/{other_run_id}", "get").then((offered) => (offered ? api(`${path(a)}/diff/${encodeURIComponent(b)}`) : null)),
  ]);
  const link = (id) => h("a", { href: `#/runs/${encodeURIComponent(id)}` }, id);
  const head = () => h("tr", {}, h("th", {}, ""), h("th", {}, link(a)), h("th", {}, link(b)));
  const differs = (x, y) => (JSON.stringify(x) === JSON.stringify(y) ? "same" : "differs");
  const row = (name, x, y, same = differs(x, y)) => h("tr", { class: same, dataset: { row: name } }, h("th", {}, name), h("td", {}, x ?? "–"), h("td", {}, y ?? "–"));
  const totals = compared ? compared.totals : null;

  const outcome = h(
    "table",
    { class: "diff", id: "diff-outcome" },
    h("thead", {}, head()),
    h(
      "tbody",
      {},
      row("recipe", runA.recipe_id, runB.recipe_id),
      row("task", runA.task.description, runB.task.description),
      h("tr", { dataset: { row: "status" }, class: differs(runA.status, runB.status) }, h("th", {}, "status"), h("td", {}, badge(runA.status)), h("td", {}, badge(runB.status))),
      row("definition of done", dodText(runA.dod), dodText(runB.dod)),
      row("took", duration(runA.created_at, runA.completed_at), duration(runB.created_at, runB.completed_at), "timing"),
      totals ? row("model calls", totals.a.calls, totals.b.calls) : null,
      totals ? row("tokens", tokens(totals.a), tokens(totals.b)) : null,
      totals ? row("cost", money(totals.a.cost_usd), money(totals.b.cost_usd)) : null,
      totals ? row("model time", formatMs(totals.a.latency_ms), formatMs(totals.b.latency_ms), "timing") : null,
      row("error", runA.error, runB.error),
    ),
  );

  replace(
    root,
    h("h1", {}, "Compare runs"),
    runA.recipe_id !== runB.recipe_id ? h("p", { class: "muted", id: "diff-recipes-differ" }, "These runs follow different recipes: steps are matched by name.") : null,
    section("Outcome", outcome),
    section("Steps", compared ? stepTable(compared, a, b) : timingTable(stepsA, stepsB, a, b)),
    section("Slots", slotTable(runA, runB, head, row), slotDiff(runA, runB, a, b)),
  );
}

// One row per step (as the server matched them); a changed step opens to its request and
// output diffs.
function stepTable(compared, a, b) {
  const side = (figures) =>
    figures
      ? [
          badge(figures.status.startsWith("failed") ? "failed" : figures.status === "completed" ? "done" : figures.status),
          h("div", { class: "muted" }, `${figures.calls} call(s) · ${tokens(figures)} · ${money(figures.cost_usd)} · ${formatMs(figures.latency_ms)}`),
          Object.keys(figures.verdicts || {}).length ? h("div", { class: "verdicts" }, JSON.stringify(figures.verdicts)) : null,
        ]
      : h("span", { class: "muted" }, "not run");
  const rows = compared.steps.map((step) => {
    const diffs = [
      step.request_diff ? h("details", { class: "text-diff request-diff" }, h("summary", {}, "request sent"), unified(step.request_diff)) : null,
      step.output_diff ? h("details", { class: "text-diff output-diff" }, h("summary", {}, "output"), unified(step.output_diff)) : null,
    ];
    return h(
      "tr",
      { class: step.changed ? "differs" : "same", dataset: { row: step.step } },
      h("th", {}, step.step),
      h("td", {}, side(step.a)),
      h("td", {}, side(step.b)),
      h("td", {}, step.changed ? (diffs.some(Boolean) ? diffs : "verdict or status differs") : "same"),
    );
  });
  return h("table", { class: "diff", id: "diff-steps" }, h("thead", {}, h("tr", {}, h("th", {}, "step"), h("th", {}, a), h("th", {}, b), h("th", {}, "what changed"))), h("tbody", {}, rows));
}

// A unified diff as the server wrote it, each line marked by its first character.
function unified(text) {
  return h(
    "pre",
    { class: "unified" },
    text.split("\n").map((line) => h("span", { class: line.startsWith("+") && !line.startsWith("+++") ? "added" : line.startsWith("-") && !line.startsWith("---") ? "removed" : null }, `${line}\n`)),
  );
}

// A server without the diff route: the steps' timings and whether their outputs match.
function timingTable(stepsA, stepsB, a, b) {
  const byInstance = (steps) => new Map(steps.map((s) => [s.instance_id, s]));
  const mapA = byInstance(stepsA);
  const mapB = byInstance(stepsB);
  const instances = [...mapA.keys(), ...[...mapB.keys()].filter((k) => !mapA.has(k))];
  const rows = instances.map((instance) => {
    const x = mapA.get(instance);
    const y = mapB.get(instance);
    const cell = (s) => (s ? [badge(s.status), ` ${duration(s.started_at, s.completed_at)}`, s.model ? h("div", { class: "muted" }, s.model) : null] : "–");
    const same = x && y && x.output_hash === y.output_hash ? "same" : "differs";
    return h("tr", { class: same, dataset: { row: instance } }, h("th", {}, instance), h("td", {}, cell(x)), h("td", {}, cell(y)), h("td", {}, same === "same" ? "same output" : "output differs"));
  });
  return h("table", { class: "diff", id: "diff-steps" }, h("thead", {}, h("tr", {}, h("th", {}, "step"), h("th", {}, a), h("th", {}, b), h("th", {}, ""))), h("tbody", {}, rows));
}

function slotTable(runA, runB, head, row) {
  const names = [...new Set([...Object.keys(runA.cache_summary), ...Object.keys(runB.cache_summary)])];
  const rows = names.map((name) => {
    const x = runA.cache_summary[name];
    const y = runB.cache_summary[name];
    return row(name, x ? x.preview : null, y ? y.preview : null);
  });
  return h("table", { class: "diff", id: "diff-slots" }, h("thead", {}, head()), h("tbody", {}, rows));
}

// Any slot of run A against any slot of run B, in full, line by line.
function slotDiff(runA, runB, a, b) {
  const namesA = Object.keys(runA.cache_summary);
  const namesB = Object.keys(runB.cache_summary);
  const pick = (id, names, label) => h("select", { id, "aria-label": label }, names.map((n) => h("option", { value: n }, n)));
  const left = pick("diff-slot-a", namesA, `slot of ${a}`);
  const right = pick("diff-slot-b", namesB, `slot of ${b}`);
  // The same slot on both sides to start with: the last text an agent wrote in both runs.
  const shared = namesA.filter((n) => namesB.includes(n));
  const texts = shared.filter((n) => runA.cache_summary[n].type === "artifact" && runB.cache_summary[n].type === "artifact");
  const first = texts.length ? texts[texts.length - 1] : shared[0];
  if (first) {
    left.value = first;
    right.value = first;
  }
  const out = h("div", { id: "diff-text" });
  const show = h("button", { type: "button", id: "diff-slot-show" }, "Compare in full");
  show.addEventListener("click", async () => {
    replace(out, h("p", { class: "muted" }, "loading…"));
    try {
      const [x, y] = await Promise.all([slotText(a, left.value), slotText(b, right.value)]);
      replace(out, sideBySide(x, y, `${a} · ${left.value}`, `${b} · ${right.value}`));
    } catch (error) {
      replace(out, errorBox(error));
    }
  });
  if (!namesA.length || !namesB.length) return h("p", { class: "muted" }, "A run has no slot to compare.");
  return h("div", { class: "slot-diff" }, h("h4", {}, "Two slots in full"), h("p", {}, h("label", { for: "diff-slot-a" }, `${a}: `), left, " ", h("label", { for: "diff-slot-b" }, `${b}: `), right, " ", show), out);
}

async function slotText(runId, slot) {
  const found = await api(`/api/runs/${encodeURIComponent(runId)}/cache/${encodeURIComponent(slot)}`);
  return typeof found.text === "string" ? found.text : found.summary || "";
}

function sideBySide(x, y, titleA, titleB) {
  const diff = lineDiff(x.split("\n"), y.split("\n"));
  const changed = diff.rows.filter((r) => r.kind !== "same").length;
  const cell = (number, text, kind) => [h("td", { class: "line-no" }, number ?? ""), h("td", { class: `line ${kind}` }, text ?? "")];
  return h(
    "div",
    { class: "side-by-side-wrap" },
    h("p", { id: "diff-text-summary", class: "muted" }, diff.cut ? "The texts are too long to compare line by line in the page: shown side by side without matching." : changed ? `${changed} line(s) differ.` : "The texts are the same."),
    h(
      "table",
      { class: "side-by-side", id: "diff-text-table" },
      h("thead", {}, h("tr", {}, h("th", { colspan: 2 }, titleA), h("th", { colspan: 2 }, titleB))),
      h("tbody", {}, diff.rows.map((r) => h("tr", { class: r.kind }, cell(r.a, r.left, r.kind === "added" ? "blank" : r.kind), cell(r.b, r.right, r.kind === "removed" ? "blank" : r.kind)))),
    ),
  );
}

function tokens(figures) {
  return `${figures.input_tokens} in + ${figures.output_tokens} out tokens`;
}

function money(value) {
  return value === null || value === undefined ? "not priced" : `$${value.toFixed(6)}`;
}

function dodText(dod) {
  if (!dod) return "not checked";
  const passed = dod.results.filter((r) => r.passed).length;
  return `${dod.passed ? "passed" : "failed"} (${passed} of ${dod.results.length} checks)`;
}
