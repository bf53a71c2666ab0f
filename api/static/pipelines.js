// Pipelines (seed 002's STATUS.md, live): every target with its current iteration, run state
// and blockers; one target with its phases and their states, the current status (blockers,
// escalations, consults), the history of archived iterations, and the STATUS.md export.

import { api, Feed } from "./api.js";
import { badge, errorBox, h, replace, section, throttle, when } from "./dom.js";
import { setConnection } from "./status.js";

// STATUS.md's ✅ 🔄 ⬜ ⏭️ ❌, as glyphs every text font has (no emoji font needed).
const ICONS = { done: "✓", running: "↻", waiting: "↻", pending: "□", skipped: "»", deferred: "»", failed: "✗" };
// The events that change a pipeline's status (the list view follows them on /api/events).
const STATUS_EVENTS = [
  "RunStarted", "StepStarted", "StepCompleted", "StepFailed", "StepWaiting", "HumanAnswered",
  "FlowDecided", "RunRetried", "RunCompleted", "RunFailed", "RunCancelled", "IterationArchived",
].join(",");

function link(target) {
  return `#/pipelines/${encodeURIComponent(target)}`;
}

export async function showPipelines(root) {
  const head = await api("/api/log/head");
  const body = h("div");
  let rows = await api("/api/pipelines");
  function render() {
    replace(
      body,
      h("h1", {}, "Pipelines"),
      h("p", { class: "muted" }, "Recipes run again and again on one target (each run an iteration), with their status as STATUS.md shows it."),
      rows.length === 0
        ? h("p", { class: "muted", id: "no-pipelines" }, "No pipeline has run yet: start a pipeline recipe (e.g. revision_pass).")
        : h(
            "table",
            { id: "pipelines" },
            h("thead", {}, h("tr", {}, ["status", "target", "iteration", "phase", "blockers", "escalations", "last archived", "updated"].map((c) => h("th", {}, c)))),
            h(
              "tbody",
              {},
              rows.map((p) =>
                h(
                  "tr",
                  { dataset: { targetId: p.target_id, status: p.run_status || "none", iteration: String(p.iteration) } },
                  h("td", {}, p.run_status ? badge(p.run_status) : ""),
                  h("td", {}, h("a", { href: link(p.target_id) }, p.target), h("div", { class: "muted" }, p.recipe_id)),
                  h("td", {}, `#${p.iteration}`),
                  h("td", {}, p.current_step || ""),
                  h("td", { class: p.blockers ? "error" : "" }, String(p.blockers)),
                  h("td", {}, String(p.escalations)),
                  h("td", {}, p.last_result ? `#${p.iterations} ${p.last_result}` : "none yet"),
                  h("td", {}, when(p.updated_at)),
                ),
              ),
            ),
          ),
    );
  }
  replace(root, body);
  render();
  const refresh = throttle(async () => {
    try {
      rows = await api("/api/pipelines");
      render();
    } catch (error) {
      replace(body, errorBox(error));
    }
  }, 200);
  const feed = new Feed(`/api/events?type=${STATUS_EVENTS}`, { after: head.position, onEvent: () => refresh(), onState: setConnection }).start();
  return () => feed.stop();
}

function phase(step) {
  const detail = step.detail ? h("div", { class: "muted step-detail" }, step.detail) : null;
  return h(
    "li",
    { class: `phase phase-${step.state}`, dataset: { stepId: step.step_id, state: step.state } },
    h("span", { class: "icon", "aria-hidden": "true" }, ICONS[step.state] || "⬜"),
    h("span", { class: "index" }, String(step.index)),
    h("span", { class: "name" }, step.step_id),
    h("span", { class: "muted" }, `${step.kind}${step.role ? ` · ${step.role}` : ""}${step.runs > 1 ? ` · run ${step.runs}×` : ""}`),
    badge(step.state),
    detail,
  );
}

function escalationRow(e) {
  const models = e.from_model || e.to_model ? `${e.from_model || "role model"} → ${e.to_model || "same"}` : "";
  return h(
    "tr",
    { dataset: { kind: e.kind } },
    h("td", {}, e.kind),
    h("td", {}, e.subject || ""),
    h("td", {}, models),
    h("td", {}, e.reason),
    h("td", {}, when(e.at)),
  );
}

