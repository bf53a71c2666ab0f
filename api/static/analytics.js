// The built-in analytics reports (DuckDB over the whole history): each as a table and, when
// it has a label column and a number column, as a bar chart of that number.

import { api } from "./api.js";
import { h, replace, section } from "./dom.js";

const SVG = "http://www.w3.org/2000/svg";

export async function showAnalytics(root, name) {
  const reports = await api("/api/analytics/reports");
  const chosen = name || (reports[0] && reports[0].name);
  const nav = h(
    "ul",
    { class: "reports", id: "report-list" },
    reports.map((r) =>
      h("li", {}, h("a", { href: `#/analytics/${encodeURIComponent(r.name)}`, class: r.name === chosen ? "active" : null }, r.name), " ", h("span", { class: "muted" }, r.title)),
    ),
  );
  const body = h("div", { id: "report" }, h("p", { class: "muted" }, "loading…"));
  replace(root, h("h1", {}, "Analytics"), nav, body);
  if (!chosen) return;
  const result = await api(`/api/analytics/reports/${encodeURIComponent(chosen)}`);
  const title = (reports.find((r) => r.name === chosen) || {}).title || chosen;
  replace(
    body,
    section(
      `${chosen}: ${title}`,
      h("p", { class: "muted", id: "report-meta" }, `${result.row_count} rows in ${result.elapsed_ms.toFixed(1)} ms${result.truncated ? ` (cut: ${result.note})` : ""}`),
      chart(result),
      table(result),
    ),
  );
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

// A bar per row (at most 40): the label is the row's first text columns, the length its
// last numeric column (a p95, a rate, a count, a cost: the figure the report sorts by).
function chart(result) {
  const numeric = result.types.map((t, i) => (NUMERIC.test(t) ? i : -1)).filter((i) => i >= 0);
  const labels = result.types.map((t, i) => (NUMERIC.test(t) ? -1 : i)).filter((i) => i >= 0);
  if (!numeric.length || !labels.length || !result.rows.length) return null;
  const value = numeric[numeric.length - 1];
  const rows = result.rows.slice(0, 40).filter((r) => typeof r[value] === "number");
  const max = Math.max(...rows.map((r) => r[value]), 0) || 1;
  const width = 640;
  const bar = 18;
  const labelWidth = 260;
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("id", "report-chart");
  svg.setAttribute("width", String(width));
  svg.setAttribute("height", String(rows.length * bar + 24));
  svg.setAttribute("role", "img");
  svg.setAttribute("aria-label", `${result.columns[value]} by ${labels.slice(0, 2).map((i) => result.columns[i]).join(", ")}`);
  const caption = text(labelWidth, 12, result.columns[value]);
  caption.setAttribute("class", "chart-caption");
  svg.appendChild(caption);
  rows.forEach((row, i) => {
    const y = 20 + i * bar;
    const label = labels.slice(0, 2).map((j) => row[j]).filter((v) => v !== null).join(" · ");
    svg.appendChild(text(0, y + 12, label.length > 40 ? `${label.slice(0, 39)}…` : label));
    const rect = document.createElementNS(SVG, "rect");
    rect.setAttribute("x", String(labelWidth));
    rect.setAttribute("y", String(y + 2));
    rect.setAttribute("height", String(bar - 5));
    rect.setAttribute("width", String(Math.max(1, ((width - labelWidth - 80) * row[value]) / max)));
    rect.setAttribute("class", "bar");
    svg.appendChild(rect);
    svg.appendChild(text(labelWidth + 6 + ((width - labelWidth - 80) * row[value]) / max, y + 12, formatValue(row[value])));
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
