"""Prompt templates per appendix F: registry-backed, layered, tier variants, `{{slot}}`.

Layers, later overriding earlier: bundled (this package) → user home
(`$CONTROLROOM_HOME` or `~/.control-room/prompts`) → workspace
(`<workspace>/.control-room/prompts`). Registry entries merge by prompt type; a template
path is looked up in the workspace layer first, so a project can override one file.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from controlroom.domain.errors import PromptError
from controlroom.prompts.contracts import BUNDLED, Contract, schema_of

BUNDLED_DIR = Path(__file__).parent
TIERS = ("t1", "t3", "t5")
#: Closest available variant first (appendix F: t3 if t5 missing, t1 if t3 missing).
FALLBACK = {"t1": ("t1", "t3", "t5"), "t3": ("t3", "t1", "t5"), "t5": ("t5", "t3", "t1")}
_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_\-]*)\s*\}\}")


class TemplateEntry(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    label: str = ""
    variants: dict[str, str] = Field(min_length=1)
    #: The reply's output contract: a bundled contract id (`continuity_report`) or a JSON
    #: Schema file relative to a registry layer (`contracts/my_report.schema.json`).
    contract: str | None = None


class RegistryFile(BaseModel):
    model_config = ConfigDict(frozen=True, extra="allow")
    pipeline_templates: dict[str, TemplateEntry] = Field(default_factory=dict)


@dataclass(frozen=True)
class RenderedPrompt:
    """Seed 004, section 4: the system prompt says who the agent is and how it works (the
    template's text before its first `## ` heading, plus the output contract); the user
    message says what to do (the task and the slots)."""

    prompt_type: str
    variant: str
    system: str
    user: str
    #: Exactly what each input slot contributed, keyed by slot name.
    inputs: dict[str, str]
    contract: Contract | None = None

    @property
    def text(self) -> str:
        return f"{self.system}\n\n{self.user}" if self.system else self.user


def home_prompts_dir() -> Path:
    base = os.environ.get("CONTROLROOM_HOME")
    return (Path(base) if base else Path.home() / ".control-room") / "prompts"


class PromptRegistry:
    def __init__(self, layers: list[Path]) -> None:
        self.layers = [layer for layer in layers if layer.is_dir()]
        self.entries: dict[str, TemplateEntry] = {}
        for layer in self.layers:
            registry = layer / "prompts.json"
            if registry.is_file():
                self.entries.update(_read_registry(registry).pipeline_templates)
        self._cache: dict[Path, str] = {}

    @classmethod
    def for_workspace(cls, workspace: Path | None) -> PromptRegistry:
        layers = [BUNDLED_DIR, home_prompts_dir()]
        if workspace is not None:
            layers.append(workspace / ".control-room" / "prompts")
        return cls(layers)

    def prompt_types(self) -> list[str]:
        return sorted(self.entries)

    def variant_for(self, prompt_type: str, tier: str) -> tuple[str, Path]:
        entry = self.entries.get(prompt_type)
        if entry is None:
            raise PromptError(f"unknown prompt type '{prompt_type}'")
        if tier not in FALLBACK:
            raise PromptError(f"unknown tier '{tier}' (use one of {', '.join(TIERS)})")
        for candidate in FALLBACK[tier]:
            relative = entry.variants.get(candidate)
            if relative is not None:
                return candidate, self._locate(prompt_type, relative)
        raise PromptError(f"prompt type '{prompt_type}' has no usable variant")

    def render(
        self, prompt_type: str, tier: str, task_description: str, slots: Mapping[str, str]
    ) -> RenderedPrompt:
        """Fill `{{slot}}` with each slot's text; `{{task}}` is the task description.

        Input slots the template does not place are appended under their own heading,
        so an agent never silently loses an input the recipe gave it.
        """
        variant, path = self.variant_for(prompt_type, tier)
        template = self._read(path)
        used: set[str] = set()

        def fill(match: re.Match[str]) -> str:
            name = match.group(1)
            if name == "task":
                return task_description
            if name not in slots:
                raise PromptError(
                    f"template {path.name} uses '{{{{{name}}}}}' but the step does not read "
                    f"slot '{name}' (input slots: {', '.join(slots) or 'none'})"
                )
            used.add(name)
            return slots[name]

        role, task = split_template(template)
        if _PLACEHOLDER.search(role):
            raise PromptError(
                f"template {path.name}: the role part (before the first '## ' heading) "
                "must not contain placeholders: the task and slots go in the user message"
            )
        text = _PLACEHOLDER.sub(fill, task)
        extra = [name for name in slots if name not in used]
        if extra:
            text += "".join(f"\n\n## {name}\n{slots[name]}" for name in extra)
        contract = self.contract_for(prompt_type)
        system = role.strip()
        if contract is not None:
            system = f"{system}\n\n{contract.rendered()}" if system else contract.rendered()
        return RenderedPrompt(prompt_type, variant, system, text.strip(), dict(slots), contract)

    def contract_for(self, prompt_type: str) -> Contract | None:
        entry = self.entries.get(prompt_type)
        if entry is None or entry.contract is None:
            return None
        name = entry.contract
        if name in BUNDLED:
            return Contract(name, schema_of(BUNDLED[name]))
        path = self._locate(prompt_type, name)
        try:
            schema = json.loads(self._read(path))
        except ValueError as exc:
            raise PromptError(f"{path}: contract of '{prompt_type}' is not JSON: {exc}") from None
        if not isinstance(schema, dict):
            raise PromptError(f"{path}: the contract of '{prompt_type}' must be a JSON object")
        return Contract(path.stem.removesuffix(".schema"), schema)

    def _locate(self, prompt_type: str, relative: str) -> Path:
        if Path(relative).is_absolute() or ".." in Path(relative).parts:
            raise PromptError(f"template path '{relative}' of '{prompt_type}' must stay relative")
        for layer in reversed(self.layers):
            candidate = layer / relative
            if candidate.is_file():
                return candidate
        raise PromptError(f"template '{relative}' of prompt type '{prompt_type}' not found")

    def _read(self, path: Path) -> str:
        if path not in self._cache:
            self._cache[path] = path.read_text(encoding="utf-8")
        return self._cache[path]


def split_template(template: str) -> tuple[str, str]:
    """(role, task): the text before the first `## ` heading is who and how; the rest is
    what. A template with no heading is all task."""
    match = re.search(r"^## ", template, re.MULTILINE)
    if match is None:
        return "", template
    return template[: match.start()], template[match.start() :]


def _read_registry(path: Path) -> RegistryFile:
    try:
        return RegistryFile.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except (ValueError, ValidationError) as exc:
        raise PromptError(f"{path}: not a valid prompt registry: {exc}") from exc
