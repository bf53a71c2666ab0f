// An adaptive loop's turns (seed 003), from the server's /state (`loop`, the same fold
// `controlroom show` prints): per turn the criteria that hold, the candidates, the choice and
// role (or a fallback with the Showrunner's errors, or a stall), the reason; then the ending.

import { h } from "./dom.js";

function criteriaText(judged) {
  const criteria = Object.entries(judged.criteria || {});
  if (!criteria.length) return "criteria –";
  const failing = criteria.filter(([, held]) => !held).map(([name]) => name);
  const held = `${criteria.length - failing.length} of ${criteria.length} criteria hold`;
  return failing.length ? `${held} (failing: ${failing.join(", ")})` : `${held} (all)`;
}

function answer(turn) {
  if (turn.stall) return [h("strong", { class: "error" }, "STALL"), ` on ${turn.subject}: ${turn.stall}`];
  const among = `among ${(turn.candidates || []).join(", ") || "–"} → `;
  if (turn.fallback) {
    return [
      among,
      h("strong", { class: "error" }, "FALLBACK"),
      ` ${turn.choice || "nothing could run"}`,
      h("span", { class: "muted" }, ` (Showrunner: ${(turn.errors || []).join("; ") || "no reason recorded"})`),
    ];
  }
  if (!("choice" in turn)) return [among, h("span", { class: "muted" }, "waiting for the Showrunner")];
  const role = turn.collaborator_role ? ` as ${turn.collaborator_role} for ${turn.collaborator_for}` : turn.role ? ` as ${turn.role}` : "";
  return [among, h("strong", {}, turn.choice), role, `: ${turn.reason || "no reason given"}`];
}

export function loopPanel(loop) {
  if (!loop) return null;
  const turns = loop.turns || [];
  const ending = loop.ending;
  return h(
    "div",
    { id: "loop-turns", dataset: { turns: String(turns.length), ending: ending ? ending.ending : "" } },
    h("p", {}, `Loop ${loop.name || ""}: ${turns.length} turn(s)`),
    h(
      "ol",
      { class: "loop-turns", "aria-label": "loop turns" },
      turns.map((turn) =>
        h(
          "li",
          { dataset: { turn: String(turn.turn), fallback: String(Boolean(turn.fallback)), stall: String(Boolean(turn.stall)) } },
          h("span", {}, `Turn ${turn.turn} · iteration ${turn.iteration ?? "–"} · ${criteriaText(turn)} · `),
          answer(turn),
        ),
      ),
    ),
    ending
      ? h("p", { id: "loop-ending", class: ending.ending === "stable" ? "good" : "error" }, `Ended ${ending.ending} at turn ${ending.turn} after ${ending.iteration} step(s) · ${criteriaText(ending)}`)
      : h("p", { class: "muted", id: "loop-ending" }, "Not ended yet."),
  );
}
