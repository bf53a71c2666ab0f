"""The recipe model: appendix B's JSON, parsed once at the edge into typed, frozen models."""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import cached_property
from typing import TYPE_CHECKING, Annotated, Any, Literal, Union

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    JsonValue,
    SerializeAsAny,
    Tag,
    field_validator,
)

from controlroom.domain.canonical import sha256_json
from controlroom.domain.iteration import IterationSpec
from controlroom.domain.loop_spec import LoopSpec
from controlroom.domain.refs import parse_ref
from controlroom.domain.steps import (
    STEP_KINDS,
    AgentStep,
    Phase,
    Ref,
    StepSpec,
    ToolStep,
    kind_of,
)

__all__ = ["AgentStep", "Recipe", "Ref", "StepSpec", "ToolStep"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)


class SlotNotNull(_Frozen):
    check: Literal["slot_not_null"]
    slot: str


class SlotFieldEquals(_Frozen):
    check: Literal["slot_field_equals"]
    slot: str
    field: str = Field(min_length=1, description="Dot-path into the slot value.")
    expected: JsonValue


class FileExists(_Frozen):
    check: Literal["file_exists"]
    path: Annotated[Ref | str, Field(union_mode="left_to_right")]


class SlotFieldEmpty(_Frozen):
    """Holds when `slot.field` is there and holds nothing (an empty list, object or string,
    or null): a tool's list of findings, say. A field that is not there fails: a check
    over a report whose shape changed must not pass on nothing."""

    check: Literal["slot_field_empty"]
    slot: str
    field: str = Field(min_length=1, description="Dot-path into the slot value.")


#: `{name}` in a `slot_mentions_each` template: a field of the item.
MENTION_FIELD = r"\{([A-Za-z_][A-Za-z0-9_]*)\}"


class SlotMentionsEach(_Frozen):
    """Holds when the text of `slot` mentions every item of a list (`items`, a `$ref`
    such as `consistency_report.findings`): an item is mentioned when the text holds one
    of the `mention` templates filled with the item's fields (`{path}:{line}`). An empty
    list holds; a value that is not a list does not."""

    check: Literal["slot_mentions_each"]
    slot: str
    items: Ref
    mention: list[Annotated[str, Field(pattern=f".*{MENTION_FIELD}.*")]] = Field(
        min_length=1,
        description="Templates of an item's fields, e.g. `{path}:{line}`; any one will do.",
    )


DodCheck = Annotated[
    SlotNotNull | SlotFieldEquals | FileExists | SlotFieldEmpty | SlotMentionsEach,
    Field(discriminator="check"),
]


def check_slots(check: DodCheck) -> list[tuple[str, str]]:
    """The slots a check reads by name, as (JSON path relative to the check, slot)."""
    if isinstance(check, SlotNotNull | SlotFieldEquals | SlotFieldEmpty | SlotMentionsEach):
        return [("slot", check.slot)]
    return []


def check_refs(check: DodCheck) -> list[tuple[str, str]]:
    """The `$ref`s of a check, as (JSON path relative to the check, ref text)."""
    if isinstance(check, FileExists) and isinstance(check.path, Ref):
        return [("path.$ref", check.path.ref)]
    if isinstance(check, SlotMentionsEach):
        return [("items.$ref", check.items.ref)]
    return []


def _phase_entry(phase: Phase) -> Any:
    """The union of every registered step kind, told apart by `kind` (or the phase default)."""
    # Built at run time from the registry; typed as Any so the checker does not read these
    # subscriptions as static type expressions.
    union: Any = Union
    annotated: Any = Annotated
    as_any: Any = SerializeAsAny
    # In the kinds' name order, not their registration order (which follows whichever
    # module was imported first): the committed schema is the same from every entry point.
    kinds = sorted(STEP_KINDS.classes(), key=lambda cls: str(cls.model_fields["kind"].default))
    members = tuple(
        annotated[cls, Tag(f"kind={cls.model_fields['kind'].default}")] for cls in kinds
    )
    return as_any[annotated[union[members], Discriminator(kind_of(phase))]]


class FlowRef(_Frozen):
    """Which flow policy runs the recipe's steps (`domain/flow.py`), with its options."""

    policy: str = Field(min_length=1)
    options: dict[str, JsonValue] = Field(default_factory=dict)


if TYPE_CHECKING:
    PhaseAEntry = StepSpec
    PhaseBEntry = StepSpec
else:
    PhaseAEntry = _phase_entry("a")
    PhaseBEntry = _phase_entry("b")


class TaskCombination(_Frozen):
    """Requests that ask for the work of several recipes at once route to the recipe that
    declares it: an orchestrator of a consistency check and a prose review is the recipe for
    "check chapter 4 against the cards, then review its prose", which either alone would
    take (domain/router.py)."""

    #: Every one of these recipes must match a clause of the request that asks for something.
    recipes: list[str] = Field(min_length=2)
    #: A regular expression (case ignored) the request must match, if set: its scope, say
    #: "the whole book".
    when: str | None = None
    #: A regular expression that, matched, leaves the combination out (another scope).
    unless: str | None = None

    @field_validator("when", "unless")
    @classmethod
    def _compiles(cls, pattern: str | None) -> str | None:
        # Refused when the recipe is loaded, not when a writer's request meets it.
        if pattern is not None:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"not a regular expression: {exc}") from None
        return pattern


