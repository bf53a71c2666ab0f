// The runs list: live over the global feed, filtered by status and recipe, searched by task
// text, newest first in a stable order; and the form that starts a run.

import { api, Feed } from "./api.js";
import { badge, duration, errorBox, h, replace, throttle, when } from "./dom.js";
import { setConnection } from "./status.js";

const STATUSES = ["pending", "running", "done", "failed", "cancelled", "damaged"];
//: The events that change a run's row; every other event leaves the list as it is.
const LIST_EVENTS = "RunStarted,RunClaimed,RunReleased,RunCompleted,RunFailed,RunCancelled,RunResumed,RunRetried";

export async function showRuns(root) {
  const state = { runs: [], recipes: [], filter: { status: "", recipe: "", text: "" } };
  const tbody = h("tbody");
  const count = h("span", { class: "muted", id: "run-count" });
  const statusSelect = h(
    "select",
    { id: "filter-status", "aria-label": "status" },
    h("option", { value: "" }, "any status"),
    STATUSES.map((s) => h("option", { value: s }, s)),
  );
  const recipeSelect = h("select", { id: "filter-recipe", "aria-label": "recipe" }, h("option", { value: "" }, "any recipe"));
  const search = h("input", { id: "filter-text", type: "search", placeholder: "search task text", "aria-label": "search" });
  const message = h("div", { id: "runs-message" });

  const startForm = startRunForm(state, message);
  replace(
    root,
    h("h1", {}, "Runs"),
    startForm,
    h("div", { class: "filters" }, statusSelect, recipeSelect, search, count),
    message,
    h(
      "table",
      { class: "runs", id: "runs" },
      h("thead", {}, h("tr", {}, ["status", "run", "recipe", "task", "started", "took", ""].map((c) => h("th", {}, c)))),
      tbody,
    ),
  );

  function render() {
    const started = performance.now();
    const { status, recipe, text } = state.filter;
    const needle = text.trim().toLowerCase();
    const shown = state.runs.filter(
      (r) =>
        (!status || r.status === status) &&
        (!recipe || r.recipe_id === recipe) &&
        (!needle || r.description.toLowerCase().includes(needle) || r.run_id.includes(needle)),
    );
    // The first rows (more than a screen) go in at once; the rest follow a chunk per frame,
    // so a filter that shows a thousand runs again answers at once instead of laying out
    // the whole table before the next frame. A newer render abandons an older one's rest.
    const token = ++renderToken;
    tbody.replaceChildren(rowsOf(shown, 0, FIRST_ROWS));
    if (shown.length > FIRST_ROWS) appendRest(shown, FIRST_ROWS, token);
    count.textContent = `${shown.length} of ${state.runs.length}`;
    root.dataset.renderMs = String(Math.round(performance.now() - started));
  }

  const FIRST_ROWS = 120;
  const CHUNK_ROWS = 200;
  let renderToken = 0;
  function rowsOf(shown, from, to) {
    const rows = document.createDocumentFragment();
    for (const run of shown.slice(from, to)) rows.appendChild(cachedRow(run));
    return rows;
  }
  function appendRest(shown, from, token) {
    requestAnimationFrame(() => {
      if (token !== renderToken) return;
      tbody.appendChild(rowsOf(shown, from, from + CHUNK_ROWS));
      if (from + CHUNK_ROWS < shown.length) appendRest(shown, from + CHUNK_ROWS, token);
    });
  }

  const built = new Map(); // run id -> {key, node}: a row is rebuilt only when its run changes
  function cachedRow(run) {
    const key = JSON.stringify(run);
    const found = built.get(run.run_id);
    if (found && found.key === key) return found.node;
    const node = row(run);
    built.set(run.run_id, { key, node });
    return node;
  }

  function row(run) {
    const actions = [];
    if (run.status === "running" || run.status === "pending") {
      actions.push(
        h("button", { class: "small danger", type: "button", dataset: { action: "cancel" }, onclick: () => cancel(run.run_id) }, "Cancel"),
      );
    }
    return h(
      "tr",
      { dataset: { runId: run.run_id, status: run.status } },
      h("td", {}, badge(run.status)),
      h("td", {}, h("a", { href: `#/runs/${encodeURIComponent(run.run_id)}` }, run.run_id)),
      h("td", {}, run.recipe_id),
      h("td", { class: "task" }, run.description, run.damage ? h("div", { class: "error" }, run.damage) : null),
      h("td", {}, when(run.created_at)),
      h("td", {}, duration(run.created_at, run.completed_at)),
      h("td", {}, actions),
    );
  }

  async function cancel(runId) {
    try {
      await api(`/api/runs/${encodeURIComponent(runId)}/cancel`, { method: "POST" });
      await refresh();
    } catch (error) {
      replace(message, errorBox(error));
    }
  }

  // A new run can appear between our read and the feed's first event: read the head first,
  // then the list, then follow from the head (an event both saw only refreshes twice).
  async function refresh() {
    const runs = await api("/api/runs");
    runs.sort((a, b) => (a.created_at < b.created_at ? 1 : a.created_at > b.created_at ? -1 : a.run_id < b.run_id ? 1 : -1));
    state.runs = runs;
    render();
  }
  const refreshSoon = throttle(() => refresh().catch((error) => replace(message, errorBox(error))), 250);

  statusSelect.addEventListener("change", () => {
    state.filter.status = statusSelect.value;
    render();
  });
  recipeSelect.addEventListener("change", () => {
    state.filter.recipe = recipeSelect.value;
    render();
  });
  search.addEventListener("input", () => {
    state.filter.text = search.value;
    render();
  });

  const head = await api("/api/log/head");
  state.recipes = await api("/api/recipes");
  for (const recipe of state.recipes) recipeSelect.appendChild(h("option", { value: recipe.recipe_id }, recipe.recipe_id));
  startForm.dispatchEvent(new Event("recipes"));
  await refresh();
  const feed = new Feed(`/api/events?type=${LIST_EVENTS}`, {
    after: head.position,
    onEvent: refreshSoon,
    onState: setConnection,
  }).start();
  return () => feed.stop();
}

