// Issues: the list, and one issue with its evidence, its full report and the run it came from.

import { api } from "./api.js";
import { badge, h, json, pre, replace, section, when } from "./dom.js";
import { followTypes } from "./live.js";

const ISSUE_EVENTS = ["IssueOpened", "IssueClosed", "IssueAnswered", "IssueReopened", "IssueCommented", "IssueRecurred"];

export async function showIssues(root) {
  let issues = await api("/api/issues");
  const status = h("select", { id: "issue-status", "aria-label": "status" }, ["", "open", "closed"].map((s) => h("option", { value: s }, s || "any status")));
  const tbody = h("tbody");
  function render() {
    const shown = issues.filter((i) => !status.value || i.status === status.value);
    tbody.replaceChildren(
      ...shown.map((i) =>
        h(
          "tr",
          { dataset: { issueId: i.issue_id } },
          h("td", {}, badge(i.status)),
          h("td", {}, h("a", { href: `#/issues/${encodeURIComponent(i.issue_id)}` }, i.title)),
          h("td", {}, i.kind),
          h("td", {}, i.run_id ? h("a", { href: `#/runs/${encodeURIComponent(i.run_id)}` }, i.run_id) : ""),
          h("td", {}, when(i.opened_at)),
        ),
      ),
    );
  }
  status.addEventListener("change", render);
  replace(
    root,
    h("h1", {}, "Issues"),
    h("div", { class: "filters" }, status),
    h("table", { class: "issues", id: "issues" }, h("thead", {}, h("tr", {}, ["status", "title", "kind", "run", "opened"].map((c) => h("th", {}, c)))), tbody),
  );
  render();
  const feed = await followTypes(ISSUE_EVENTS, async () => {
    issues = await api("/api/issues");
    render();
  });
  return () => feed.stop();
}

export async function showIssue(root, issueId) {
  const base = `/api/issues/${encodeURIComponent(issueId)}`;
  let issue = await api(base);
  const message = h("p", { class: "error", hidden: true });

  async function act(path, body) {
    message.hidden = true;
    try {
      issue = await api(`${base}/${path}`, { method: "POST", body });
      render();
    } catch (error) {
      message.textContent = error.message;
      message.hidden = false;
    }
  }

  function lifecycle() {
    const text = h("input", { type: "text", id: "issue-note", "aria-label": "reason or comment", placeholder: "a reason, or a comment" });
    const closing = issue.status === "open";
    return h(
      "div",
      { class: "actions" },
      text,
      h("button", { type: "button", id: "issue-comment", onclick: () => act("comments", { text: text.value }) }, "Comment"),
      h("button", { type: "button", id: closing ? "issue-close" : "issue-reopen", class: closing ? "danger" : "", onclick: () => act(closing ? "close" : "reopen", { reason: text.value }) }, closing ? "Close" : "Reopen"),
      message,
    );
  }

  // A needs_human issue: the run waits for this answer (its escalation ladder is spent).
  function answerForm() {
    if (issue.kind !== "needs_human" || issue.status !== "open") return null;
    const resolution = h("textarea", { id: "issue-resolution", rows: 4, "aria-label": "resolution", placeholder: "what the step should do: the step runs again with this in its prompt" });
    const model = h("input", { type: "text", id: "issue-model", "aria-label": "model", placeholder: "provider:model (optional: else the ladder's strongest)" });
    const send = () => {
      const body = { resolution: resolution.value };
      if (model.value.trim()) body.model = model.value.trim();
      return act("answer", body);
    };
    return section(
      "Answer (the run waits for it)",
      h("div", { class: "actions answer" }, resolution, model, h("button", { type: "button", id: "issue-answer", onclick: send }, "Answer and continue the run")),
    );
  }

  function trailRow(entry) {
    const report = h("div", { class: "report" });
    const open = entry.has_report
      ? h("button", { type: "button", class: "small open-report", onclick: async () => {
          const body = await api(`${base}/reports/${encodeURIComponent(entry.receipt_id)}`);
          replace(report, pre(body.report));
        } }, "Open attached report")
      : null;
    return h(
      "tr",
      { dataset: { kind: entry.kind } },
      h("td", {}, when(entry.at)),
      h("td", {}, entry.kind),
      h("td", {}, entry.step_id || ""),
      h("td", {}, entry.actor || ""),
      h("td", {}, entry.excerpt || entry.summary || "", open ? [" ", open] : null, report),
    );
  }

  function render() {
    replace(
      root,
      h("h1", {}, issue.title, " ", badge(issue.status)),
      h(
        "dl",
        { class: "facts" },
        h("dt", {}, "issue"),
        h("dd", {}, issue.issue_id),
        h("dt", {}, "kind"),
        h("dd", {}, issue.kind),
        h("dt", {}, "opened"),
        h("dd", {}, when(issue.opened_at)),
        h("dt", {}, "runs"),
        h("dd", {}, (issue.runs.length ? issue.runs : [issue.run_id]).filter(Boolean).map((r, i) => [i ? ", " : "", h("a", { href: `#/runs/${encodeURIComponent(r)}` }, r)])),
        h("dt", {}, "recipe"),
        h("dd", {}, issue.recipe_id || "–"),
        issue.resolution ? [h("dt", {}, "resolution"), h("dd", {}, `${issue.resolution} (${when(issue.closed_at)})`)] : null,
      ),
      answerForm(),
      lifecycle(),
      section("Report", pre(issue.detail, { id: "issue-detail" })),
      issue.check ? section("Check", pre(json(issue.check))) : null,
      issue.evidence !== null && issue.evidence !== undefined ? section("Evidence", pre(json(issue.evidence), { id: "issue-evidence" })) : null,
      issue.trail.length
        ? section("Audit trail", h("table", { class: "trail", id: "issue-trail" }, h("thead", {}, h("tr", {}, ["at", "kind", "step", "actor", "summary"].map((c) => h("th", {}, c)))), h("tbody", {}, issue.trail.map(trailRow))))
        : null,
      issue.history.length
        ? section("History", h("ul", { id: "issue-history" }, issue.history.map((e) => h("li", {}, `${when(e.at)} ${e.event} by ${e.by}: ${e.text}`))))
        : null,
    );
  }
  render();
}
