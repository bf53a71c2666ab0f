// One run's events folded into its timeline and step details, in the page so each event
// (and each streamed partial) is drawn at once. What the page *says* about the run — its
// status, whether anything advances it, the valid actions, its totals — is not decided
// here but by the server's fold (`RunView`, via GET /api/runs/{id}/state: see run.js).

export function newRun(runId) {
  return {
    runId,
    recipeId: null,
    recipe: null,
    task: null,
    routing: null,
    status: "pending",
    error: null,
    owner: null,
    lease_expires_at: null,
    totalSteps: 0,
    createdAt: null,
    completedAt: null,
    items: [], // the timeline, in order: {kind: "step", instance} or {kind: "mark", ...}
    steps: new Map(), // instance id -> step
    current: new Map(), // step id -> its latest instance id
    slots: new Map(),
    receipts: new Map(),
    requests: new Map(),
    dod: null,
    events: [], // {position, version, type, timestamp, data}
    lastVersion: 0,
    ended: false,
    rev: 0,
  };
}

function stepOf(run, stepId) {
  const instance = run.current.get(stepId);
  return instance === undefined ? null : run.steps.get(instance);
}

function touch(run, step) {
  run.rev += 1;
  if (step) step.rev = run.rev;
}

function mark(run, message, text, tone = "") {
  run.items.push({ kind: "mark", type: message.data.type, version: message.data.version, timestamp: message.data.timestamp, text, tone });
}

