// The connection indicator in the header: live, reconnecting, or ended.

const LABELS = { live: "● live", reconnecting: "◌ reconnecting…", ended: "○ finished", unauthorized: "✕ token needed", idle: "" };

export function setConnection(state) {
  const node = document.getElementById("connection");
  if (!node) return;
  node.dataset.state = state;
  node.textContent = LABELS[state] || state;
}
