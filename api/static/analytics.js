// The built-in analytics reports (DuckDB over the whole history, or a time range of it):
// each as a table and, when it has a label column, as a bar chart of the figure it is named
// for (the report's `figure`: a p95, a rate, a count).

import { api } from "./api.js";
import { errorBox, h, replace, section } from "./dom.js";

const SVG = "http://www.w3.org/2000/svg";

// The time range asked for, kept while the user moves from report to report: the values of
// the two datetime-local inputs (the browser's local time), "" for an open end.
const range = { since: "", until: "" };

// A datetime-local value as the API reads it: UTC, ISO 8601 ("" when empty or unreadable).
function utc(local) {
  if (!local) return "";
  const at = new Date(local);
  return Number.isNaN(at.getTime()) ? "" : at.toISOString();
}

export async function showAnalytics(root, name) {
  const reports = await api("/api/analytics/reports");
  const chosen = name || (reports[0] && reports[0].name);
  const report = reports.find((r) => r.name === chosen) || null;
  const nav = h(
    "ul",
    { class: "reports", id: "report-list" },
    reports.map((r) =>
      h("li", {}, h("a", { href: `#/analytics/${encodeURIComponent(r.name)}`, class: r.name === chosen ? "active" : null }, r.name), " ", h("span", { class: "muted" }, r.title)),
    ),
  );
  // A report that cannot be restricted to a time range says so, and its inputs are off.
  const ranged = Boolean(report && report.time_range);
  const since = h("input", { type: "datetime-local", id: "report-since", step: 1, value: range.since, disabled: !ranged });
  const until = h("input", { type: "datetime-local", id: "report-until", step: 1, value: range.until, disabled: !ranged });
  const clear = h("button", { type: "button", class: "small", id: "report-range-clear", disabled: !ranged }, "Whole history");
  const rangeBox = h(
    "div",
    { class: "filters", id: "report-range", role: "group", "aria-label": "time range" },
    h("label", { for: "report-since" }, "From"),
    since,
    h("label", { for: "report-until" }, "until"),
    until,
    clear,
    ranged ? null : h("span", { class: "muted", id: "report-range-off" }, "this report covers the whole history: it cannot be restricted to a time range"),
  );
  const body = h("div", { id: "report" }, h("p", { class: "muted" }, "loading…"));
  replace(root, h("h1", {}, "Analytics"), nav, rangeBox, body);
  if (!chosen) return;
  const title = (report && report.title) || chosen;
  let asked = 0;

  async function load() {
    const ask = ++asked;
    const query = new URLSearchParams();
    if (ranged && utc(range.since)) query.set("since", utc(range.since));
    if (ranged && utc(range.until)) query.set("until", utc(range.until));
    const suffix = query.toString() ? `?${query}` : "";
    body.setAttribute("aria-busy", "true");
    try {
      const result = await api(`/api/analytics/reports/${encodeURIComponent(chosen)}${suffix}`);
      if (ask !== asked) return; // a later change of the range has overtaken this answer
      const span = suffix ? ` from ${query.get("since") || "the start"} until ${query.get("until") || "now"} (UTC)` : "";
      replace(
        body,
        section(
          `${chosen}: ${title}`,
          h("p", { class: "muted", id: "report-meta", dataset: { range: query.toString() } }, `${result.row_count} rows${span} in ${result.elapsed_ms.toFixed(1)} ms${result.truncated ? ` (cut: ${result.note})` : ""}`),
          chart(result, report && report.figure),
          table(result),
        ),
      );
    } catch (error) {
      if (ask === asked) replace(body, errorBox(error));
    } finally {
      if (ask === asked) body.removeAttribute("aria-busy");
    }
  }

  function changed() {
    range.since = since.value;
    range.until = until.value;
    load();
  }
  since.addEventListener("change", changed);
  until.addEventListener("change", changed);
  clear.addEventListener("click", () => {
    since.value = "";
    until.value = "";
    changed();
  });
  await load();
}

function table(result) {
  return h(
    "table",
    { id: "report-table" },
    h("thead", {}, h("tr", {}, result.columns.map((c) => h("th", {}, c)))),
    h(
      "tbody",
      {},
      result.rows.map((row) => h("tr", {}, row.map((cell) => h("td", {}, cell === null ? "" : typeof cell === "object" ? JSON.stringify(cell) : String(cell))))),
    ),
  );
}

const NUMERIC = /^(TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT|UTINYINT|USMALLINT|UINTEGER|UBIGINT|FLOAT|DOUBLE|DECIMAL.*)$/;

// A bar per row (at most 40): the label is the row's first text columns, the length the
// report's figure (the column it is named for; none named, no chart).
function chart(result, figure) {
  const value = result.columns.indexOf(figure);
  const labels = result.types.map((t, i) => (NUMERIC.test(t) || i === value ? -1 : i)).filter((i) => i >= 0);
  if (value < 0 || !labels.length || !result.rows.length) return null;
  const rows = result.rows.slice(0, 40).filter((r) => typeof r[value] === "number");
  if (!rows.length) return null;
  const max = Math.max(...rows.map((r) => r[value]), 0) || 1;
  const width = 640;
  const bar = 18;
  const labelWidth = 260;
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("id", "report-chart");
  svg.dataset.figure = figure;
  svg.setAttribute("width", String(width));
  svg.setAttribute("height", String(rows.length * bar + 24));
  svg.setAttribute("role", "img");
  svg.setAttribute("aria-label", `${figure} by ${labels.slice(0, 2).map((i) => result.columns[i]).join(", ")}`);
  const caption = text(labelWidth, 12, figure);
  caption.setAttribute("class", "chart-caption");
  svg.appendChild(caption);
  rows.forEach((row, i) => {
    const y = 20 + i * bar;
    const label = labels.slice(0, 2).map((j) => row[j]).filter((v) => v !== null).join(" · ");
    svg.appendChild(text(0, y + 12, label.length > 40 ? `${label.slice(0, 39)}…` : label));
    const length = ((width - labelWidth - 80) * Math.max(0, row[value])) / max;
    const rect = document.createElementNS(SVG, "rect");
    rect.setAttribute("x", String(labelWidth));
    rect.setAttribute("y", String(y + 2));
    rect.setAttribute("height", String(bar - 5));
    rect.setAttribute("width", String(Math.max(1, length)));
    rect.setAttribute("class", "bar");
    rect.dataset.value = String(row[value]);
    svg.appendChild(rect);
    svg.appendChild(text(labelWidth + 6 + length, y + 12, formatValue(row[value])));
  });
  return svg;
}

function text(x, y, content) {
  const node = document.createElementNS(SVG, "text");
  node.setAttribute("x", String(x));
  node.setAttribute("y", String(y));
  node.textContent = content;
  return node;
}

function formatValue(value) {
  return Number.isInteger(value) ? String(value) : value.toFixed(value < 10 ? 3 : 1);
}