function startRunForm(state, message) {
  const recipe = h("select", { id: "start-recipe", "aria-label": "recipe to start" }, h("option", { value: "" }, "route a task…"));
  const task = h("input", { id: "start-task", type: "text", placeholder: "describe the task (for the router), or leave empty with a recipe", size: 48 });
  const args = h("div", { class: "args", id: "start-args" });
  const extra = h("textarea", { id: "start-extra", rows: 2, placeholder: "more args, one key=value a line (optional)" });
  const form = h(
    "form",
    { class: "start", id: "start-form" },
    h("h2", {}, "Start a run"),
    h("div", { class: "row" }, recipe, task),
    args,
    extra,
    h("button", { type: "submit", id: "start-button" }, "Start"),
  );

  function showArgs() {
    const chosen = state.recipes.find((r) => r.recipe_id === recipe.value);
    replace(
      args,
      (chosen ? chosen.required_args : []).map((name) =>
        h("label", {}, `${name} `, h("input", { name, required: true, dataset: { arg: name } })),
      ),
    );
  }

  form.addEventListener("recipes", () => {
    for (const r of state.recipes) recipe.appendChild(h("option", { value: r.recipe_id }, `${r.recipe_id} — ${r.label}`));
  });
  recipe.addEventListener("change", showArgs);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const body = {};
    if (recipe.value) {
      body.recipe_id = recipe.value;
      body.args = {};
      for (const input of args.querySelectorAll("input[data-arg]")) body.args[input.dataset.arg] = input.value;
      for (const line of extra.value.split("\n")) {
        const at = line.indexOf("=");
        if (at > 0) body.args[line.slice(0, at).trim()] = line.slice(at + 1).trim();
      }
      if (task.value.trim()) body.task = task.value.trim();
    } else {
      body.task = task.value.trim();
    }
    try {
      const started = await api("/api/runs", { method: "POST", body });
      location.hash = `#/runs/${encodeURIComponent(started.run_id)}`;
    } catch (error) {
      replace(message, errorBox(error));
    }
  });
  return form;
}
