"""What the core needs from the outside, as protocols; the store and skills implement them."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Protocol

from gateway.core.models import MessageKind
from gateway.core.records import (
    ClaimFence,
    MessageRecord,
    OpenedTurn,
    SkillFileRecord,
    SkillRecord,
    Trace,
)
from gateway.core.turn import QuotaSpend, TurnStart


class Meta(Protocol):
    """Small named values the store keeps (a model's JSON mode, vision refused, a sync mark)."""

    async def get_meta(self, key: str) -> str | None: ...

    async def set_meta(self, key: str, value: str) -> None: ...


class Checkpoint(Protocol):
    """After a deletion: no deleted row is left in a log beside the database (SQLite's WAL)."""

    async def checkpoint(self) -> None: ...


class TurnStarts(Protocol):
    """Opening a turn: its user message stored, its session found, its quota admitted."""

    async def start_turn(self, start: TurnStart) -> OpenedTurn: ...


class ConversationStore(TurnStarts, Protocol):
    """The part of the store the agent uses."""

    async def withhold_messages(self, message_ids: Sequence[int]) -> None: ...

    async def set_attachments_sent(
        self, message_id: int, kind: str, sent_as: str, note: str | None
    ) -> None: ...

    async def add_answer(
        self,
        session_id: int,
        text: str,
        *,
        kind: MessageKind,
        inbox_id: int | None,
        trace: Trace,
        now: float,
        user_id: str | None,
        spent: QuotaSpend | None = None,
        tools: Sequence[tuple[str, str]] = (),
        fence: ClaimFence | None = None,
    ) -> MessageRecord: ...


class SkillRecords(Protocol):
    """The skill registry's rows."""

    async def skill_records(self) -> list[SkillRecord]: ...


class SkillFiles(Protocol):
    """The store's record of the skill files as last read (`gateway.skills.files`)."""

    async def skill_files(self) -> dict[str, SkillFileRecord]: ...

    async def put_skill_files(self, files: list[SkillFileRecord], gone: list[str]) -> None: ...


class SkillRegistry(SkillRecords, SkillFiles, Meta, Protocol):
    """The part of the store that keeps the skill registry and run state."""

    async def put_skill_records(self, records: list[SkillRecord]) -> None: ...


class SkillProvider(Protocol):
    """Enabled skills as the agent sees them: an index to offer, bodies to load."""

    def offer(
        self, query: str, budget_tokens: int, exclude: Collection[str] = ()
    ) -> tuple[list[str], str]:
        """Names offered for `query` (none of `exclude`) and the section listing them."""
        ...

    @property
    def evaluating(self) -> frozenset[str]:
        """Enabled skills whose current text is still under evaluation (see holdout)."""
        ...

    @property
    def short_of_comparison(self) -> frozenset[str]:
        """Skills under evaluation with fewer rated answers without them than with them."""
        ...

    def load(self, name: str) -> str | None:
        """The body of an enabled skill, or None."""
        ...

    def tools_of(self, name: str) -> tuple[str, ...]:
        """The tools an enabled skill names (`allowed-tools`); () for most."""
        ...
