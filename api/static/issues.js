// Issues: the list, and one issue with its evidence, its full report and the run it came from.

import { api } from "./api.js";
import { badge, h, json, pre, replace, section, when } from "./dom.js";

export async function showIssues(root) {
  const issues = await api("/api/issues");
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
}

export async function showIssue(root, issueId) {
  const issue = await api(`/api/issues/${encodeURIComponent(issueId)}`);
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
      h("dt", {}, "run"),
      h("dd", {}, issue.run_id ? h("a", { href: `#/runs/${encodeURIComponent(issue.run_id)}` }, issue.run_id) : "–"),
      h("dt", {}, "recipe"),
      h("dd", {}, issue.recipe_id || "–"),
      issue.resolution ? [h("dt", {}, "resolution"), h("dd", {}, `${issue.resolution} (${when(issue.closed_at)})`)] : null,
    ),
    section("Report", pre(issue.detail, { id: "issue-detail" })),
    issue.check ? section("Check", pre(json(issue.check))) : null,
    issue.evidence !== null && issue.evidence !== undefined ? section("Evidence", pre(json(issue.evidence), { id: "issue-evidence" })) : null,
  );
}
