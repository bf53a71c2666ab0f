"""Step kinds: what a recipe step *is*, as data. One spec class per kind, in a registry.

A recipe keeps appendix B's format: entries of `phase_a` are tool steps and entries of
`phase_b` agent steps unless they name another kind (`"kind": "..."`). A new kind is a spec
class registered here, a performer registered in the engine, and (optionally) events of its
own; the runner loop, the generic projections and the CLI do not change.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from controlroom.domain.errors import PathTemplateError
from controlroom.domain.ladder_spec import Ladder
from controlroom.domain.templates import placeholders

Phase = Literal["a", "b"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)


class Ref(_Frozen):
    """`{"$ref": "path"}`: a value resolved at run time from task metadata or a slot."""

    ref: str = Field(alias="$ref", min_length=1)


ArgValue = Annotated[Ref | JsonValue, Field(union_mode="left_to_right")]


class KnownNames:
    """What a recipe may name, for load-time checks: tools and prompt types."""

    def __init__(self, tools: frozenset[str], prompts: frozenset[str]) -> None:
        self.tools, self.prompts = tools, prompts


class StepSpec(_Frozen):
    """Common to every step kind: an id, a kind, and the one slot it writes."""

    #: The phase whose entries are of this kind when they name none.
    default_phase: ClassVar[Phase | None] = None
    #: The phases a step of this kind may stand in (None: either).
    phases: ClassVar[tuple[Phase, ...] | None] = None

    kind: str
    step_id: str = Field(min_length=1)
    output_slot: str = Field(min_length=1)

    def slots_read(self) -> list[str]:
        """Slots the step reads directly (checked: written by an earlier step)."""
        return []

    def slot_reads(self) -> list[tuple[str, str]]:
        """`slots_read()` with where each is named, as (relative JSON path, slot)."""
        return [(f"input_slots[{j}]", slot) for j, slot in enumerate(self.slots_read())]

    def placement_problems(
        self, steps: Sequence[tuple[Phase, StepSpec]], index: int
    ) -> Iterator[tuple[str, str]]:
        """What is wrong with where the step stands among the recipe's steps (`steps`, in
        order, with their phases; it is `steps[index]`), as (relative path, message): a
        gate's rollback target must come before it, for one."""
        return iter(())

    def refs(self) -> Iterator[tuple[str, str]]:
        """Every `$ref` in the step, as (JSON path relative to the step, ref text)."""
        return iter(())

    def problems(self, known: KnownNames) -> Iterator[tuple[str, str]]:
        """What is wrong with the step beyond its shape, as (relative path, message)."""
        return iter(())

    def actor(self) -> str:
        """Who performs it, for humans: a tool's name, an agent's archetype."""
        return self.kind

    def paths_written(self) -> list[str]:
        """The workspace paths the step writes, as written in the recipe (a literal, a
        template, or `$ref:...`): a recipe may name each path once."""
        return []


class ToolStep(StepSpec):
    """Phase A: the system runs a tool, no model."""

    default_phase: ClassVar[Phase | None] = "a"
    kind: Literal["tool"] = "tool"
    tool: str = Field(min_length=1)
    args: dict[str, ArgValue] = Field(default_factory=dict)

    def refs(self) -> Iterator[tuple[str, str]]:
        for name, value in self.args.items():
            if isinstance(value, Ref):
                yield f"args.{name}.$ref", value.ref

    def problems(self, known: KnownNames) -> Iterator[tuple[str, str]]:
        if self.tool not in known.tools:
            yield "tool", f"unknown tool '{self.tool}'"

    def actor(self) -> str:
        return self.tool


class AgentStep(StepSpec):
    """Phase B: a role agent reads slots and writes one."""

    default_phase: ClassVar[Phase | None] = "b"
    kind: Literal["agent"] = "agent"
    agent_archetype: str = Field(min_length=1)
    input_slots: list[str] = Field(default_factory=list)
    prompt_type: str = Field(min_length=1)
    #: What the step climbs when it fails (`domain/ladder.py`); unset, its role's ladder
    #: in models.json, if it has one.
    ladder: Ladder | None = None
    #: Input slots a tool wrote that the agent is shown in full (their JSON, bounded), not
    #: as the receipt's summary: a loop's work list is in the details.
    shown_in_full: list[str] | None = None

    def slots_read(self) -> list[str]:
        return list(self.input_slots)

    def problems(self, known: KnownNames) -> Iterator[tuple[str, str]]:
        if self.prompt_type not in known.prompts:
            yield "prompt_type", f"unknown prompt type '{self.prompt_type}'"

    def actor(self) -> str:
        return self.agent_archetype