function historyRow(it) {
  return h(
    "tr",
    { dataset: { number: String(it.number), result: it.result } },
    h("td", {}, `#${it.number}`),
    h("td", {}, badge(it.result), it.outcome !== null && it.outcome !== undefined ? ` outcome ${it.outcome}` : ""),
    h("td", { title: it.deferred_items.map((d) => `${d.step_id}: ${d.reason || ""}`).join("\n") }, String(it.deferred)),
    h("td", { title: it.relaxed_items.map((r) => `${r.step_id}: ${r.constraint || ""}`).join("\n") }, String(it.relaxed)),
    h("td", {}, h("a", { href: `#/runs/${encodeURIComponent(it.run_id)}` }, it.run_id), h("div", { class: "muted" }, it.archive), h("div", { class: "muted" }, when(it.archived_at))),
  );
}

function exportLine(state) {
  if (!state) return h("p", { class: "muted", id: "pipeline-export" }, "STATUS.md: not exported yet (a command that writes, serve or a worker exports it).");
  const ok = state.state === "exported";
  return h(
    "p",
    { id: "pipeline-export", class: ok ? "muted" : "error", dataset: { state: state.state } },
    `${state.path}: ${state.state} (log position ${state.position}, ${when(state.at)})`,
    ok ? "" : ` — ${state.problem || ""}`,
  );
}

export async function showPipeline(root, targetId) {
  const base = `/api/pipelines/${encodeURIComponent(targetId)}`;
  const head = await api("/api/log/head");
  let detail = await api(base);
  const body = h("div");

  function render() {
    const run = detail.current;
    const last = detail.history.length ? detail.history[detail.history.length - 1] : null;
    replace(
      body,
      h("h1", {}, `Pipeline ${detail.target} `, run ? badge(run.status) : null),
      h(
        "dl",
        { class: "facts" },
        h("dt", {}, "recipe"), h("dd", {}, detail.recipe_id),
        h("dt", {}, "target id"), h("dd", {}, detail.target_id),
        h("dt", {}, "iteration"), h("dd", { id: "pipeline-iteration" }, `#${detail.iteration}`),
        run ? [h("dt", {}, "run"), h("dd", {}, h("a", { href: `#/runs/${encodeURIComponent(run.run_id)}` }, run.run_id))] : null,
        run ? [h("dt", {}, "phase"), h("dd", { id: "pipeline-phase" }, run.current_step || (run.status === "done" || run.status === "partial" ? "all phases ended" : run.status))] : null,
        h("dt", {}, "updated"), h("dd", {}, when(detail.updated_at)),
      ),
      exportLine(detail.export),
      run ? section(`Iteration ${detail.iteration}: phases`, h("ol", { class: "phases", id: "pipeline-phases" }, run.steps.map(phase))) : null,
      run
        ? section(
            "Current status",
            run.error ? h("p", { class: "error" }, run.error) : null,
            run.blockers.length
              ? h("ul", { id: "pipeline-blockers" }, run.blockers.map((b) =>
                  h("li", { class: "error", dataset: { stepId: b.step_id } },
                    `Blocked: ${b.step_id} waits for ${b.owner || "a person"} since ${when(b.since)} `,
                    b.issue_id ? h("a", { href: `#/issues/${encodeURIComponent(b.issue_id)}` }, `answer issue ${b.issue_id}`) : null)))
              : h("p", { class: "muted", id: "pipeline-no-blockers" }, "No blockers."),
            run.escalations.length
              ? h("table", { id: "pipeline-escalations" },
                  h("thead", {}, h("tr", {}, ["rung", "step", "models", "reason", "when"].map((c) => h("th", {}, c)))),
                  h("tbody", {}, run.escalations.map(escalationRow)))
              : h("p", { class: "muted", id: "pipeline-no-escalations" }, "No escalations."),
          )
        : null,
      section(
        "History",
        detail.history.length
          ? h("table", { id: "pipeline-history" },
              h("thead", {}, h("tr", {}, ["run", "result", "deferred", "relaxed", "archive"].map((c) => h("th", {}, c)))),
              h("tbody", {}, detail.history.map(historyRow)))
          : h("p", { class: "muted" }, "No iteration archived yet."),
        last && last.gap_analysis ? [h("h4", {}, `Gap analysis of iteration ${last.number}`), h("pre", { id: "pipeline-gap" }, last.gap_analysis)] : null,
      ),
    );
  }

  replace(root, body);
  render();
  const refresh = throttle(async () => {
    try {
      detail = await api(base);
      render();
    } catch (error) {
      replace(body, errorBox(error));
    }
  }, 150);
  const feed = new Feed(`${base}/events`, { after: head.position, onEvent: () => refresh(), onState: setConnection }).start();
  return () => feed.stop();
}
