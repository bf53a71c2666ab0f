// The runs list: live over the global feed, filtered by status and recipe, searched by task
// text, newest first in a stable order; and the form that starts a run.

import { api, Feed } from "./api.js";
import { badge, duration, errorBox, h, replace, throttle, when } from "./dom.js";
import { setConnection } from "./status.js";

// How many of the newest runs the list holds (the server's page limit is 1000).
const RUNS_HELD = 1000;

const STATUSES = ["pending", "running", "done", "failed", "cancelled", "damaged"];
//: The events that change a run's row; every other event leaves the list as it is.
const LIST_EVENTS = "RunStarted,RunClaimed,RunReleased,RunCompleted,RunFailed,RunCancelled,RunResumed,RunRetried";

export async function showRuns(root) {
  const state = { runs: [], recipes: [], filter: { status: "", recipe: "", text: "", from: "", to: "" }, sort: "newest", page: 0 };
  const said = new Map(); // run id -> the server's word on it (GET /api/run-states): shown rows only
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
  const sortSelect = h(
    "select",
    { id: "sort-runs", "aria-label": "sort" },
    [["newest", "newest first"], ["oldest", "oldest first"], ["longest", "longest first"], ["status", "by status"]].map(([v, label]) => h("option", { value: v }, label)),
  );
  const from = h("input", { id: "filter-from", type: "date", "aria-label": "started on or after" });
  const to = h("input", { id: "filter-to", type: "date", "aria-label": "started on or before" });
  const previous = h("button", { type: "button", class: "small", id: "page-prev" }, "‹ newer");
  const next = h("button", { type: "button", class: "small", id: "page-next" }, "older ›");
  const pageLabel = h("span", { class: "muted", id: "page-label", "aria-live": "polite" });

  const startForm = startRunForm(state, message);
  replace(
    root,
    h("h1", {}, "Runs"),
    startForm,
    h("div", { class: "filters" }, statusSelect, recipeSelect, search, sortSelect, h("label", {}, "from ", from), h("label", {}, "to ", to), count),
    message,
    h(
      "table",
      { class: "runs", id: "runs" },
      h("thead", {}, h("tr", {}, ["status", "run", "recipe", "task", "step", "cost", "started", "took", "actions"].map((c) => h("th", { scope: "col" }, c)))),
      tbody,
    ),
    h("div", { class: "filters pager" }, previous, pageLabel, next),
  );

  function render(withSaid = true) {
    const started = performance.now();
    const { status, recipe, text } = state.filter;
    const needle = text.trim().toLowerCase();
    // Dates are the user's calendar days, compared as UTC instants of their bounds.
    const after = state.filter.from ? Date.parse(`${state.filter.from}T00:00:00`) : null;
    const before = state.filter.to ? Date.parse(`${state.filter.to}T23:59:59.999`) : null;
    const shown = state.runs.filter(
      (r) =>
        (!status || r.status === status) &&
        (!recipe || r.recipe_id === recipe) &&
        (!needle || r.description.toLowerCase().includes(needle) || r.run_id.includes(needle)) &&
        (after === null || Date.parse(r.created_at) >= after) &&
        (before === null || Date.parse(r.created_at) <= before),
    );
    sortRuns(shown, state.sort);
    const pages = Math.max(1, Math.ceil(shown.length / PAGE_SIZE));
    state.page = Math.min(state.page, pages - 1);
    const page = shown.slice(state.page * PAGE_SIZE, (state.page + 1) * PAGE_SIZE);
    const rows = document.createDocumentFragment();
    for (const run of page) rows.appendChild(cachedRow(run));
    tbody.replaceChildren(rows);
    // The list holds the newest RUNS_HELD runs (GET /api/runs?limit=): a store of 100k runs
    // is not sent to the page on every event; the count says when older ones are left out.
    count.textContent = `${shown.length} of ${state.runs.length}${state.runs.length >= RUNS_HELD ? " (the newest; older runs: controlroom runs --before)" : ""}`;
    pageLabel.textContent = `page ${state.page + 1} of ${pages} (${PAGE_SIZE} a page)`;
    previous.disabled = state.page === 0;
    next.disabled = state.page >= pages - 1;
    root.dataset.renderMs = String(Math.round(performance.now() - started));
    if (withSaid) loadSaid(page);
  }

  // The shown page's steps, costs and true states, in one read; rows redraw when it lands.
  let saidAsked = 0;
  async function loadSaid(page) {
    const ids = page.filter((r) => !said.has(r.run_id) || !["done", "failed", "cancelled"].includes(r.status) || said.get(r.run_id).status !== r.status).map((r) => r.run_id);
    if (!ids.length) return;
    const ask = ++saidAsked;
    try {
      const states = await api(`/api/run-states?ids=${ids.map(encodeURIComponent).join(",")}`);
      for (const one of states) said.set(one.run_id, one);
      if (ask === saidAsked) render(false); // drawn with what it said; not asked again
    } catch (error) {
      replace(message, errorBox(error));
    }
  }

  const PAGE_SIZE = 50;

  const built = new Map(); // run id -> {key, node}: a row is rebuilt only when its run changes
  function cachedRow(run) {
    const key = JSON.stringify([run, said.get(run.run_id) || null]);
    const found = built.get(run.run_id);
    if (found && found.key === key) return found.node;
    const node = row(run);
    built.set(run.run_id, { key, node });
    return node;
  }

  function row(run) {
    const actions = [];
    const word = said.get(run.run_id);
    const shownStatus = word && word.status === run.status ? word.shown : run.status;
    const kind = word && word.failure_kind ? { dod: "DoD failed", step: "a step failed", run: "" }[word.failure_kind] : "";
    if (run.status === "running" || run.status === "pending") {
      actions.push(
        h("button", { class: "small danger", type: "button", dataset: { action: "cancel" }, onclick: () => cancel(run.run_id) }, "Cancel"),
      );
    }
    return h(
      "tr",
      { dataset: { runId: run.run_id, status: run.status } },
      h("td", {}, badge(shownStatus), kind ? h("div", { class: "muted failure-kind" }, kind) : null),
      h("td", {}, h("a", { href: `#/runs/${encodeURIComponent(run.run_id)}` }, run.run_id)),
      h("td", {}, run.recipe_id),
      h("td", { class: "task" }, run.description, run.damage ? h("div", { class: "error" }, run.damage) : null),
      h("td", { class: "step" }, word ? `${word.steps_done}/${word.total_steps}${word.current_step ? ` ${word.current_step}` : ""}` : ""),
      h("td", { class: "cost" }, word ? `${word.cost_usd === null ? "" : `$${word.cost_usd.toFixed(4)} · `}${word.input_tokens + word.output_tokens} tok` : ""),
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
    const runs = await api(`/api/runs?limit=${RUNS_HELD}`);
    runs.sort((a, b) => (a.created_at < b.created_at ? 1 : a.created_at > b.created_at ? -1 : a.run_id < b.run_id ? 1 : -1));
    state.runs = runs;
    render();
  }
  const refreshSoon = throttle(() => refresh().catch((error) => replace(message, errorBox(error))), 250);

  statusSelect.addEventListener("change", () => {
    state.filter.status = statusSelect.value;
    state.page = 0;
    render();
  });
  recipeSelect.addEventListener("change", () => {
    state.filter.recipe = recipeSelect.value;
    state.page = 0;
    render();
  });
  search.addEventListener("input", () => {
    state.filter.text = search.value;
    state.page = 0;
    render();
  });
  sortSelect.addEventListener("change", () => {
    state.sort = sortSelect.value;
    render();
  });
  for (const [input, key] of [[from, "from"], [to, "to"]]) {
    input.addEventListener("change", () => {
      state.filter[key] = input.value;
      state.page = 0;
      render();
    });
  }
  previous.addEventListener("click", () => {
    state.page -= 1;
    render();
  });
  next.addEventListener("click", () => {
    state.page += 1;
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

// The CLI's rule for `--arg KEY=VALUE` (api/cli_common.py): a value that parses as JSON is
// sent as that JSON (`9` a number, `[1,2]` a list), any other text as a string.
export function typed(value) {
  try {
    return JSON.parse(value);
  } catch {
    return value;
  }
}

function took(run) {
  return (run.completed_at ? Date.parse(run.completed_at) : Date.now()) - Date.parse(run.created_at);
}

function sortRuns(runs, order) {
  const newest = (a, b) => (a.created_at < b.created_at ? 1 : a.created_at > b.created_at ? -1 : a.run_id < b.run_id ? 1 : -1);
  if (order === "oldest") runs.sort((a, b) => newest(b, a));
  else if (order === "longest") runs.sort((a, b) => took(b) - took(a) || newest(a, b));
  else if (order === "status") runs.sort((a, b) => a.status.localeCompare(b.status) || newest(a, b));
  else runs.sort(newest);
}

function startRunForm(state, message) {
  const recipe = h("select", { id: "start-recipe", "aria-label": "recipe to start" }, h("option", { value: "" }, "route a task…"));
  const task = h("input", { id: "start-task", type: "text", placeholder: "describe the task (for the router), or leave empty with a recipe", size: 48 });
  const args = h("div", { class: "args", id: "start-args" });
  const extra = h("textarea", { id: "start-extra", rows: 2, placeholder: "more args, one key=value a line (optional)", "aria-label": "more args" });
  const preview = h("pre", { id: "start-args-preview", "aria-live": "polite" });
  const form = h(
    "form",
    { class: "start", id: "start-form" },
    h("h2", {}, "Start a run"),
    h("div", { class: "row" }, recipe, task),
    args,
    extra,
    h("div", {}, h("span", { class: "muted" }, "Args it will send (a value that reads as JSON — 9, true, [1,2] — is sent as that, as `controlroom run --arg` does):"), preview),
    h("button", { type: "submit", id: "start-button" }, "Start"),
  );

  function showArgs() {
    const chosen = state.recipes.find((r) => r.recipe_id === recipe.value);
    replace(
      args,
      (chosen ? chosen.required_args : []).map((name) =>
        h("label", {}, `${name} `, h("input", { name, required: true, dataset: { arg: name }, oninput: showPreview })),
      ),
    );
    showPreview();
  }

  function argsToSend() {
    const sent = {};
    for (const input of args.querySelectorAll("input[data-arg]")) sent[input.dataset.arg] = typed(input.value);
    for (const line of extra.value.split("\n")) {
      const at = line.indexOf("=");
      if (at > 0) sent[line.slice(0, at).trim()] = typed(line.slice(at + 1).trim());
    }
    return sent;
  }

  function showPreview() {
    preview.textContent = recipe.value ? JSON.stringify(argsToSend()) : "(the router chooses the recipe; no args)";
  }
  extra.addEventListener("input", showPreview);

  form.addEventListener("recipes", () => {
    for (const r of state.recipes) recipe.appendChild(h("option", { value: r.recipe_id }, `${r.recipe_id} — ${r.label}`));
  });
  recipe.addEventListener("change", showArgs);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const body = {};
    if (recipe.value) {
      body.recipe_id = recipe.value;
      body.args = argsToSend();
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