class WriteFileStep(StepSpec):
    """Write a slot's text to a workspace file, recorded with its hashes before and after.

    `path` is a `$ref` (`{"$ref": "outline_beat.target.path"}`) or a template
    (`Story/Scenes/SCN-{{task.args.scene_number:02d}}-{{outline_beat.focus.title|slug}}.md`,
    see `domain/templates.py`). `create` refuses a file that is already there with other
    content; `replace` replaces the file the step read, never one changed since."""

    kind: Literal["write_file"] = "write_file"
    source_slot: str = Field(min_length=1)
    path: Annotated[Ref | str, Field(union_mode="left_to_right")]
    mode: Literal["create", "replace"] = "create"

    def slots_read(self) -> list[str]:
        return [self.source_slot]

    def refs(self) -> Iterator[tuple[str, str]]:
        if isinstance(self.path, Ref):
            yield "path.$ref", self.path.ref
            return
        try:
            for ref in placeholders(self.path):
                yield "path", ref
        except PathTemplateError:
            return  # reported by problems()

    def problems(self, known: KnownNames) -> Iterator[tuple[str, str]]:
        if isinstance(self.path, Ref):
            return
        try:
            list(placeholders(self.path))
        except PathTemplateError as exc:
            yield "path", exc.reason
            return
        literal = self.path.replace("\\", "/")
        if literal.startswith("/") or ".." in literal.split("/"):
            yield "path", f"path '{self.path}' must stay inside the workspace (no '/' or '..')"
        elif literal.endswith("/"):
            yield "path", f"path '{self.path}' names a folder, not a file"

    def actor(self) -> str:
        return "workspace"

    def paths_written(self) -> list[str]:
        return [f"$ref:{self.path.ref}" if isinstance(self.path, Ref) else self.path]


class ConferenceStep(StepSpec):
    """A conference round as a step (`engine/conference_step.py`): the Chief gathers
    evidence with tools, every role interprets it at once, each reply checked for
    grounding. The question is the run's task; `roles`, `allowed_tools`, `require_tool`
    (and the round's id, `round_id`, when the caller chose it) are the task's args. The
    round keeps its own record (the `ConferenceRound` aggregate); the slot holds its id,
    status and replies."""

    kind: Literal["conference"] = "conference"

    def actor(self) -> str:
        return "conference"


class ChiefReviewStep(StepSpec):
    """The Chief's review of a finished plan task against its DoD, as a step
    (`engine/review_step.py`); the task's args name the plan, the task and the attempt. A
    tracked policy records the review (or its failure) on the plan when the run ends."""

    kind: Literal["chief_review"] = "chief_review"

    def actor(self) -> str:
        return "chief"


class StepKinds:
    """The registry of step kinds; listeners rebuild what depends on the set (the recipe
    model's union)."""

    def __init__(self) -> None:
        self._kinds: dict[str, type[StepSpec]] = {}
        self._listeners: list[Callable[[], None]] = []

    def register(self, cls: type[StepSpec]) -> type[StepSpec]:
        kind = cls.model_fields["kind"].default
        if not isinstance(kind, str) or not kind:
            raise TypeError(f"{cls.__name__} needs a default `kind` literal")
        if kind in self._kinds and self._kinds[kind] is not cls:
            raise TypeError(f"step kind '{kind}' is already registered")
        self._kinds[kind] = cls
        for listener in self._listeners:
            listener()
        return cls

    def unregister(self, kind: str) -> None:
        if self._kinds.pop(kind, None) is not None:
            for listener in self._listeners:
                listener()

    def on_change(self, listener: Callable[[], None]) -> None:
        self._listeners.append(listener)

    def classes(self) -> list[type[StepSpec]]:
        return list(self._kinds.values())

    def names(self) -> list[str]:
        return list(self._kinds)

    def default_for(self, phase: Phase) -> str:
        return next(k for k, c in self._kinds.items() if c.default_phase == phase)


STEP_KINDS = StepKinds()
STEP_KINDS.register(ToolStep)
STEP_KINDS.register(ConferenceStep)
STEP_KINDS.register(ChiefReviewStep)
STEP_KINDS.register(AgentStep)
STEP_KINDS.register(WriteFileStep)


def kind_of(phase: Phase) -> Callable[[Any], str]:
    """The discriminator for one phase's entries: their `kind`, else the phase's default."""

    # Tags read `kind=tool`, so an error's location never collides with a field named
    # like a kind (a tool step has a `tool` field).
    def discriminate(value: Any) -> str:
        if isinstance(value, dict):
            return f"kind={value.get('kind', STEP_KINDS.default_for(phase))}"
        return f"kind={getattr(value, 'kind', '')}"

    return discriminate
