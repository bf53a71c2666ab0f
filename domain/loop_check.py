"""Load-time checks of a loop recipe (seed 003): its library, flow, criteria and scope
agree with its steps, so a loop that could leave its scope is refused before it runs."""

from __future__ import annotations

from collections.abc import Iterator

from controlroom.domain.loop_spec import GatePassed, NoBlockingFindings, UnchangedSinceLastPass
from controlroom.domain.recipe import Recipe
from controlroom.domain.showrunner import ShowrunnerStep
from controlroom.domain.steps import AgentStep, WriteFileStep


def loop_problems(recipe: Recipe) -> Iterator[tuple[str, str]]:
    """(JSON path, message) for each way the recipe's loop does not fit its steps."""
    spec = recipe.loop
    adaptive = recipe.flow_name() == "adaptive"
    if spec is None:
        if adaptive:
            yield "$.flow", "the adaptive flow runs a loop: the recipe declares no `loop`"
        return
    if not adaptive:
        yield "$.flow", 'a recipe with a `loop` runs under the adaptive flow ("flow": "adaptive")'
    phase_b = {s.step_id: s for s in recipe.phase_b}
    written = {s.output_slot for s in recipe.steps}
    decider = phase_b.get(spec.decider)
    if not isinstance(decider, ShowrunnerStep):
        yield "$.loop.decider", f"'{spec.decider}' is not a phase_b step of kind showrunner"
    if spec.collaborator is not None:
        helper = phase_b.get(spec.collaborator)
        if not isinstance(helper, AgentStep) or isinstance(helper, ShowrunnerStep):
            yield "$.loop.collaborator", f"'{spec.collaborator}' is not a phase_b agent step"
    library = {entry.step for entry in spec.library}
    for i, entry in enumerate(spec.library):
        here = f"$.loop.library[{i}]"
        step = phase_b.get(entry.step)
        if step is None or entry.step in (spec.decider, spec.collaborator):
            yield f"{here}.step", f"'{entry.step}' is not a phase_b step of the loop's own"
            continue
        if isinstance(step, AgentStep) and entry.recommended_role != step.agent_archetype:
            yield (
                f"{here}.recommended_role",
                f"the step's role is '{step.agent_archetype}', not '{entry.recommended_role}'",
            )
        if not isinstance(step, AgentStep) and (entry.recommended_role or entry.roles):
            yield f"{here}.roles", f"'{entry.step}' is a {step.kind} step: no role wakes for it"
        if entry.produces != [step.output_slot]:
            yield f"{here}.produces", f"the step writes slot '{step.output_slot}'"
        for slot in entry.requires:
            if slot not in written:
                yield f"{here}.requires", f"no step writes slot '{slot}'"
        outside = [s for s in entry.produces if s not in spec.scope.slots]
        if outside:
            yield f"{here}.produces", f"slot(s) {', '.join(outside)} outside the loop's scope"
        if isinstance(step, WriteFileStep):
            yield f"{here}.step", "workspace writes run once the loop is stable, not in it"
    for name in ("typical_flow", "required_steps"):
        for i, step_id in enumerate(getattr(spec, name)):
            if step_id not in library:
                yield f"$.loop.{name}[{i}]", f"'{step_id}' is not in the loop's library"
    for i, criterion in enumerate(spec.stabilization):
        here = f"$.loop.stabilization[{i}]"
        if isinstance(criterion, GatePassed):
            gate = spec.library_step(criterion.gate)
            if gate is None or not gate.gate:
                yield f"{here}.gate", f"'{criterion.gate}' is not a gate step of the library"
        if (
            isinstance(criterion, NoBlockingFindings | UnchangedSinceLastPass)
            and criterion.slot not in written
        ):
            yield f"{here}.slot", f"no step writes slot '{criterion.slot}'"
    inside = {spec.decider, spec.collaborator, *library}
    after_loop = False
    for i, step in enumerate(recipe.phase_b):
        if step.step_id not in inside:
            after_loop = True
            for path in step.paths_written():
                if (
                    "{{" not in path
                    and not path.startswith("$ref:")
                    and (why := spec.scope.path_problem(path))
                ):
                    yield f"$.phase_b[{i}].path", why
        elif after_loop:
            yield f"$.phase_b[{i}]", "the loop's own steps come before the steps that follow it"
