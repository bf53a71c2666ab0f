// One run, live: its timeline of steps as they execute (with a model's streaming output),
// the selected step in full, the DoD verdict, the issues it opened, the operator actions,
// the audit view at any version and the hash-chain badge.

import { api, ApiError, Feed, offers } from "./api.js";
import { showAudit, showVerified } from "./audit.js";
import { badge, duration, errorBox, formatMs, h, replace, section, when } from "./dom.js";
import { fold, foldPartial, newRun } from "./fold.js";
import { forkPanel } from "./fork.js";
import { loopPanel } from "./loop.js";
import { stepDetail } from "./step.js";
import { setConnection } from "./status.js";

// The events after which the server's word on the run (status, actions, totals) changes.
const SAYS_SOMETHING = new Set([
  "RunStarted", "RunClaimed", "RunReleased", "RunResumed", "RunRetried", "RunCompleted", "RunFailed", "RunCancelled",
  "StepStarted", "StepCompleted", "StepFailed", "StepWaiting", "HumanAnswered", "DodChecked", "AgentResponded", "AgentReplyRejected",
  "FlowDecided",
]);

export async function showRun(root, runId) {
  const base = `/api/runs/${encodeURIComponent(runId)}`;
  const run = newRun(runId);
  let canRetry = false; // until the OpenAPI document says the server offers it
  let canFork = false; // likewise for forks
  // What the page says about the run (status, actions, totals) is the server's fold of the
  // whole stream (GET /state, the one `controlroom show` prints); this page's own fold of
  // the events only draws the timeline as they stream. Nothing is said before it arrives.
  let state = null;
  let confirmingCancel = false;
  let tampered = false;
  let selected = null; // the instance shown in full; null: follow the running step
  let shownRev = -1;
  let shownInstance = null;
  let frame = null;

  const header = h("div", { class: "run-header", id: "run-header" });
  const message = h("div", { id: "run-message" });
  const timeline = h("ol", { class: "timeline", id: "timeline" });
  const detail = h("div", { class: "detail", id: "detail" });
  const fork = forkPanel(runId);
  const dod = h("div", { id: "dod" });
  const loopBox = h("div", { id: "loop-box" });
  const loopSection = section("Loop turns", loopBox);
  loopSection.id = "loop-section";
  loopSection.hidden = true; // only a loop run has turns
  const issues = h("div", { id: "run-issues" });
  const verified = h("div", { id: "verified-box" });
  const audit = h("div", { id: "audit" });
  const waterfall = h("div", { id: "waterfall", class: "waterfall" });
  const eventLog = h("tbody", { id: "event-log" });
  const eventsPanel = h(
    "details",
    { class: "panel", id: "events-panel" },
    h("summary", {}, "Events"),
    h("table", { class: "events" }, h("thead", {}, h("tr", {}, ["position", "version", "type", "time", "event"].map((c) => h("th", { scope: "col" }, c)))), eventLog),
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
    fork.element,
    loopSection,
    h("div", { class: "run-lower" }, section("Definition of done", dod), section("Issues", issues)),
    section("Waterfall", waterfall),
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
      // The stored event as JSON, built only when opened (a run may hold thousands).
      h("td", {}, rawEvent(e)),
    );
  }

  function rawEvent(e) {
    const box = h("details", { class: "raw" }, h("summary", {}, "JSON"));
    box.addEventListener("toggle", () => {
      if (box.open && box.children.length === 1) box.appendChild(h("pre", { class: "raw-json" }, JSON.stringify({ type: e.type, version: e.version, position: e.position, timestamp: e.timestamp, data: e.data }, null, 2)));
    });
    return box;
  }

  // Rows for hundreds of events are built only when someone opens the list.
  eventsPanel.addEventListener("toggle", () => {
    if (eventsPanel.open) eventLog.replaceChildren(...run.events.map(eventRow));
    else eventLog.replaceChildren();
  });

  let versionShown = 0;
  const stepStops = []; // where each step instance ended, for the audit view
  let stopsFolded = 0;
  function render() {
    frame = null;
    if (run.lastVersion !== versionShown) {
      versionShown = run.lastVersion;
      root.dataset.version = String(versionShown);
      // The audit view's step stops come from this page's own events: no second read.
      for (let i = stopsFolded; i < run.events.length; i++) {
        const e = run.events[i];
        if (e.type === "StepCompleted" || e.type === "StepFailed") stepStops.push({ version: e.version, number: e.data.step_index + 1, instance: e.data.instance_id || e.data.step_id, failed: e.type === "StepFailed" });
      }
      stopsFolded = run.events.length;
      audit.dispatchEvent(new CustomEvent("version", { detail: { version: versionShown, stops: stepStops, totalSteps: run.totalSteps } }));
    }
    renderHeader();
    renderTimeline();
    renderDetail();
    renderDod();
    renderLoop();
    renderWaterfall();
  }

  let loopShown = null;
  function renderLoop() {
    const loop = state ? state.loop || null : null;
    const key = JSON.stringify(loop);
    if (key === loopShown) return;
    loopShown = key;
    loopSection.hidden = !loop;
    replace(loopBox, loopPanel(loop));
  }

  function schedule() {
    if (frame === null) frame = requestAnimationFrame(render);
  }

  function shownStatus() {
    return state ? state.shown : "loading";
  }

  function actionButtons() {
    const actions = [];
    if (!state) return actions;
    if (state.actions.includes("cancel")) {
      if (confirmingCancel) {
        actions.push(
          h("span", { id: "cancel-confirm", role: "group", "aria-label": "confirm cancel" },
            "Cancel this run? It stops at once and cannot continue. ",
            h("button", { type: "button", class: "danger", id: "cancel-yes", onclick: cancel }, "Yes, cancel it"), " ",
            h("button", { type: "button", id: "cancel-no", onclick: () => ((confirmingCancel = false), schedule()) }, "Keep it running")),
        );
      } else {
        actions.push(h("button", { type: "button", class: "danger", id: "cancel-run", onclick: () => ((confirmingCancel = true), schedule()) }, "Cancel run…"));
      }
    }
    if (state.actions.includes("resume")) {
      actions.push(h("button", { type: "button", id: "resume-run", onclick: resume }, "Resume"));
    }
    if (state.actions.includes("retry") && canRetry) {
      actions.push(h("button", { type: "button", id: "retry-run", onclick: () => retry(null) }, "Retry from the failed step"));
    }
    return actions;
  }

  function failureText() {
    if (!state || state.status !== "failed") return null;
    if (state.failure_kind === "dod") return "Its Definition of Done failed (every step ran). To try again, open a step and choose “Retry from here”.";
    if (state.failure_kind === "step") return "A step failed.";
    return null;
  }

  function tokensText() {
    if (!state) return "";
    const cost = state.cost_usd === null ? "not priced" : `$${state.cost_usd.toFixed(6)}`;
    return `${cost} · ${state.input_tokens} in + ${state.output_tokens} out tokens`;
  }

  function argsText() {
    if (!state) return "";
    const entries = Object.entries(state.args);
    return entries.length ? entries.map(([k, v]) => `${k}=${JSON.stringify(v)}`).join(", ") : "none";
  }

  // The header's facts and its actions are rebuilt apart, each only when what it shows
  // changed: a button stays the same node (focus, a click under way) while events stream.
  const headerFacts = h("div", { id: "run-facts" });
  // The run's buttons are rebuilt as its state changes; the compare controls are built once
  // and never moved, so a state change does not take the focus from a half-typed run id.
  const runButtons = h("span", { class: "contents", id: "run-buttons" });
  const compareBox = h("span", { class: "contents", id: "run-compare" });
  const headerActions = h("div", { class: "actions", id: "run-actions" }, runButtons, compareBox);
  header.append(headerFacts, headerActions);
  let headerKey = null;
  let actionsKey = null;
  function renderHeader() {
    const status = shownStatus();
    const forActions = JSON.stringify([state && state.actions, confirmingCancel, canRetry, run.recipeId]);
    if (forActions !== actionsKey) {
      actionsKey = forActions;
      replace(runButtons, actionButtons());
      const controls = compareControl();
      if (compareBox.childElementCount === 0) compareBox.append(...controls);
    }
    const key = JSON.stringify([state, tampered, run.recipeId, run.task && run.task.description, run.completedAt, run.owner, run.error, Boolean(run.waitingForPerson)]);
    if (key === headerKey) return;
    headerKey = key;
    header.classList.toggle("tampered", tampered);
    replace(
      headerFacts,
      h("h1", {}, runId, " ", state ? badge(status) : h("span", { class: "badge muted", dataset: { status: "loading" } }, "loading…"), tampered ? [" ", h("span", { class: "badge status-failed", id: "header-tampered" }, "✗ store tampered")] : null),
      h("p", { class: "sr-only", role: "status", id: "run-status-live" }, state ? `Run ${runId} is ${status}` : ""),
      h(
        "dl",
        { class: "facts" },
        h("dt", {}, "recipe"),
        h("dd", {}, run.recipeId || ""),
        h("dt", {}, "task"),
        h("dd", { id: "run-task" }, run.task ? run.task.description : ""),
        h("dt", {}, "args"),
        h("dd", { id: "run-args" }, argsText()),
        h("dt", {}, "started"),
        h("dd", {}, when(run.createdAt)),
        h("dt", {}, "took"),
        h("dd", {}, duration(run.createdAt, run.completedAt)),
        h("dt", {}, "progress"),
        h("dd", { id: "run-progress" }, state ? `${state.steps_done} of ${state.total_steps} steps${state.current_step ? ` · at ${state.current_step}` : ""}` : ""),
        run.owner ? [h("dt", {}, "owner"), h("dd", {}, run.owner)] : null,
        h("dt", {}, "cost"),
        h("dd", { id: "run-cost" }, tokensText()),
      ),
      state && state.reason ? h("p", { class: "error", id: "run-stalled" }, state.reason) : null,
      run.error ? h("p", { class: "error", id: "run-error" }, run.error) : null,
      failureText() ? h("p", { class: "error", id: "run-failure-kind", dataset: { kind: state.failure_kind } }, failureText()) : null,
      treeFacts(),
      run.waitingForPerson && run.status === "running"
        ? h("p", { class: "error", id: "run-waiting-person" }, `Waiting for a person (${run.waitingForPerson.owner || "user"}) at ${run.waitingForPerson.instance}: `, h("a", { href: `#/issues/${encodeURIComponent(run.waitingForPerson.issueId)}` }, "read the story and answer"))
        : null,
    );
  }

  // Seed 004's run tree: the run that started this one, the runs it started (each with the
  // code it ended with), and the whole tree rolled up, all from the server's /state.
  const OUTCOMES = { 0: "SUCCESS", 1: "FAILURE", 2: "DEPTH_EXCEEDED", 3: "HUMAN_INPUT", 10: "NEEDS_REFINEMENT", 11: "NEEDS_ESCALATION", 12: "PARTIAL_SUCCESS", 20: "INTERRUPTED", 21: "TIMEOUT" };
  function runLink(id) {
    return h("a", { href: `#/runs/${encodeURIComponent(id)}` }, id);
  }
  // Lineage (issue 31): the run this one was forked from, the runs forked from it, each
  // with a link to compare, and the whole family's spend (copied steps counted once).
  function lineageFacts() {
    if (state && state.eval) {
      const e = state.eval;
      return h("p", { id: "run-eval-totals" }, `Eval: ${e.forks} forks, $${e.cost_usd.toFixed(4)}, ${e.input_tokens} in + ${e.output_tokens} out tokens`);
    }
    if (!state || (!state.forked_from && !(state.forks || []).length)) return null;
    const compareLink = (other) => h("a", { href: `#/diff/${encodeURIComponent(runId)}/${encodeURIComponent(other)}`, class: "compare" }, "compare");
    const source = state.forked_from
      ? h("p", { id: "run-forked-from" }, "Forked from ", runLink(state.forked_from.run_id), ` at step ${state.forked_from.step} · `, compareLink(state.forked_from.run_id))
      : null;
    const forks = (state.forks || []).length
      ? h("ul", { id: "run-forks", "aria-label": "runs forked from this run" }, state.forks.map((f) => h("li", { dataset: { run: f.run_id } }, runLink(f.run_id), ` from step ${f.step} · `, compareLink(f.run_id))))
      : null;
    const copied = state.forked_from && state.copied_cost_usd ? h("p", { class: "muted", id: "run-copied-cost" }, `Copied from its source: $${state.copied_cost_usd.toFixed(6)} (not paid again)`) : null;
    const family = state.family;
    const totals = family
      ? h("p", { id: "run-family-totals" }, `Fork family: ${family.runs} runs, $${family.cost_usd.toFixed(4)}, ${family.input_tokens} in + ${family.output_tokens} out tokens`, family.copied_cost_usd ? h("span", { class: "muted" }, ` (copied steps, $${family.copied_cost_usd.toFixed(4)}, counted once)`) : null)
      : null;
    return h("div", { id: "run-lineage" }, source, forks, totals, copied);
  }

  function treeFacts() {
    const lineage = lineageFacts();
    if (!state || (!state.parent && !(state.children || []).length)) return lineage;
    const parent = state.parent
      ? h("p", { id: "run-parent" }, "Started by ", runLink(state.parent.run_id), ` at step ${state.parent.instance_id} · depth ${state.parent.depth} of ${state.parent.max_depth ?? "?"}`)
      : null;
    const tree = state.tree;
    const totals = tree
      ? h("p", { id: "run-tree-totals" }, `Tree: ${tree.runs} runs, ${tree.deepest} level(s) below, $${tree.cost_usd.toFixed(4)}, ${tree.input_tokens} in + ${tree.output_tokens} out tokens`)
      : null;
    const children = (state.children || []).length
      ? h(
          "ul",
          { id: "run-children", "aria-label": "runs this run started" },
          state.children.map((c) =>
            h(
              "li",
              { dataset: { run: c.run_id } },
              badge(c.status),
              " ",
              runLink(c.run_id),
              ` ${c.recipe_id} · step ${c.instance_id}${c.attempt > 1 ? ` · attempt ${c.attempt}` : ""}`,
              c.outcome !== undefined && c.outcome !== null ? h("span", { class: "muted" }, ` · ${OUTCOMES[c.outcome] || `code ${c.outcome}`}`) : null,
            ),
          ),
        )
      : null;
    return [lineage, h("div", { id: "run-tree" }, parent, totals, children)];
  }

  // When each step ran, on one time axis: its start, its length, its waits and attempts.
  // A step still "running" in an interrupted run is drawn up to its last event, never to
  // now: the time since its process died is not work.
  let waterfallKey = null;
  let waterfallAt = -Infinity;
  let waterfallTimer = null;
  function renderWaterfall() {
    const steps = [...run.steps.values()];
    const key = `${run.rev}|${shownStatus()}`;
    if (key === waterfallKey) return;
    // While history streams in, it is redrawn a couple of times a second, not every frame.
    const now = performance.now();
    if (!run.ended && now - waterfallAt < 500) {
      if (!waterfallTimer) waterfallTimer = setTimeout(() => ((waterfallTimer = null), schedule()), 500);
      return;
    }
    waterfallAt = now;
    waterfallKey = key;
    if (!steps.length || !run.createdAt) {
      replace(waterfall, h("p", { class: "muted" }, "No step has started yet."));
      return;
    }
    const t0 = Date.parse(run.createdAt);
    const lastEvent = run.events.length ? Date.parse(run.events[run.events.length - 1].timestamp) : t0;
    const live = shownStatus() === "running" || shownStatus() === "waiting";
    const endOf = (s) => (s.completedAt ? Date.parse(s.completedAt) : live ? Math.max(Date.now(), lastEvent) : lastEvent);
    const t1 = Math.max(t0 + 1, ...steps.map(endOf));
    const span = t1 - t0;
    replace(
      waterfall,
      h(
        "ol",
        { class: "bars" },
        steps.map((s) => {
          const from = Date.parse(s.startedAt) - t0;
          const length = endOf(s) - Date.parse(s.startedAt);
          const attempts = s.response ? s.response.attempts : s.failures.length + s.rejections.length + 1;
          return h(
            "li",
            { dataset: { instance: s.instance, status: s.status } },
            h("span", { class: "bar-label" }, s.instance),
            h(
              "span",
              { class: "bar-track" },
              h("span", { class: `bar bar-${s.status}`, dataset: { left: (from / span).toFixed(4), width: (Math.max(length, 0) / span).toFixed(4) } }),
            ),
            h("span", { class: "muted bar-figure" }, `+${formatMs(from)} · ${formatMs(length)}${s.status === "waiting" ? " · waiting" : ""}${attempts > 1 ? ` · ${attempts} attempts` : ""}${!s.completedAt && !live ? " · stopped" : ""}`),
          );
        }),
      ),
    );
    // Sized through the CSSOM: the content-security policy allows no inline style attribute.
    for (const bar of waterfall.querySelectorAll(".bar")) {
      bar.style.marginLeft = `${Number(bar.dataset.left) * 100}%`;
      bar.style.width = `max(2px, ${Number(bar.dataset.width) * 100}%)`;
    }
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
    return [compare, compareAny()];
  }

  // Any other run, of any recipe, by its id.
  let compareForm = null;
  function compareAny() {
    if (!compareForm) {
      const input = h("input", { id: "compare-id", "aria-label": "compare with run id", placeholder: "or a run id", size: 22 });
      compareForm = h("form", { id: "compare-form", class: "inline" }, input, " ", h("button", { type: "submit" }, "Compare"));
      compareForm.addEventListener("submit", (event) => {
        event.preventDefault();
        const other = input.value.trim();
        if (other) location.hash = `#/diff/${encodeURIComponent(runId)}/${encodeURIComponent(other)}`;
      });
    }
    return compareForm;
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
      const key = item.kind === "mark" ? "mark" : `${run.steps.get(item.instance).rev}|${item.instance === shownNow}|${shownStatus()}`;
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
        "aria-current": step.instance === currentInstance() ? "true" : null,
        onclick: () => select(step.instance),
        onkeydown: (e) => timelineKey(e, step.instance),
      },
      h("span", { class: "index" }, String(step.index + 1)),
      h("span", { class: "name" }, step.instance),
      h("span", { class: "muted" }, `phase ${step.phase}`),
      h("span", {}, step.tool || step.agent || step.kind),
      h("span", { class: "muted" }, model),
      h("span", {}, stepDuration(step)),
      attempts > 1 ? h("span", { class: "muted" }, `${attempts} attempts`) : null,
      badge(step.status),
    );
  }

  // A step with no end in a run nobody advances stopped with its process: say so, and
  // count no time for it (the dead time is not the step's duration).
  function stepDuration(step) {
    if (step.completedAt) return duration(step.startedAt, step.completedAt);
    if (step.status === "running" && shownStatus() === "interrupted") return "stopped";
    return "";
  }

  // Enter or Space opens a step; the arrows (and Home/End) move along the timeline. The
  // chosen row is drawn at once and keeps the focus (a redrawn row is a new node).
  function timelineKey(event, instance) {
    const rows = [...timeline.querySelectorAll("li.step")];
    const at = rows.findIndex((row) => row.dataset.instance === instance);
    let to = null;
    if (event.key === "Enter" || event.key === " ") to = at;
    else if (event.key === "ArrowDown" || event.key === "ArrowRight") to = Math.min(rows.length - 1, at + 1);
    else if (event.key === "ArrowUp" || event.key === "ArrowLeft") to = Math.max(0, at - 1);
    else if (event.key === "Home") to = 0;
    else if (event.key === "End") to = rows.length - 1;
    if (to === null || to < 0) return;
    event.preventDefault();
    const target = rows[to].dataset.instance;
    select(target);
    if (frame !== null) cancelAnimationFrame(frame);
    render();
    const row = timeline.querySelector(`li.step[data-instance="${CSS.escape(target)}"]`);
    if (row) row.focus();
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
    const actions = [
      state && state.actions.includes("retry_from_step") && canRetry ? h("button", { type: "button", class: "small", id: "retry-from-step", onclick: () => retry(step.stepId) }, "Retry from here") : null,
      // A fork copies what the run recorded before this step: offered once the step ran.
      canFork && step.status !== "pending" ? h("button", { type: "button", class: "small", id: "fork-from-step", onclick: () => fork.open(step) }, "Fork from here…") : null,
    ];
    const open = new Set([...detail.querySelectorAll("details[open] > summary")].map((s) => s.textContent));
    replace(detail, stepDetail(run, step, actions));
    for (const summary of detail.querySelectorAll("details > summary")) if (open.has(summary.textContent)) summary.parentElement.open = true;
    if (instance === shownInstance) detail.scrollTop = scrolled;
    shownInstance = instance;
    shownRev = step.rev;
  }

  let dodShown;
  function renderDod() {
    const key = run.dod || shownStatus();
    if (key === dodShown) return;
    dodShown = key;
    if (!run.dod) {
      const ended = ["failed", "cancelled", "done"].includes(shownStatus());
      replace(dod, h("p", { class: "muted", id: "dod-not-checked" }, ended ? "Not checked: the run stopped before its Definition of Done." : "Not checked yet: it is checked once every step is done."));
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

  async function resume() {
    try {
      await api(`${base}/resume`, { method: "POST" });
      replace(message);
      loadState();
      if (feed.stopped || run.ended) startFeed();
    } catch (error) {
      replace(message, errorBox(error));
    }
  }

  async function cancel() {
    confirmingCancel = false;
    schedule();
    try {
      await api(`${base}/cancel`, { method: "POST" });
      refreshState();
    } catch (error) {
      replace(message, errorBox(error));
    }
  }

  // The server's word on the run: at open, after each event that changes what it says,
  // and now and then while it runs (a process that dies records nothing).
  let stateAsked = 0;
  let stateTimer = null;
  async function loadState() {
    const ask = ++stateAsked;
    try {
      const next = await api(`${base}/state`);
      if (ask !== stateAsked) return; // a newer answer is on its way
      const changed = !state || state.version !== next.version;
      state = next;
      // Moved on after its feed ended (retried or resumed from the CLI or another tab):
      // follow it again, so the page never stays on an ending the run has left.
      if (next.version > run.lastVersion && run.ended && root.dataset.feed === "ended") startFeed();
      shownRev = -1;
      if (changed) recheckVerified();
      schedule();
    } catch (error) {
      if (ask === stateAsked && !(error instanceof ApiError && error.status === 404)) replace(message, errorBox(error));
    }
  }
  function refreshState() {
    if (stateTimer) return;
    stateTimer = setTimeout(() => {
      stateTimer = null;
      loadState();
    }, 150);
  }
  const polling = setInterval(loadState, 5000);

  // The hash chain checked again as the run moves on (at most every few seconds): a store
  // changed mid-run turns the header red without a reload.
  let verifiedAt = 0;
  function recheckVerified() {
    const now = Date.now();
    if (now - verifiedAt < 3000) return;
    verifiedAt = now;
    showVerified(verified, base);
  }
  // Whoever asked (the run moving on, "Check again"), the verdict reaches the header.
  const verdictWatch = new MutationObserver(() => {
    const found = verified.querySelector("#verified");
    const now = Boolean(found && found.dataset.verified === "false");
    if (now !== tampered) {
      tampered = now;
      schedule();
    }
  });
  verdictWatch.observe(verified, { childList: true, subtree: true, attributes: true });

  async function retry(fromStep) {
    try {
      await api(`${base}/retry`, { method: "POST", body: fromStep ? { from: fromStep } : {} });
      replace(message);
      loadState();
      if (feed.stopped || run.ended) startFeed();
    } catch (error) {
      replace(message, errorBox(error));
    }
  }

  const refreshAfterEnd = () => {
    loadIssues().catch((error) => replace(issues, errorBox(error)));
    verifiedAt = 0;
    recheckVerified();
  };

  function onEvent(msg) {
    const before = run.lastVersion;
    fold(run, msg);
    if (run.lastVersion === before) return;
    if (eventsPanel.open) eventLog.appendChild(eventRow(run.events[run.events.length - 1]));
    if (SAYS_SOMETHING.has(msg.data.type) && (!state || state.version < run.lastVersion)) refreshState();
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
  loadState();
  showAudit(audit, base);
  refreshAfterEnd();
  schedule();
  offers("/api/runs/{run_id}/retry", "post").then((offered) => {
    canRetry = offered;
    shownRev = -1;
    schedule();
  }, () => {});
  offers("/api/runs/{run_id}/fork", "post").then((offered) => {
    canFork = offered;
    shownRev = -1;
    schedule();
  }, () => {});
  return () => {
    feed.stop();
    clearInterval(polling);
    verdictWatch.disconnect();
    if (frame !== null) cancelAnimationFrame(frame);
  };
}
