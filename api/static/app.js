// The page's entry point: a hash router over the views, and the token form.

import { api, onUnauthorized, setToken, token, Unauthorized } from "./api.js";
import { errorBox, h, replace } from "./dom.js";
import { showAnalytics } from "./analytics.js";
import { showDiff } from "./diff.js";
import { showIssue, showIssues } from "./issues.js";
import { showPlan, showPlans } from "./plans.js";
import { showConference, showConferences } from "./conferences.js";
import { showPipeline, showPipelines } from "./pipelines.js";
import { showRun } from "./run.js";
import { showRuns } from "./runs.js";
import { setConnection } from "./status.js";

const view = document.getElementById("view");
const tokenForm = document.getElementById("token-form");
let current = null; // the shown view's cleanup (it stops its live feeds)
let navigations = 0;

const ROUTES = [
  [/^#?\/?$/, () => showRuns],
  [/^#\/runs\/([^/]+)$/, (m) => (node) => showRun(node, decodeURIComponent(m[1]))],
  [/^#\/diff\/([^/]+)\/([^/]+)$/, (m) => (node) => showDiff(node, decodeURIComponent(m[1]), decodeURIComponent(m[2]))],
  [/^#\/issues$/, () => showIssues],
  [/^#\/issues\/([^/]+)$/, (m) => (node) => showIssue(node, decodeURIComponent(m[1]))],
  [/^#\/plans$/, () => showPlans],
  [/^#\/conferences$/, () => showConferences],
  [/^#\/conferences\/([^/]+)$/, (m) => (node) => showConference(node, decodeURIComponent(m[1]))],
  [/^#\/plans\/([^/]+)$/, (m) => (node) => showPlan(node, decodeURIComponent(m[1]))],
  [/^#\/pipelines$/, () => showPipelines],
  [/^#\/pipelines\/([^/]+)$/, (m) => (node) => showPipeline(node, decodeURIComponent(m[1]))],
  [/^#\/analytics$/, () => (node) => showAnalytics(node, null)],
  [/^#\/analytics\/([^/]+)$/, (m) => (node) => showAnalytics(node, decodeURIComponent(m[1]))],
];

function route() {
  if (current) current();
  current = null;
  setConnection("idle"); // a view with a live feed says so itself: no "live" left behind
  const hash = location.hash || "#/";
  for (const link of document.querySelectorAll("[data-nav]")) {
    const section = ["issues", "plans", "pipelines", "conferences", "analytics"].find((s) => hash.startsWith(`#/${s}`)) || "runs";
    link.classList.toggle("active", link.dataset.nav === section);
  }
  const ticket = ++navigations;
  for (const [pattern, make] of ROUTES) {
    const match = pattern.exec(hash);
    if (match) {
      // Each view gets its own node: one still loading when the user moves on writes
      // into a detached node, and its feeds stop as soon as it hands back its cleanup.
      const node = h("div", { class: "page" });
      replace(view, node);
      Promise.resolve(make(match)(node))
        .then((cleanup) => {
          const stop = typeof cleanup === "function" ? cleanup : null;
          if (ticket === navigations) current = stop;
          else if (stop) stop();
        })
        .catch((error) => {
          if (!(error instanceof Unauthorized)) replace(node, errorBox(error));
        });
      return;
    }
  }
  replace(view, errorBox("No such page."));
}

function askForToken(refusedOne) {
  if (current) current();
  current = null;
  navigations += 1;
  replace(view);
  tokenForm.hidden = false;
  document.getElementById("token-error").hidden = !refusedOne;
  document.getElementById("token-input").focus();
}

onUnauthorized(() => askForToken(Boolean(token())));

tokenForm.addEventListener("submit", async (event) => {
  event.preventDefault();
  const input = document.getElementById("token-input");
  setToken(input.value);
  input.value = "";
  try {
    await api("/api/log/head");
  } catch (error) {
    if (error instanceof Unauthorized) return;
  }
  tokenForm.hidden = true;
  route();
});

// The skip link moves focus to the view; following its `#view` would be read as a route.
document.getElementById("skip-link").addEventListener("click", (event) => {
  event.preventDefault();
  view.focus();
});

window.addEventListener("hashchange", route);
route();
