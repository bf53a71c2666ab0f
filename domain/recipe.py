"""The recipe model: appendix B's JSON, parsed once at the edge into typed, frozen models."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from controlroom.domain.canonical import sha256_json
from controlroom.domain.refs import parse_ref


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)


class Ref(_Frozen):
    """`{"$ref": "path"}`: a value resolved at run time from task metadata or a slot."""

    ref: str = Field(alias="$ref", min_length=1)


ArgValue = Annotated[Ref | JsonValue, Field(union_mode="left_to_right")]


class ToolStep(_Frozen):
    """Phase A: the system runs a tool, no model."""

    step_id: str = Field(min_length=1)
    tool: str = Field(min_length=1)
    args: dict[str, ArgValue] = Field(default_factory=dict)
    output_slot: str = Field(min_length=1)


class AgentStep(_Frozen):
    """Phase B: a role agent reads slots and writes one."""

    step_id: str = Field(min_length=1)
    agent_archetype: str = Field(min_length=1)
    input_slots: list[str] = Field(default_factory=list)
    output_slot: str = Field(min_length=1)
    prompt_type: str = Field(min_length=1)


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


DodCheck = Annotated[SlotNotNull | SlotFieldEquals | FileExists, Field(discriminator="check")]


class Recipe(_Frozen):
    """A static, declarative execution plan for one task type (appendix B)."""

    recipe_id: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_\-]+$")
    label: str = ""
    description: str | None = None
    task_patterns: list[str] = Field(default_factory=list)
    phase_a: list[ToolStep] = Field(default_factory=list)
    phase_b: list[AgentStep] = Field(default_factory=list)
    dod: list[DodCheck] = Field(default_factory=list)

    @property
    def steps(self) -> list[ToolStep | AgentStep]:
        return [*self.phase_a, *self.phase_b]

    @property
    def total_steps(self) -> int:
        return len(self.phase_a) + len(self.phase_b)

    def snapshot(self) -> dict[str, Any]:
        """The recipe as JSON data, exactly what a run records and a fingerprint hashes."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)

    def fingerprint(self) -> str:
        return "sha256:" + sha256_json(self.snapshot())

    def refs(self) -> Iterator[tuple[str, str]]:
        """Every `$ref` path in the recipe with the JSON path where it stands."""
        for i, step in enumerate(self.phase_a):
            for name, value in step.args.items():
                if isinstance(value, Ref):
                    yield f"$.phase_a[{i}].args.{name}.$ref", value.ref
        for i, check in enumerate(self.dod):
            if isinstance(check, FileExists) and isinstance(check.path, Ref):
                yield f"$.dod[{i}].path.$ref", check.path.ref

    def required_args(self) -> set[str]:
        """Args the task must supply: every `task.args.X` the recipe reads."""
        names = set()
        for _, text in self.refs():
            arg = parse_ref(text).task_arg()
            if arg is not None:
                names.add(arg)
        return names
