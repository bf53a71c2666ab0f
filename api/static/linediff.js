// A line diff for the side-by-side view: the longest common subsequence of two line lists,
// with a removed line and an added one at the same place shown as one changed row.

// Above this many cells (lines of A times lines of B) the table would take too long to
// build in the page: the texts are shown side by side without matching.
const MAX_CELLS = 16_000_000;

export function lineDiff(a, b) {
  if (a.length * b.length > MAX_CELLS) {
    const rows = [];
    for (let i = 0; i < Math.max(a.length, b.length); i++) {
      const same = a[i] === b[i];
      rows.push({ kind: same ? "same" : "changed", a: i < a.length ? i + 1 : null, b: i < b.length ? i + 1 : null, left: a[i], right: b[i] });
    }
    return { rows, cut: true };
  }
  // lengths[i][j]: the common subsequence of a[i:] and b[j:], one flat array.
  const width = b.length + 1;
  const lengths = new Uint32Array((a.length + 1) * width);
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) {
      lengths[i * width + j] = a[i] === b[j] ? lengths[(i + 1) * width + j + 1] + 1 : Math.max(lengths[(i + 1) * width + j], lengths[i * width + j + 1]);
    }
  }
  const ops = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && a[i] === b[j]) ops.push({ kind: "same", i: i++, j: j++ });
    else if (j < b.length && (i === a.length || lengths[i * width + j + 1] >= lengths[(i + 1) * width + j])) ops.push({ kind: "added", j: j++ });
    else ops.push({ kind: "removed", i: i++ });
  }
  return { rows: pairUp(ops, a, b), cut: false };
}

// A run of removals followed by a run of additions is a change: paired row by row.
function pairUp(ops, a, b) {
  const rows = [];
  for (let k = 0; k < ops.length; ) {
    if (ops[k].kind === "same") {
      rows.push({ kind: "same", a: ops[k].i + 1, b: ops[k].j + 1, left: a[ops[k].i], right: b[ops[k].j] });
      k++;
      continue;
    }
    const removed = [];
    const added = [];
    while (k < ops.length && ops[k].kind !== "same") {
      if (ops[k].kind === "removed") removed.push(ops[k].i);
      else added.push(ops[k].j);
      k++;
    }
    for (let n = 0; n < Math.max(removed.length, added.length); n++) {
      const x = removed[n];
      const y = added[n];
      const kind = x !== undefined && y !== undefined ? "changed" : x !== undefined ? "removed" : "added";
      rows.push({ kind, a: x !== undefined ? x + 1 : null, b: y !== undefined ? y + 1 : null, left: x !== undefined ? a[x] : null, right: y !== undefined ? b[y] : null });
    }
  }
  return rows;
}
