// One run, live: its timeline of steps as they execute (with a model's streaming output),
// the selected step in full, the DoD verdict, the issues it opened, the operator actions,
// the audit view at any version and the hash-chain badge.

import { api, ApiError, Feed, offers } from "./api.js";
import { showAudit, showVerified } from "./audit.js";
import { badge, duration, errorBox, h, replace, section, when } from "./dom.js";
import { fold, foldPartial, newRun } from "./fold.js";
import { stepDetail } from "./step.js";
import { setConnection } from "./status.js";

export async function showRun(root, runId) {
  const base = `/api/runs/${encodeURIComponent(runId)}`;
  const run = newRun(runId);
  let canRetry = false; // until the OpenAPI document says the server offers it
  let selected = null; // the instance shown in full; null: follow the running step
  let shownRev = -1;
  let shownInstance = null;
  let frame = null;

  const header = h("div", { class: "run-header", id: "run-header" });
  const message = h("div", { id: "run-message" });
  const timeline = h("ol", { class: "timeline", id: "timeline" });
  const detail = h("div", { class: "detail", id: "detail" });
  const dod = h("div", { id: "dod" });
  const issues = h("div", { id: "run-issues" });
  const verified = h("div", { id: "verified-box" });
  const audit = h("div", { id: "audit" });
  const eventLog = h("tbody", { id: "event-log" });
  const eventsPanel = h(
    "details",
    { class: "panel", id: "events-panel" },
    h("summary", {}, "Events"),
    h("table", { class: "events" }, h("thead", {}, h("tr", {}, ["position", "version", "type", "time"].map((c) => h("th", {}, c)))), eventLog),
  );
  replace(
    root,
    header,
    message,
    h(
      "div",
      { class: "run-layout" },
      h("div", { class: "timeline-column" }, h("h2", {}, "Timeline"), timeline),
      detail,
    ),
    h("div", { class: "run-lower" }, section("Definition of done", dod), section("Issues", issues)),
    section("Audit", verified, audit),
    eventsPanel,
  );

  function eventRow(e) {
    return h(
      "tr",
      { dataset: { position: String(e.position), version: String(e.version) } },
      h("td", {}, String(e.position)),
      h("td", {}, String(e.version)),
      h("td", {}, e.type),
      h("td", {}, when(e.timestamp)),
    );
  }

  // Rows for hundreds of events are built only when someone opens the list.
  eventsPanel.addEventListener("toggle", () => {
    if (eventsPanel.open) eventLog.replaceChildren(...run.events.map(eventRow));
    else eventLog.replaceChildren();
  });

  let versionShown = 0;
  function render() {
    frame = null;
    if (run.lastVersion !== versionShown) {
      versionShown = run.lastVersion;
      root.dataset.version = String(versionShown);
      audit.dispatchEvent(new CustomEvent("version", { detail: versionShown }));
    }
    renderHeader();
    renderTimeline();
    renderDetail();
    renderDod();
  }

  function schedule() {
    if (frame === null) frame = requestAnimationFrame(render);
  }

  // What every model reply of the run cost (priced models): accepted, rejected, ladder calls.
  function runCost() {
    const costs = [];
    for (const s of run.steps.values()) {
      for (const c of [s.response, ...s.rejections, ...(s.ladderCalls || [])]) {
        if (c && typeof c.cost_usd === "number") costs.push(c.cost_usd);
      }
    }
    return costs.length ? costs.reduce((a, b) => a + b, 0) : null;
  }

  function renderHeader() {
    const actions = [];
    if (run.status === "running" || run.status === "pending") {
      actions.push(h("button", { type: "button", class: "danger", id: "cancel-run", onclick: cancel }, "Cancel run"));
    }
    if (run.status === "running" && !heldByALiveLease()) {
      actions.push(h("button", { type: "button", id: "resume-run", onclick: resume }, "Resume"));
    }
    if (run.status === "failed" && canRetry) {
      actions.push(h("button", { type: "button", id: "retry-run", onclick: () => retry(null) }, "Retry from the failed step"));
    }
    actions.push(compareControl());
    replace(
      header,
      h("h1", {}, runId, " ", badge(run.status)),
      h(
        "dl",
        { class: "facts" },
        h("dt", {}, "recipe"),
        h("dd", {}, run.recipeId || ""),
        h("dt", {}, "task"),
        h("dd", { id: "run-task" }, run.task ? run.task.description : ""),
        h("dt", {}, "started"),
        h("dd", {}, when(run.createdAt)),
        h("dt", {}, "took"),
        h("dd", {}, duration(run.createdAt, run.completedAt)),
        h("dt", {}, "progress"),
        h("dd", {}, `${[...run.steps.values()].filter((s) => s.status === "done").length} of ${run.totalSteps} steps`),
        run.owner ? [h("dt", {}, "owner"), h("dd", {}, run.owner)] : null,
        runCost() !== null ? [h("dt", {}, "cost"), h("dd", { id: "run-cost" }, `$${runCost().toFixed(6)} (every reply paid for, rejected ones included)`)] : null,
      ),
      run.error ? h("p", { class: "error", id: "run-error" }, run.error) : null,
      run.waitingForPerson && run.status === "running"
        ? h("p", { class: "error", id: "run-waiting-person" }, `Waiting for a person (${run.waitingForPerson.owner || "user"}) at ${run.waitingForPerson.instance}: `, h("a", { href: `#/issues/${encodeURIComponent(run.waitingForPerson.issueId)}` }, "read the story and answer"))
        : null,
      h("div", { class: "actions" }, actions),
    );
  }

  let compare = null;
  let comparableLoaded = false;
  function compareControl() {
    if (!compare) {
      compare = h("select", { id: "compare-with", "aria-label": "compare with run" }, h("option", { value: "" }, "compare with…"));
      compare.addEventListener("change", () => {
        if (compare.value) location.hash = `#/diff/${encodeURIComponent(runId)}/${encodeURIComponent(compare.value)}`;
      });
    }
    if (run.recipeId && !comparableLoaded) {
      comparableLoaded = true;
      loadComparable().catch((error) => replace(message, errorBox(error)));
    }
    return compare;
  }

  // Other runs of the same recipe, as they stand when the page learns the recipe.
  async function loadComparable() {
    const others = await api(`/api/runs?recipe_id=${encodeURIComponent(run.recipeId)}`);
    for (const other of others) {
      if (other.run_id !== runId) compare.appendChild(h("option", { value: other.run_id }, `${other.run_id} (${other.status}, ${when(other.created_at)})`));
    }
  }

  // Each row is rebuilt only when its step changed: a 100-step history arriving at once
  // costs one row per step, not one timeline per frame.
  const rowCache = new Map(); // item -> {key, node}
  function renderTimeline() {
    const shownNow = currentInstance();
    const nodes = run.items.map((item) => {
      const key = item.kind === "mark" ? "mark" : `${run.steps.get(item.instance).rev}|${item.instance === shownNow}`;
      const cached = rowCache.get(item);
      if (cached && cached.key === key) return cached.node;
      const node = timelineRow(item);
      rowCache.set(item, { key, node });
      return node;
    });
    const children = timeline.children;
    if (nodes.length === children.length && nodes.every((node, i) => node === children[i])) return;
    timeline.replaceChildren(...nodes);
  }

  function timelineRow(item) {
    if (item.kind === "mark") {
      return h("li", { class: `mark ${item.tone}`, dataset: { type: item.type } }, h("span", { class: "muted" }, `v${item.version}`), " ", item.text);
    }
    const step = run.steps.get(item.instance);
    const model = step.response ? step.response.model : "";
    const attempts = step.response ? step.response.attempts : step.failures.length + step.rejections.length + (step.status === "running" ? 1 : 0);
    return h(
      "li",
      {
        class: `step${step.instance === currentInstance() ? " selected" : ""}`,
        dataset: { instance: step.instance, status: step.status },
        tabindex: 0,
        onclick: () => select(step.instance),
        onkeydown: (e) => e.key === "Enter" && select(step.instance),
      },
      h("span", { class: "index" }, String(step.index + 1)),
      h("span", { class: "name" }, step.instance),
      h("span", { class: "muted" }, `phase ${step.phase}`),
      h("span", {}, step.tool || step.agent || step.kind),
      h("span", { class: "muted" }, model),
      h("span", {}, duration(step.startedAt, step.completedAt)),
      attempts > 1 ? h("span", { class: "muted" }, `${attempts} attempts`) : null,
      badge(step.status),
    );
  }

  function currentInstance() {
    if (selected) return selected;
    const last = [...run.items].reverse().find((i) => i.kind === "step");
    return last ? last.instance : null;
  }

  function select(instance) {
    selected = instance;
    shownRev = -1;
    schedule();
  }

  let detailShownAt = -Infinity;
  let detailTimer = null;
  function renderDetail() {
    const instance = currentInstance();
    const step = instance ? run.steps.get(instance) : null;
    if (!step) {
      replace(detail, h("p", { class: "muted" }, "No step has started yet."));
      return;
    }
    if (instance === shownInstance && step.rev === shownRev) return; // nothing new to show
    // While history streams in, the followed step changes every frame: show it a few
    // times a second, not every frame (a step's full output can be large).
    const now = performance.now();
    if (!selected && now - detailShownAt < 150) {
      if (!detailTimer) detailTimer = setTimeout(() => ((detailTimer = null), schedule()), 150);
      return;
    }
    detailShownAt = now;
    const scrolled = detail.scrollTop;
    const actions = run.status === "failed" && canRetry ? h("button", { type: "button", class: "small", id: "retry-from-step", onclick: () => retry(step.stepId) }, "Retry from here") : null;
    const open = new Set([...detail.querySelectorAll("details[open] > summary")].map((s) => s.textContent));
    replace(detail, stepDetail(run, step, actions));
    for (const summary of detail.querySelectorAll("details > summary")) if (open.has(summary.textContent)) summary.parentElement.open = true;
    if (instance === shownInstance) detail.scrollTop = scrolled;
    shownInstance = instance;
    shownRev = step.rev;
  }

  let dodShown = null;
  function renderDod() {
    if (run.dod === dodShown) return;
    dodShown = run.dod;
    if (!run.dod) {
      replace(dod, h("p", { class: "muted" }, "Not checked yet."));
      return;
    }
    replace(
      dod,
      h("p", { class: run.dod.passed ? "good" : "error", id: "dod-verdict" }, run.dod.passed ? "passed" : "failed"),
      h(
        "table",
        { class: "dod" },
        h("tbody", {}, run.dod.results.map((r) => h("tr", { dataset: { passed: String(r.passed) } }, h("td", {}, r.passed ? "✓" : "✗"), h("td", {}, h("code", {}, JSON.stringify(r.check))), h("td", {}, r.detail)))),
      ),
    );
  }

  async function loadIssues() {
    const found = await api(`/api/issues?run_id=${encodeURIComponent(runId)}`);
    replace(
      issues,
      found.length
        ? h("ul", {}, found.map((i) => h("li", {}, badge(i.status), " ", h("a", { href: `#/issues/${encodeURIComponent(i.issue_id)}` }, i.title), h("span", { class: "muted" }, ` ${i.kind}`))))
        : h("p", { class: "muted" }, "None opened."),
    );
  }

  function heldByALiveLease() {
    // A run this or another server executes renews its lease; one whose process died (or a
    // CLI run, which holds no lease) shows the button, and the server decides.
    return Boolean(run.owner && run.lease_expires_at && Date.parse(run.lease_expires_at) > Date.now());
  }

  async function resume() {
    try {
      await api(`${base}/resume`, { method: "POST" });
      replace(message);
      if (feed.stopped || run.ended) startFeed();
    } catch (error) {
      replace(message, errorBox(error));
    }
  }

  async function cancel() {
    try {
      await api(`${base}/cancel`, { method: "POST" });
    } catch (error) {
      replace(message, errorBox(error));
    }
  }

  async function retry(fromStep) {
    try {
      await api(`${base}/retry`, { method: "POST", body: fromStep ? { from: fromStep } : {} });
      replace(message);
      if (feed.stopped || run.ended) startFeed();
    } catch (error) {
      replace(message, errorBox(error));
    }
  }

  const refreshAfterEnd = () => {
    loadIssues().catch((error) => replace(issues, errorBox(error)));
    showVerified(verified, base);
  };

  function onEvent(msg) {
    const before = run.lastVersion;
    fold(run, msg);
    if (run.lastVersion === before) return;
    if (eventsPanel.open) eventLog.appendChild(eventRow(run.events[run.events.length - 1]));
    if (msg.data.type === "StopHook" || run.ended) {
      refreshAfterEnd();
      setTimeout(refreshAfterEnd, 1500); // issues are opened by a reaction, just after
    }
    schedule();
  }

  let feed = null;
  let partials = 0; // transient messages received (they are never stored)
  function startFeed() {
    if (feed) feed.stop();
    run.ended = false;
    const after = run.events.length ? run.events[run.events.length - 1].position : null;
    feed = new Feed(`${base}/events`, {
      after,
      onEvent,
      onPartial: (data) => {
        partials += 1;
        root.dataset.partials = String(partials);
        if (foldPartial(run, data)) schedule();
      },
      onState: (state, error) => {
        if (state === "failed") {
          const missing = error instanceof ApiError && error.status === 404;
          replace(root, h("h1", {}, runId), errorBox(missing ? `No run ${runId}.` : error));
        }
        root.dataset.feed = state;
        root.dataset.connections = String(feed ? feed.connections : 0);
        setConnection(state);
      },
      isDone: () => run.ended,
    }).start();
  }

  startFeed();
  showAudit(audit, base);
  refreshAfterEnd();
  schedule();
  offers("/api/runs/{run_id}/retry", "post").then((offered) => {
    canRetry = offered;
    shownRev = -1;
    schedule();
  }, () => {});
  return () => {
    feed.stop();
    if (frame !== null) cancelAnimationFrame(frame);
  };
}
