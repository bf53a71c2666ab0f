// One step in full: what it read, what it wrote, its receipt, the exact prompt its agent was
// sent, tokens and cost, and every failed attempt.

import { api } from "./api.js";
import { duration, formatMs, h, json, pre, section } from "./dom.js";
import { latestPartial, outputOf, slotContent } from "./fold.js";

export function stepDetail(run, step, actions) {
  const model = step.response ? `${step.response.provider} / ${step.response.model}` : "";
  return h(
    "div",
    { class: "step-detail", id: "step-detail", dataset: { instance: step.instance, status: step.status } },
    h(
      "h2",
      {},
      `${step.index + 1}. ${step.instance} `,
      h("span", { class: `badge status-${step.status}` }, step.status),
      actions,
    ),
    h(
      "dl",
      { class: "facts" },
      fact("phase", step.phase),
      fact("kind", step.kind),
      fact(step.kind === "tool" ? "tool" : "agent", step.tool || step.agent || ""),
      fact("model", model),
      fact("output slot", step.outputSlot),
      fact("duration", duration(step.startedAt, step.completedAt) || "running"),
      fact("attempts", step.response ? step.response.attempts : step.failures.length + step.rejections.length + 1),
      step.outputHash ? fact("output hash", step.outputHash) : null,
    ),
    step.error ? h("p", { class: "error" }, step.error) : null,
    step.waitingFor ? h("p", { class: "muted" }, `waiting for ${step.waitingFor}`) : null,
    outputSection(run, step),
    inputsSection(run, step),
    step.receipt ? receiptSection(step.receipt) : null,
    step.response ? promptSection(run, step.response) : null,
    step.response ? usageSection(step.response, step) : null,
    microSection(run, step),
    attemptsSection(step),
  );
}

function fact(name, value) {
  return [h("dt", {}, name), h("dd", {}, value === null || value === undefined ? "" : String(value))];
}

function outputSection(run, step) {
  const output = outputOf(run, step);
  if (output !== null && output !== undefined) {
    return section("Output", pre(json(output), { class: "output", id: "step-output" }));
  }
  const partial = latestPartial(step);
  if (partial) {
    return section(
      `Output (streaming, attempt ${partial.attempt})`,
      pre(partial.text, { class: "output streaming", id: "step-output", dataset: { streaming: "true" } }),
    );
  }
  return section("Output", h("p", { class: "muted" }, step.status === "running" ? "waiting for output…" : "no output"));
}

function inputsSection(run, step) {
  if (!step.inputs.length) return null;
  return section(
    "Inputs",
    h(
      "div",
      { id: "step-inputs" },
      step.inputs.map((ref) => {
        let content;
        if (ref === "task.description") content = run.task ? run.task.description : "";
        else if (ref.startsWith("task.")) content = run.task ? run.task.args : {};
        else content = slotContent(run, ref);
        return h(
          "details",
          { class: "input" },
          h("summary", {}, ref),
          content === null || content === undefined ? h("p", { class: "muted" }, "not written yet") : pre(json(content)),
        );
      }),
    ),
  );
}

function receiptSection(receipt) {
  return section(
    "Receipt",
    h(
      "dl",
      { class: "facts", id: "step-receipt" },
      fact("receipt", receipt.receipt_id),
      fact("tool", receipt.tool),
      fact("output sha256", receipt.output_sha256),
      fact("duration", formatMs(receipt.duration_ms)),
      fact("summary", receipt.summary),
    ),
    h("h4", {}, "Arguments"),
    pre(json(receipt.args)),
  );
}

function promptSection(run, response) {
  const request = response.request_ref ? run.requests.get(response.request_ref) : null;
  const header = h(
    "dl",
    { class: "facts" },
    fact("prompt", `${response.prompt_type} (${response.prompt_variant})`),
    fact("prompt hash", response.prompt_hash),
    fact("request", response.request_ref || "not recorded"),
  );
  if (!request) return section("Prompt", header, h("p", { class: "muted" }, "The exact request was not recorded for this step."));
  const prompt = h("div", { id: "step-prompt" });
  if (refersToTexts(request.body)) {
    // The event names its system text by hash (stored once per store, domain/texts.py):
    // the server puts it back, as `show --request` does.
    prompt.append(h("p", { class: "muted" }, "Loading the request as sent…"));
    api(`/api/runs/${encodeURIComponent(run.runId)}/requests/${encodeURIComponent(request.ref)}`)
      .then((sent) => prompt.replaceChildren(...promptMessages(sent.body)))
      .catch((error) => prompt.replaceChildren(h("p", { class: "muted" }, `The request could not be read: ${error.message}`)));
  } else {
    prompt.append(...promptMessages(request.body));
  }
  return section("Prompt", header, prompt);
}

