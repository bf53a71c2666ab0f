// "Fork from here": a new run that takes the steps before this one from the recorded run
// (no tool or model called again, the run itself untouched) and runs the rest live with a
// changed prompt template, model or arguments (POST /api/runs/{id}/fork, as `controlroom
// fork` does). The form lives outside the step view, which is rebuilt as events stream:
// what the person types survives.

import { api } from "./api.js";
import { errorBox, h, replace } from "./dom.js";

export function forkPanel(runId) {
  const box = h("section", { class: "panel", id: "fork-panel", "aria-labelledby": "fork-title" });
  box.hidden = true;
  let step = null;

  function open(chosen) {
    step = chosen;
    box.hidden = false;
    replace(box, form());
    box.querySelector("textarea, input").focus();
  }

  function form() {
    const agentStep = Boolean(step.response);
    const promptType = h("input", { id: "fork-prompt-type", name: "prompt_type", value: agentStep ? step.response.prompt_type : "", placeholder: "prompt type, e.g. scene_draft" });
    const promptText = h("textarea", { id: "fork-prompt-text", name: "prompt_text", rows: 8, placeholder: "The template's new text. Empty: the template is unchanged." });
    const role = h("input", { id: "fork-model-role", name: "model_role", value: step.agent || "", placeholder: "role, e.g. writer" });
    const model = h("input", { id: "fork-model", name: "model", placeholder: "provider:model, e.g. openai:gpt-4o-mini. Empty: unchanged." });
    const args = h("textarea", { id: "fork-args", name: "args", rows: 3, placeholder: '{"scene_number": 3}  Empty: the same arguments.' });
    const problem = h("div", { id: "fork-error" });
    const submit = h("button", { type: "submit", id: "fork-submit" }, "Start the fork");
    const field = (label, input, hint) => h("p", {}, h("label", { for: input.id }, label), " ", input, hint ? h("span", { class: "muted" }, ` ${hint}`) : null);
    const element = h(
      "form",
      { id: "fork-form" },
      h("h3", { id: "fork-title" }, `Fork from step ${step.instance}`),
      h("p", { class: "muted" }, "Steps before this one are copied from this run's events (no call repeated, this run unchanged); this step and the rest run live with what you change here."),
      field("Prompt type", promptType),
      field("New template text", promptText),
      field("Model for role", role),
      field("Model", model),
      field("Arguments (JSON object)", args),
      problem,
      h("p", {}, submit, " ", h("button", { type: "button", id: "fork-close", onclick: close }, "Close")),
    );
    element.addEventListener("submit", async (event) => {
      event.preventDefault();
      let body;
      try {
        body = requestBody(promptType.value.trim(), promptText.value, role.value.trim(), model.value.trim(), args.value.trim());
      } catch (error) {
        replace(problem, errorBox(error));
        return;
      }
      submit.disabled = true;
      try {
        const started = await api(`/api/runs/${encodeURIComponent(runId)}/fork`, { method: "POST", body });
        location.hash = `#/runs/${encodeURIComponent(started.run_id)}`;
      } catch (error) {
        replace(problem, errorBox(error));
        submit.disabled = false;
      }
    });
    return element;
  }

  function requestBody(promptType, promptText, role, model, args) {
    const body = { from: step.stepId };
    if (promptText.trim()) {
      if (!promptType) throw new Error("Name the prompt type the new template text replaces.");
      body.prompts = { [promptType]: promptText };
    }
    if (model) {
      if (!role) throw new Error("Name the role whose model changes.");
      if (!model.includes(":")) throw new Error("Give the model as provider:model, for example openai:gpt-4o-mini.");
      body.models = { [role]: model };
    }
    if (args) {
      let parsed;
      try {
        parsed = JSON.parse(args);
      } catch {
        throw new Error("The arguments are not valid JSON.");
      }
      if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) throw new Error('The arguments must be a JSON object, like {"scene_number": 3}.');
      body.args = parsed;
    }
    return body;
  }

  function close() {
    box.hidden = true;
    replace(box);
    step = null;
  }

  return { element: box, open };
}
