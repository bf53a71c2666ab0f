// Session plans: the list, and one plan as a graph of its tasks (dependency levels, each
// task with its state, including tasks not yet run), live over the plan's feed, with the
// user's controls (approve, start, pause, resume, answer a scoping question, force-start).

import { api, Feed } from "./api.js";
import { badge, errorBox, h, replace, section, throttle, when } from "./dom.js";
import { followTypes } from "./live.js";
import { setConnection } from "./status.js";

const PLAN_EVENTS = ["PlanCreated", "PlanApproved", "PlanStarted", "PlanPaused", "PlanResumed", "PlanFinished", "TaskRunRequested", "TaskFinished", "TaskRemoved", "TasksReordered"];

export async function showPlans(root) {
  let plans = await api("/api/plans");
  const rows = h("tbody", {});
  function renderRows() {
    replace(
      rows,
      plans.map((p) =>
        h(
          "tr",
          { dataset: { planId: p.plan_id } },
          h("td", {}, badge(p.status)),
          h("td", {}, h("a", { href: `#/plans/${encodeURIComponent(p.plan_id)}` }, p.intent)),
          h("td", {}, `${p.done}/${p.tasks} done${p.needs_scoping ? `, ${p.needs_scoping} to scope` : ""}`),
          h("td", {}, when(p.created_at)),
        ),
      ),
    );
  }
  const intent = h("input", { id: "plan-intent", type: "text", placeholder: "What do you want done? e.g. Write scene 4, then check consistency of scenes 3-4", "aria-label": "intent" });
  const failure = h("p", { class: "error", hidden: true });
  async function create(event) {
    event.preventDefault();
    failure.hidden = true;
    try {
      const plan = await api("/api/plans", { method: "POST", body: { intent: intent.value } });
      location.hash = `#/plans/${encodeURIComponent(plan.plan_id)}`;
    } catch (error) {
      failure.textContent = error.message;
      failure.hidden = false;
    }
  }
  replace(
    root,
    h("h1", {}, "Session plans"),
    h("form", { class: "filters", id: "new-plan", onsubmit: create }, intent, h("button", { type: "submit" }, "Ask the Chief for a plan"), failure),
    h(
      "table",
      { class: "plans", id: "plans" },
      h("thead", {}, h("tr", {}, ["status", "intent", "tasks", "created"].map((c) => h("th", {}, c)))),
      rows,
    ),
  );
  renderRows();
  const feed = await followTypes(PLAN_EVENTS, async () => {
    plans = await api("/api/plans");
    renderRows();
  });
  return () => feed.stop();
}

