"""What must not change: a snapshot of the database, the data dir and the fakes' deliveries."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from sqlite_utils import Database

from tests.cards_support import Rig

TABLES = {
    "inbox": "select channel, update_id from inbox order by id",
    "sessions": "select id, channel, chat_id, finished_at from sessions order by id",
    "messages": "select id, session_id, role, kind, text from messages order by id",
    "feedback": "select message_id, user_id, rating, comment from feedback order by id",
    "proposals": "select id, status, decided_by, reason, promoted_at from proposals order by id",
    "rejections": "select proposal_id, reason from rejections order by id",
    "skills": "select slug, source, enabled, review_status, content_hash from skills order by slug",
    "awaiting": "select channel, chat_id, user_id, purpose, ref from awaiting order by 1, 2, 3",
    "runs": "select id, status from synthesis_runs order by id",
    "meta": "select key, value from meta order by key",
}
KEYS = (*TABLES, "files", "sent", "model_calls")
"""Every part of a snapshot; `unchanged: all` in the corpus means all of them."""


def _tables(db: Database) -> dict[str, list[tuple[Any, ...]]]:
    return {name: [tuple(r.values()) for r in db.query(sql)] for name, sql in TABLES.items()}


def data_files(data_dir: Path) -> list[tuple[str, str]]:
    """Every file of the data dir but the database, with a hash of its content."""
    found = []
    for path in sorted(data_dir.rglob("*")):
        if path.is_file() and not path.name.startswith("skillgate.db"):
            digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
            found.append((str(path.relative_to(data_dir)), digest))
    return found


def sent(rig: Rig) -> int:
    """Messages the bots delivered so far (Telegram sends and LINE replies and pushes)."""
    telegram = [c for c in rig.telegram.calls_of("sendMessage") if c.status == 200]
    return len(telegram) + len(rig.line.delivered_messages())


async def snapshot(rig: Rig) -> dict[str, Any]:
    """The state a hostile request must leave alone."""
    state: dict[str, Any] = await rig.parts.store.run(_tables)
    state["files"] = data_files(rig.parts.settings.data_dir)
    state["sent"] = sent(rig)
    state["model_calls"] = len(rig.llm.requests)
    return state


async def inbox_errors(rig: Rig) -> list[tuple[str, str]]:
    """Stored updates whose handler raised (a hostile input must be handled, not crash it)."""
    rows = await rig.parts.store.run(
        lambda db: list(
            db.query("select update_id, last_error from inbox where last_error is not null")
        )
    )
    return [(str(r["update_id"]), str(r["last_error"])) for r in rows]
