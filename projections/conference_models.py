"""Typed views of conference rounds."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class _View(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RoundReceipt(_View):
    receipt_id: str
    tool: str
    args: dict[str, Any]
    summary: str
    duration_ms: float


class RefusedCall(_View):
    tool: str
    reason: str


class RoundCall(_View):
    micro_step: str
    tier: str
    model: str


class RoundReply(_View):
    role: str
    status: str = Field(description="accepted, abstained, rejected, or pending")
    text: str | None
    reason: str | None = Field(description="why a rejected reply was rejected")
    citations: list[dict[str, Any]]
    calls: list[RoundCall]


class RoundSummary(_View):
    round_id: str
    question: str
    status: str
    opened_at: str
    accepted: int
    abstained: int
    rejected: int
    issue_id: str | None


class RoundDetail(_View):
    round_id: str
    question: str
    status: str = Field(description="open, collected, closed or failed")
    roles: list[str]
    allowed_tools: list[str]
    require_tool: bool
    opened_at: str
    updated_at: str
    receipts: list[RoundReceipt]
    refused: list[RefusedCall]
    evidence: str | None
    replies: list[RoundReply]
    issue_id: str | None
    error: str | None
    transcript: str
