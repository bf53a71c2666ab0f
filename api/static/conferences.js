// Conference rounds: start one, and read a round's transcript — the evidence the Chief
// gathered (receipts, refused calls) and every role's reply, accepted, abstained or
// rejected with its reason. The list is live, as the issues' and the plans' are: a round
// opened, answered or closed elsewhere (the CLI, another tab) shows without a reload.

import { api, Feed } from "./api.js";
import { badge, h, pre, replace, section, throttle, when } from "./dom.js";
import { followTypes } from "./live.js";
import { setConnection } from "./status.js";

// The events that change a round's row: its opening, its replies' fates, its end.
const ROUND_EVENTS = ["RoundOpened", "ReplyAccepted", "ReplyRejected", "RepliesCollected", "RoundClosed", "RoundFailed"];

export async function showConferences(root) {
  let rounds = await api("/api/conferences");
  const question = h("input", { id: "round-question", type: "text", "aria-label": "question", placeholder: "Ask the studio, e.g. Is Kael consistent with his canon card?" });
  const roles = h("input", { id: "round-roles", type: "text", "aria-label": "roles", value: "continuity,critic,planner,writer,editor" });
  const tools = h("input", { id: "round-tools", type: "text", "aria-label": "allowed tools", placeholder: "allowed tools (empty: all)" });
  const requireTool = h("input", { id: "round-require-tool", type: "checkbox" });
  const failure = h("p", { class: "error", hidden: true });
  const names = (text) => text.split(",").map((s) => s.trim()).filter(Boolean);
  async function start(event) {
    event.preventDefault();
    failure.hidden = true;
    const button = event.target.querySelector("button");
    button.disabled = true;
    try {
      const round = await api("/api/conferences", {
        method: "POST",
        body: { question: question.value, roles: names(roles.value), allowed_tools: names(tools.value), require_tool: requireTool.checked },
      });
      location.hash = `#/conferences/${encodeURIComponent(round.round_id)}`;
    } catch (error) {
      failure.textContent = error.message;
      failure.hidden = false;
    } finally {
      button.disabled = false;
    }
  }
  const rows = h("tbody");
  function renderRows() {
    replace(
      rows,
      rounds.map((r) =>
        h(
          "tr",
          { dataset: { roundId: r.round_id, status: r.status } },
          h("td", {}, badge(r.status)),
          h("td", {}, h("a", { href: `#/conferences/${encodeURIComponent(r.round_id)}` }, r.question)),
          h("td", {}, `${r.accepted} accepted, ${r.abstained} abstained, ${r.rejected} rejected`),
          h("td", {}, when(r.opened_at)),
        ),
      ),
    );
  }
  replace(
    root,
    h("h1", {}, "Conference rounds"),
    h("form", { class: "filters", id: "new-round", onsubmit: start }, question, roles, tools, h("label", {}, requireTool, " require a tool"), h("button", { type: "submit" }, "Ask"), failure),
    h("table", { id: "rounds" }, h("thead", {}, h("tr", {}, ["status", "question", "replies", "opened"].map((c) => h("th", {}, c)))), rows),
  );
  renderRows();
  const feed = await followTypes(ROUND_EVENTS, async () => {
    rounds = await api("/api/conferences");
    renderRows();
  });
  return () => feed.stop();
}

export async function showConference(root, roundId) {
  const base = `/api/conferences/${encodeURIComponent(roundId)}`;
  let round = await api(base);
  const body = h("div");
  function reply(r) {
    return h(
      "div",
      { class: `reply reply-${r.status}`, dataset: { role: r.role, status: r.status } },
      h("div", { class: "task-head" }, badge(r.status), " ", h("strong", {}, r.role), r.calls.length > 1 ? h("span", { class: "muted" }, ` (${r.calls.map((c) => c.micro_step).join(" → ")})`) : null),
      r.text ? pre(r.text) : null,
      r.reason ? h("div", { class: "error reason" }, `rejected: ${r.reason}`) : null,
    );
  }
  function render() {
    replace(
      body,
      h("h1", {}, "Conference ", badge(round.status)),
      h("p", { class: "intent" }, round.question),
      round.issue_id ? h("p", {}, "Transcript saved as ", h("a", { href: `#/issues/${encodeURIComponent(round.issue_id)}` }, round.issue_id)) : null,
      round.error ? h("p", { class: "error" }, round.error) : null,
      section(
        "Evidence",
        h("ul", { id: "round-receipts" }, round.receipts.map((r) => h("li", {}, h("code", {}, r.receipt_id), ` ${r.tool}: ${r.summary.split("\n")[0]}`))),
        round.refused.length ? h("ul", { id: "round-refused" }, round.refused.map((r) => h("li", { class: "error" }, `refused ${r.tool}: ${r.reason}`))) : null,
      ),
      section("Replies", h("div", { id: "round-replies" }, round.replies.map(reply))),
    );
  }
  replace(root, body);
  render();
  const refresh = throttle(async () => {
    round = await api(base);
    render();
  }, 150);
  const feed = new Feed(`${base}/events`, { onEvent: () => refresh(), onState: setConnection, isDone: () => round.status === "closed" || round.status === "failed" }).start();
  return () => feed.stop();
}