export async function showPlan(root, planId) {
  const base = `/api/plans/${encodeURIComponent(planId)}`;
  let plan = await api(base);
  const body = h("div");
  const message = h("p", { class: "error", hidden: true });

  async function control(action, payload) {
    message.hidden = true;
    try {
      plan = await api(`${base}/${action}`, { method: "POST", body: payload });
      render();
    } catch (error) {
      message.textContent = error.message;
      message.hidden = false;
    }
  }

  function actions() {
    const buttons = [];
    const button = (id, label, action) => buttons.push(h("button", { type: "button", id, onclick: () => control(action) }, label));
    if (plan.status === "draft") button("plan-approve", "Approve", "approve");
    if (plan.status === "approved") button("plan-start", "Start", "start");
    if (plan.status === "running") button("plan-pause", "Pause", "pause");
    if (plan.status === "paused") button("plan-resume", "Resume", "resume");
    return h("div", { class: "actions" }, buttons);
  }

  function taskCard(task) {
    const parts = [
      h("div", { class: "task-head" }, badge(task.state), " ", h("strong", {}, `${task.task_id}. ${task.description}`)),
      h("div", { class: "muted" }, task.recipe_id || "not routed", task.deps.length ? ` · after ${task.deps.join(", ")}` : "", task.forced ? " · force-started" : ""),
    ];
    if (task.dod) parts.push(h("div", { class: "muted" }, `DoD: ${task.dod}`));
    if (task.run_id) parts.push(h("div", {}, h("a", { href: `#/runs/${encodeURIComponent(task.run_id)}` }, task.run_id), task.run_status ? ` (${task.run_status})` : ""));
    if (task.review) parts.push(h("div", { class: "review" }, `Chief: ${task.review.decision} — ${task.review.notes}`));
    if (task.state === "failed" && task.outcome_detail) parts.push(h("div", { class: "error" }, task.outcome_detail));
    if (task.scoping_question) {
      const answer = h("input", { type: "text", class: "answer", "aria-label": `answer to task ${task.task_id}`, placeholder: task.choices.length ? "a choice's number, or words" : "your answer" });
      parts.push(
        h("div", { class: "question" }, task.scoping_question),
        task.choices.length ? h("ol", { class: "choices" }, task.choices.map((c) => h("li", {}, c))) : null,
        h(
          "form",
          { class: "answer-form", dataset: { taskId: String(task.task_id) }, onsubmit: (e) => { e.preventDefault(); control("answer", { task_id: task.task_id, answer: answer.value }); } },
          answer,
          h("button", { type: "submit" }, "Answer"),
        ),
      );
    }
    if (task.state === "blocked" && (plan.status === "running" || plan.status === "paused")) {
      parts.push(h("button", { type: "button", class: "small danger force-start", onclick: () => control("force-start", { task_id: task.task_id }) }, "Force-start (at your risk)"));
    }
    return h("div", { class: `task task-${task.state}`, dataset: { taskId: String(task.task_id), state: task.state } }, parts);
  }

  function levels() {
    // A task's column is one past the deepest task it needs: the graph reads left to right.
    const depth = new Map();
    const byId = new Map(plan.tasks.map((t) => [t.task_id, t]));
    const level = (task) => {
      if (depth.has(task.task_id)) return depth.get(task.task_id);
      depth.set(task.task_id, 0);
      const value = task.deps.reduce((most, dep) => (byId.has(dep) ? Math.max(most, level(byId.get(dep)) + 1) : most), 0);
      depth.set(task.task_id, value);
      return value;
    };
    const columns = [];
    for (const task of plan.tasks) {
      const at = level(task);
      (columns[at] ||= []).push(task);
    }
    return columns;
  }

  // What the user is typing into an answer, and where the cursor is.
  function typedAnswers() {
    const typed = new Map();
    for (const form of body.querySelectorAll(".answer-form")) {
      const input = form.querySelector("input");
      if (input && (input.value || document.activeElement === input)) {
        typed.set(form.dataset.taskId, { value: input.value, focused: document.activeElement === input });
      }
    }
    return typed;
  }

  function render() {
    // Every live update re-renders the plan: an answer being typed must survive it (a Chief
    // review arriving mid-sentence wiped the field, and the answer sent was empty).
    const typed = typedAnswers();
    replace(
      body,
      h("h1", {}, "Plan ", badge(plan.status)),
      h("p", { class: "intent" }, plan.intent),
      h("dl", { class: "facts" }, h("dt", {}, "plan"), h("dd", {}, plan.plan_id), h("dt", {}, "created"), h("dd", {}, when(plan.created_at)), plan.summary ? [h("dt", {}, "outcome"), h("dd", {}, plan.summary)] : null),
      actions(),
      message,
      section("Tasks", h("div", { class: "plan-graph", id: "plan-graph" }, levels().map((column) => h("div", { class: "plan-column" }, column.map(taskCard))))),
    );
    for (const form of body.querySelectorAll(".answer-form")) {
      const kept = typed.get(form.dataset.taskId);
      const input = form.querySelector("input");
      if (kept && input) {
        input.value = kept.value;
        if (kept.focused) input.focus();
      }
    }
  }

  replace(root, body);
  render();
  const refresh = throttle(async () => {
    try {
      plan = await api(base);
      render();
    } catch (error) {
      replace(body, errorBox(error));
    }
  }, 150);
  const feed = new Feed(`${base}/events`, {
    onEvent: () => refresh(),
    onState: setConnection,
    isDone: () => plan.status === "done" || plan.status === "failed",
  }).start();
  return () => feed.stop();
}