class Recipe(_Frozen):
    """A static, declarative execution plan for one task type (appendix B)."""

    recipe_id: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_\-]+$")
    label: str = ""
    description: str | None = None
    task_patterns: list[str] = Field(default_factory=list)
    #: Requests that ask for several recipes' work at once and belong here (the router).
    task_combines: list[TaskCombination] = Field(default_factory=list)
    #: For a recipe the router never starts (a conference round, an eval): how its runs are
    #: started. A request its patterns win is answered unroutable with this, so a writer
    #: who asks for that work learns the command instead of getting another recipe's run.
    started_by: str | None = None
    phase_a: list[PhaseAEntry] = Field(default_factory=list)
    phase_b: list[PhaseBEntry] = Field(default_factory=list)
    dod: list[DodCheck] = Field(default_factory=list)
    #: The flow policy: a name, or `{"policy": name, "options": {...}}`; unset is linear
    #: (and left out of the snapshot, so appendix B recipes keep their fingerprints).
    flow: Annotated[FlowRef | str, Field(union_mode="left_to_right")] | None = None
    #: A pipeline recipe: running it again on the same target is its next iteration
    #: (`domain/iteration.py`).
    iteration: IterationSpec | None = None
    #: How deep runs started from this recipe may nest (seed 004's depth budget); a run's
    #: task arg `max_depth` overrides it, and children inherit their root's.
    max_depth: int | None = Field(default=None, ge=1, le=10)
    #: A loop (seed 003): phase B is a step library the Showrunner chooses from, under the
    #: `adaptive` flow (`domain/loop_spec.py`).
    loop: LoopSpec | None = None

    def flow_name(self) -> str:
        if self.flow is None:
            return "linear"
        return self.flow if isinstance(self.flow, str) else self.flow.policy

    def flow_options(self) -> dict[str, JsonValue]:
        return {} if self.flow is None or isinstance(self.flow, str) else self.flow.options

    @property
    def steps(self) -> list[StepSpec]:
        return [*self.phase_a, *self.phase_b]

    def phase_of(self, index: int) -> Phase:
        return "a" if index < len(self.phase_a) else "b"

    def agent_archetypes(self) -> set[str]:
        roles = {s.agent_archetype for s in self.steps if isinstance(s, AgentStep)}
        # Kinds with agents of their own (a verify loop's verifier and fixer) name them.
        roles |= {r for s in self.steps if hasattr(s, "roles") for r in s.roles()}
        # A loop's per-item checker is a role of the recipe too.
        checks = (getattr(s, "item_check", None) for s in self.steps)
        roles |= {c.agent_archetype for c in checks if c is not None}
        if self.loop is not None:  # roles the Showrunner may wake instead of a step's own
            roles |= {r for entry in self.loop.library for r in entry.allowed_roles()}
        return roles

    @property
    def total_steps(self) -> int:
        return len(self.phase_a) + len(self.phase_b)

    def snapshot(self) -> dict[str, Any]:
        """The recipe as JSON data, exactly what a run records and a fingerprint hashes.

        A step of its phase's default kind is written without `kind`, as appendix B has it,
        so fingerprints of recipes in that format do not change."""
        data = self.model_dump(mode="json", by_alias=True, exclude_none=True)
        if not data.get("task_combines"):  # recipes written before it keep their fingerprints
            data.pop("task_combines", None)
        for phase in ("a", "b"):
            default = STEP_KINDS.default_for("a" if phase == "a" else "b")
            for entry in data[f"phase_{phase}"]:
                if entry.get("kind") == default:
                    del entry["kind"]
        return data

    def fingerprint(self) -> str:
        return self._fingerprint

    # Worked out once per recipe: every run started from it records both. A recipe is
    # frozen and never copied with changes, so what is remembered cannot go stale.
    @cached_property
    def _fingerprint(self) -> str:
        return "sha256:" + sha256_json(self.snapshot())

    def refs(self) -> Iterator[tuple[str, str]]:
        """Every `$ref` path in the recipe with the JSON path where it stands."""
        for phase, steps in (("phase_a", self.phase_a), ("phase_b", self.phase_b)):
            for i, step in enumerate(steps):
                for where, ref in step.refs():
                    yield f"$.{phase}[{i}].{where}", ref
        for i, check in enumerate(self.dod):
            for where, ref in check_refs(check):
                yield f"$.dod[{i}].{where}", ref

    def required_args(self) -> set[str]:
        """Args the task must supply: every `task.args.X` the recipe reads."""
        return set(self._required_args)

    @cached_property
    def _required_args(self) -> frozenset[str]:
        names = set()
        for _, text in self.refs():
            arg = parse_ref(text).task_arg()
            if arg is not None:
                names.add(arg)
        return frozenset(names)


def _rebuild_recipe_model() -> None:
    """A step kind registered later (a plugin, a test) joins the recipe model's unions."""
    for phase in ("a", "b"):
        entry = _phase_entry("a" if phase == "a" else "b")
        globals()[f"Phase{phase.upper()}Entry"] = entry
        Recipe.model_fields[f"phase_{phase}"].annotation = list[entry]  # type: ignore[valid-type]
    Recipe.model_rebuild(force=True)


STEP_KINDS.on_change(_rebuild_recipe_model)

# Step kinds built on the recipe's own models (a review gate's checks are DoD checks)
# register here, so every reader of a recipe, an old run's snapshot among them, knows them.
from controlroom.domain import child_runs as _child_runs  # noqa: E402, F401
from controlroom.domain import eval_step as _eval_step  # noqa: E402, F401
from controlroom.domain import gates as _gates  # noqa: E402, F401
from controlroom.domain import sentinel as _sentinel  # noqa: E402, F401
from controlroom.domain import showrunner as _showrunner  # noqa: E402, F401