// Apply one stored event (an SSE message of the run's feed). Returns the step it changed.
export function fold(run, message) {
  const { type, version, timestamp, data } = message.data;
  if (version <= run.lastVersion) return null; // delivered twice: already folded
  run.lastVersion = version;
  run.events.push({ position: message.id, version, type, timestamp, data });
  let step = null;
  switch (type) {
    case "RunStarted":
      run.recipeId = data.recipe_id;
      run.recipe = data.recipe;
      run.task = data.task;
      run.routing = data.routing;
      run.totalSteps = data.total_steps;
      run.createdAt = timestamp;
      run.status = "running";
      mark(run, message, `started ${data.recipe_id}: ${data.task.description}`);
      break;
    case "StepStarted": {
      const instance = data.instance_id || data.step_id;
      step = {
        instance,
        stepId: data.step_id,
        index: data.step_index,
        kind: data.kind || (data.phase === "a" ? "tool" : "agent"),
        phase: data.phase,
        tool: data.tool,
        agent: data.agent_archetype,
        outputSlot: data.output_slot,
        status: "running",
        startedAt: timestamp,
        completedAt: null,
        partials: new Map(), // attempt -> streamed text so far
        response: null,
        receipt: null,
        failures: [],
        rejections: [],
        micro: [], // a T1 agent's triage and evidence calls
        stopHook: null,
        inputs: [],
        outputHash: null,
        preview: null,
        error: null,
        waitingFor: null,
        rev: 0,
      };
      run.steps.set(instance, step);
      run.current.set(data.step_id, instance);
      run.items.push({ kind: "step", instance });
      break;
    }
    case "ReceiptIssued":
      run.receipts.set(data.receipt_id, data);
      step = stepOf(run, data.step_id);
      if (step) {
        step.receipt = data;
        step.inputs = data.input_slot_refs;
      }
      break;
    case "ModelRequestRecorded":
      run.requests.set(data.ref, data);
      break;
    case "AgentResponded":
      step = stepOf(run, data.step_id);
      if (step) {
        step.response = data;
        step.inputs = data.input_slot_refs;
      }
      break;
    case "AgentMicroStepResponded":
      step = stepOf(run, data.step_id);
      if (step) step.micro.push(data);
      break;
    case "AgentReplyRejected":
      step = stepOf(run, data.step_id);
      if (step) step.rejections.push(data);
      break;
    case "ModelAttemptFailed":
      step = stepOf(run, data.step_id);
      if (step) step.failures.push(data);
      break;
    case "StopHook":
      step = stepOf(run, data.step_id);
      if (step) step.stopHook = data;
      mark(run, message, `stop hook: ${data.step_id} gave no valid reply after ${data.attempts} attempts`, "bad");
      break;
    case "SlotWritten":
      run.slots.set(data.slot, { ...data, version });
      break;
    case "StepCompleted":
      step = stepOf(run, data.step_id);
      if (step) {
        step.status = "done";
        step.completedAt = timestamp;
        step.outputHash = data.output_hash;
        step.preview = data.output_preview;
        step.inputs = data.input_slot_refs;
      }
      break;
    case "StepFailed":
      step = stepOf(run, data.step_id);
      if (step) {
        step.status = "failed";
        step.completedAt = timestamp;
        step.error = `${data.error_type}: ${data.error}`;
      }
      break;
    case "StepWaiting":
      step = stepOf(run, data.step_id);
      if (step) {
        step.status = "waiting";
        step.waitingFor = data.reason;
      }
      if (data.awaiting && data.awaiting.kind === "person") {
        run.waitingForPerson = { instance: data.instance_id, owner: data.awaiting.owner, issueId: data.awaiting.issue_id };
        mark(run, message, `waiting for a person (${data.awaiting.owner || "user"}): ${data.step_id}'s ladder is spent`, "bad");
      }
      break;
    case "HumanAnswered":
      step = stepOf(run, data.step_id);
      if (step) {
        step.status = "answered";
        step.completedAt = timestamp;
        step.waitingFor = null;
      }
      run.waitingForPerson = null;
      mark(run, message, `${data.by} answered: ${data.resolution}`, "good");
      break;
    case "FlowDecided":
      // An escalation rung or a review gate's rollback: what the run did about a failure.
      if (data.rung) {
        run.ladder = run.ladder || [];
        run.ladder.push({ kind: data.rung.kind, reason: data.reason, instance: data.instance_id });
        mark(run, message, `${data.rung.kind}: ${data.reason}`, data.rung.kind === "deferred" ? "bad" : "");
      }
      break;
    case "LadderCallRecorded":
      step = stepOf(run, data.step_id);
      if (step) {
        step.ladderCalls = step.ladderCalls || [];
        step.ladderCalls.push(data);
      }
      break;
    case "DodChecked":
      run.dod = data;
      mark(run, message, `definition of done ${data.passed ? "passed" : "failed"}`, data.passed ? "good" : "bad");
      break;
    case "RunClaimed":
      run.owner = data.owner;
      run.lease_expires_at = data.lease_expires_at;
      break;
    case "RunReleased":
      run.owner = null;
      run.lease_expires_at = null;
      break;
    case "RunResumed":
      run.status = "running";
      mark(run, message, `resumed at step ${data.step_index + 1}`);
      break;
    case "RunRetried":
      run.status = "running";
      run.error = null;
      run.ended = false;
      run.completedAt = null;
      mark(run, message, `retry from ${data.step_id}${data.previous_error ? ` (was: ${data.previous_error})` : ""}`);
      break;
    case "RunCompleted":
      run.status = "done";
      run.ended = true;
      run.completedAt = timestamp;
      run.outcome = data.outcome;
      mark(run, message, data.outcome === 12 ? "completed: partial success (a step was deferred)" : "completed", "good");
      break;
    case "RunFailed":
      run.status = "failed";
      run.error = data.error;
      run.ended = true;
      run.completedAt = timestamp;
      mark(run, message, `failed: ${data.error}`, "bad");
      break;
    case "RunCancelled":
      run.status = "cancelled";
      run.ended = true;
      run.completedAt = timestamp;
      for (const s of run.steps.values()) {
        if (s.status === "running" || s.status === "waiting") {
          s.status = "cancelled";
          touch(run, s);
        }
      }
      mark(run, message, `cancelled: ${data.reason}`, "bad");
      break;
    default:
      break;
  }
  touch(run, step);
  return step;
}

// Apply one transient partial message: a model's output as it streams.
export function foldPartial(run, data) {
  const step = stepOf(run, data.step_id);
  if (!step) return null;
  step.partials.set(data.attempt, (step.partials.get(data.attempt) || "") + data.text);
  touch(run, step);
  return step;
}

// The full output of a step: an agent's text, or a tool's receipt output.
export function outputOf(run, step) {
  const slot = run.slots.get(step.outputSlot);
  if (step.response) return step.response.output;
  if (step.receipt) return step.receipt.output;
  if (slot && slot.text !== null && slot.text !== undefined && step.status === "done") return slot.text;
  return null;
}

// What a slot holds now: an artifact's text, or the full output of the receipt it points at.
export function slotContent(run, name) {
  const slot = run.slots.get(name);
  if (!slot) return null;
  if (slot.kind === "artifact") return slot.text;
  const receipt = slot.receipt_id ? run.receipts.get(slot.receipt_id) : null;
  return receipt ? receipt.output : slot.summary;
}

export function latestPartial(step) {
  let attempt = 0;
  for (const key of step.partials.keys()) attempt = Math.max(attempt, key);
  return attempt ? { attempt, text: step.partials.get(attempt) } : null;
}
