"""Run a directory of real platform payloads through the webhooks and report each outcome.

    python -m tests.corpus_run CORPUS_DIR [--verbose]

CORPUS_DIR holds `telegram/*.json` (Bot API updates) and `line/*.json` (webhook bodies).
Each payload gets fresh ids (update_id; webhookEventId, replyToken, timestamp; an image set
restarts at its first image), is posted to the real app's webhook against the loopback fakes
(the Telegram bot is user 42, as replies and text mentions in the corpus name it), and is
waited for. Per payload the report
says the HTTP status, what the user saw (model answer, notice, button answered, nothing)
and any WARNING or traceback logged. It exits 1 on a 5xx, a traceback, or a user's message
in a 1:1 chat that got no answer at all.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import logging
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gateway.config import Settings
from tests.fakes.openai_server import FakeOpenAI
from tests.line_support import LineRig, line_rig
from tests.telegram_harness import Gateway, telegram_gateway

FAKE_ANSWER = "Hello from the fake model."
CORPUS_BOT_ID = 42
_USER_KEYS = ("message",)
"""What a user says to the bot (edits are not answered again; business messages and channel
posts are not the bot's to answer)."""


@dataclass
class Outcome:
    """What one payload (one LINE event) led to."""

    name: str
    status: int
    user_message: bool
    private: bool
    answered: int = 0
    notices: list[str] = field(default_factory=list)
    acknowledged: int = 0
    warnings: list[str] = field(default_factory=list)
    tracebacks: int = 0
    album: str | None = None
    later_in_album: bool = False
    """Another item of an album that got its notice already."""

    @property
    def silent(self) -> bool:
        return not (self.answered or self.notices or self.acknowledged)

    @property
    def verdict(self) -> str:
        if self.status >= 500 or self.tracebacks:
            return "FAIL"
        if self.user_message and self.private and self.silent:
            return "album-item" if self.later_in_album else "SILENT-DROP"
        if self.answered:
            return "answered"
        if self.notices:
            return "notice"
        if self.acknowledged:
            return "acknowledged"
        return "silent"


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def _settings(root: Path) -> Callable[..., Settings]:
    def make(**values: Any) -> Settings:
        values.setdefault("data_dir", root / "data")
        values.setdefault("llm_timeout_seconds", 5)
        return Settings(_env_file=None, **values)  # type: ignore[call-arg]

    return make


@asynccontextmanager
async def _watching(records: _Records, outcome: Outcome) -> AsyncIterator[None]:
    start = len(records.records)
    yield
    for record in records.records[start:]:
        outcome.warnings.append(f"{record.levelname} {record.getMessage()[:160]}")
        if record.exc_info:
            outcome.tracebacks += 1


async def run_telegram(files: list[Path], llm: FakeOpenAI, records: _Records) -> list[Outcome]:
    ids = itertools.count(int(time.time()))
    out: list[Outcome] = []
    with tempfile.TemporaryDirectory() as tmp:
        # The corpus's replies and text mentions name the bot as user 42.
        bot = {"before_start": lambda fake: setattr(fake, "bot_id", CORPUS_BOT_ID)}
        async with telegram_gateway(_settings(Path(tmp)), llm, **bot) as gw:
            for path in files:
                update = json.loads(path.read_text())
                update["update_id"] = next(ids)
                out.append(await _one_telegram(gw, path.name, update, llm, records))
    return out


async def _one_telegram(
    gw: Gateway, name: str, update: dict[str, Any], llm: FakeOpenAI, records: _Records
) -> Outcome:
    message = next((update[k] for k in _USER_KEYS if isinstance(update.get(k), dict)), None)
    chat = message.get("chat") if message else None
    sender = message.get("from") if message else None
    user = bool(message and not (sender or {}).get("is_bot")) or "callback_query" in update
    private = isinstance(chat, dict) and chat.get("type") == "private"
    private = private or "callback_query" in update
    asked, calls = len(llm.requests), len(gw.fake.calls)
    outcome = Outcome(name, 0, user, private)
    async with _watching(records, outcome):
        resp = await gw.post(update)
        outcome.status = resp.status
        await gw.idle()
    for call in gw.fake.calls[calls:]:
        if call.method == "sendMessage" and call.status == 200:
            outcome.notices.append(str(call.params.get("text", ""))[:60])
        elif call.method == "answerCallbackQuery":
            outcome.acknowledged += 1
    outcome.answered = len(llm.requests) - asked
    if outcome.answered:
        outcome.notices = []
    album = message.get("media_group_id") if message else None
    outcome.album = str(album) if album is not None else None
    return outcome


async def run_line(files: list[Path], llm: FakeOpenAI, records: _Records) -> list[Outcome]:
    out: list[Outcome] = []
    sets: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        async with line_rig(_settings(Path(tmp)), llm) as rig:
            for path in files:
                body = json.loads(path.read_text())
                out.extend(await _one_line(rig, path.name, body, sets, records))
    return out


async def _one_line(
    rig: LineRig, name: str, body: dict[str, Any], sets: dict[str, str], records: _Records
) -> list[Outcome]:
    events = [e for e in body.get("events", []) if isinstance(e, dict)]
    for event in events:
        image_set = (event.get("message") or {}).get("imageSet")
        if isinstance(image_set, dict) and "id" in image_set:
            # Image set ids repeat across the sources: a set starts again at its first image.
            if image_set.get("index") == 1 or str(image_set["id"]) not in sets:
                sets[str(image_set["id"])] = uuid.uuid4().hex
            image_set["id"] = sets[str(image_set["id"])]
        event["webhookEventId"] = uuid.uuid4().hex.upper()[:26]
        event["timestamp"] = int(time.time() * 1000)
        source = event.get("source") or {}
        to = source.get("groupId") or source.get("roomId") or source.get("userId")
        if "replyToken" in event:
            event["replyToken"] = rig.fake.issue_reply_token(to=to)
    body["destination"] = rig.fake.bot_user_id
    raw = json.dumps(body).encode()
    calls = len(rig.fake.calls)
    whole = Outcome(name, 0, False, False)
    async with _watching(records, whole):
        resp = await rig.post(body=raw)
        whole.status = resp.status
        await rig.idle()
    if not events:
        return [whole]
    # Events of one body are told apart by their reply tokens; pushes (a redelivery, an
    # expired token) go to the first event of their chat that got nothing by reply.
    replied: dict[str, list[str]] = {}
    pushed: dict[str, list[list[str]]] = {}
    for call in rig.fake.calls[calls:]:
        payload = call.body if isinstance(call.body, dict) else {}
        texts = [str(m.get("text", m.get("altText", "")))[:60] for m in payload.get("messages", [])]
        if call.status != 200:
            continue
        if call.path.endswith("/message/reply"):
            replied.setdefault(str(payload.get("replyToken")), []).extend(texts)
        elif call.path.endswith("/message/push"):
            pushed.setdefault(str(payload.get("to")), []).append(texts)
    outcomes = []
    for index, event in enumerate(events):
        source = event.get("source") or {}
        kind = f"{event.get('type')}/{(event.get('message') or {}).get('type', '')}".rstrip("/")
        one = Outcome(
            f"{name}#{index} {kind}",
            whole.status,
            # A LINE press needs no answer; an edit is not answered again.
            event.get("type") == "message" and event.get("mode") != "standby",
            source.get("type") == "user",
        )
        one.notices = replied.pop(str(event.get("replyToken")), [])
        one.album = _image_set(event)
        outcomes.append(one)
    # Messages first: a greeting or a notice is pushed too, but a user's message must not
    # be counted as answered by someone else's push.
    order = sorted(range(len(events)), key=lambda i: not outcomes[i].user_message)
    for i in order:
        source = events[i].get("source") or {}
        chat = source.get("groupId") or source.get("roomId") or source.get("userId")
        if not outcomes[i].notices and pushed.get(str(chat)):
            outcomes[i].notices = pushed[str(chat)].pop(0)
    for one in outcomes:
        one.answered = sum(t == FAKE_ANSWER for t in one.notices)
        one.notices = [t for t in one.notices if t != FAKE_ANSWER]
    outcomes[-1].warnings, outcomes[-1].tracebacks = whole.warnings, whole.tracebacks
    return outcomes


def _image_set(event: dict[str, Any]) -> str | None:
    image_set = (event.get("message") or {}).get("imageSet")
    return str(image_set["id"]) if isinstance(image_set, dict) and "id" in image_set else None


async def main(corpus: Path, verbose: bool) -> int:
    records = _Records()
    root = logging.getLogger()
    root.addHandler(records)
    try:
        async with FakeOpenAI() as llm:
            results = await run_telegram(sorted((corpus / "telegram").glob("*.json")), llm, records)
            results += await run_line(sorted((corpus / "line").glob("*.json")), llm, records)
    finally:
        root.removeHandler(records)
    noticed: set[str] = set()
    for r in results:
        if r.album is not None:
            r.later_in_album = r.album in noticed
            noticed.add(r.album)
    tally = Counter(r.verdict for r in results)
    for r in results:
        if verbose or r.verdict in ("FAIL", "SILENT-DROP") or r.warnings:
            said = "; ".join(r.notices)[:80]
            print(f"{r.verdict:12} {r.status} {r.name}  {said}")
            for w in r.warnings:
                print(f"{'':17}{w}")
    print(f"\n{len(results)} payloads/events:", dict(sorted(tally.items())))
    return 1 if tally["FAIL"] or tally["SILENT-DROP"] else 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    sys.exit(asyncio.run(main(args.corpus, args.verbose)))
