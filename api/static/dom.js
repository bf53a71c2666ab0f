// Building DOM from data: text always goes in as text (never as HTML), so nothing a run
// recorded can run as script in the page.

export function h(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "dataset") Object.assign(node.dataset, value);
    else if (key.startsWith("on") && typeof value === "function") node.addEventListener(key.slice(2), value);
    else if (key === "value") node.value = value;
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  append(node, children);
  return node;
}

function append(node, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(node, child);
    else if (child instanceof Node) node.appendChild(child);
    else node.appendChild(document.createTextNode(String(child)));
  }
}

export function replace(node, ...children) {
  node.replaceChildren();
  append(node, children);
  return node;
}

export function pre(text, attrs = {}) {
  return h("pre", attrs, text);
}

export function json(value) {
  return typeof value === "string" ? value : JSON.stringify(value, null, 2);
}

export function badge(status) {
  return h("span", { class: `badge status-${status}`, dataset: { status } }, status);
}

export function when(iso) {
  if (!iso) return "";
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  return date.toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z");
}

export function duration(startIso, endIso) {
  if (!startIso || !endIso) return "";
  const ms = new Date(endIso).getTime() - new Date(startIso).getTime();
  return formatMs(ms);
}

export function formatMs(ms) {
  if (ms === null || ms === undefined || Number.isNaN(ms)) return "";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.floor(ms / 60000)} min ${Math.round((ms % 60000) / 1000)} s`;
}

export function section(title, ...children) {
  return h("section", { class: "panel" }, h("h3", {}, title), ...children);
}

export function errorBox(error) {
  return h("p", { class: "error", role: "alert" }, error && error.message ? error.message : String(error));
}

// Call `fn` at most once per `ms`, always with the latest arguments, and once more after.
export function throttle(fn, ms) {
  let timer = null;
  let pending = false;
  return (...args) => {
    if (timer) {
      pending = true;
      return;
    }
    fn(...args);
    timer = setTimeout(function again() {
      timer = null;
      if (pending) {
        pending = false;
        fn(...args);
        timer = setTimeout(again, ms);
      }
    }, ms);
  };
}