function refersToTexts(body) {
  return "system_sha256" in body || (body.messages || []).some((m) => m && "content_sha256" in m);
}

function promptMessages(body) {
  const { messages, system, ...rest } = body;
  const all = system === undefined ? messages || [] : [{ role: "system", content: system }, ...(messages || [])];
  return [
    ...all.map((m) => h("div", { class: "message" }, h("h4", {}, m.role), pre(typeof m.content === "string" ? m.content : json(m.content)))),
    h("details", {}, h("summary", {}, "request parameters"), pre(json(rest))),
  ];
}

// What the step instance paid for: its reply, the replies its contract rejected, and the
// calls an escalation rung made around it (consult, synthesis, triage).
function spentOn(step) {
  const costs = [step.response, ...step.rejections, ...(step.ladderCalls || [])]
    .map((c) => (c ? c.cost_usd : null))
    .filter((c) => typeof c === "number");
  return costs.length ? costs.reduce((a, b) => a + b, 0) : null;
}

function usageSection(response, step) {
  const usage = response.usage || {};
  const spent = step ? spentOn(step) : null;
  return section(
    "Usage",
    h(
      "dl",
      { class: "facts", id: "step-usage" },
      fact("tier", response.tier),
      fact("input tokens", `${usage.input_tokens ?? 0}${usage.estimated ? " (estimated)" : ""}`),
      fact("output tokens", `${usage.output_tokens ?? 0}${usage.estimated ? " (estimated)" : ""}`),
      fact("cost", response.cost_usd === null || response.cost_usd === undefined ? "unknown" : `$${response.cost_usd.toFixed(6)}`),
      spent !== null && spent !== response.cost_usd ? fact("spent, rejected replies and ladder calls included", `$${spent.toFixed(6)}`) : null,
      fact("latency", formatMs(response.latency_ms)),
      fact("attempts", response.attempts),
    ),
  );
}

// A T1 agent's step is three recorded calls: triage, the finding (the output above), evidence.
function microSection(run, step) {
  if (!step.micro.length) return null;
  const calls = [];
  for (const m of step.micro) {
    if (m.micro_step === "evidence" && step.response) calls.push({ micro_step: "finding", output: "(the output above)", prompt_type: step.response.prompt_type, latency_ms: step.response.latency_ms });
    calls.push(m);
  }
  return section(
    "T1 micro-steps",
    h(
      "ol",
      { id: "step-micro" },
      calls.map((m) => {
        const checked = m.verified === true ? " ✓ verified" : m.verified === false ? ` ✗ unverified: ${m.problem || ""}` : "";
        const request = m.request_ref ? run.requests.get(m.request_ref) : null;
        return h(
          "li",
          { dataset: { micro: m.micro_step } },
          h("strong", {}, m.micro_step),
          ` (${m.prompt_type}, ${formatMs(m.latency_ms)})${checked}`,
          pre(m.output, { class: m.verified === false ? "output error" : "output" }),
          request ? h("details", {}, h("summary", {}, "request"), pre(json(request.body))) : null,
        );
      }),
    ),
  );
}

function attemptsSection(step) {
  if (!step.failures.length && !step.rejections.length && !step.stopHook) return null;
  return section(
    "Failed attempts",
    step.failures.map((f) =>
      h("p", {}, `attempt ${f.attempt}: ${f.kind}${f.status ? ` (${f.status})` : ""}: ${f.message}${f.will_retry ? `; retried in ${f.retry_in_s} s` : ""}`),
    ),
    step.rejections.map((r) =>
      h("details", {}, h("summary", {}, `attempt ${r.attempt}: reply broke ${r.contract}: ${r.errors.join("; ")}`), pre(r.reply)),
    ),
    step.stopHook ? h("p", { class: "error" }, `stopped after ${step.stopHook.attempts} attempts: ${step.stopHook.errors.join("; ")}`) : null,
  );
}
