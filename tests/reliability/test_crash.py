"""SIGKILL in the middle of a stream of webhooks on both channels, then a restart on the same data.

Every update that got a 200 is answered, in order within its chat, and exactly once,
counted at the fake platforms; the one exception is the window no gateway can close: an
answer Telegram (sendMessage) or LINE (a reply token) had accepted when the process died,
before it could record that, is sent again after the restart (docs/RELIABILITY.md).
A LINE push in the same window is not: its stored retry key makes LINE refuse the repeat.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from gateway.config import Settings
from tests.fakes.line_api import FakeLineAPI, sign, text_event, webhook_body
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.telegram_api import FakeTelegramAPI, make_text_update
from tests.line_support import PUSH, REPLY
from tests.line_support import SECRET as LINE_SECRET
from tests.reliability.process import Server
from tests.telegram_harness import SECRET as TG_SECRET

TG_CHATS = [3001 + n for n in range(6)]
LINE_USERS = [f"U{n:032x}" for n in range(0xA1, 0xA7)]
HOLD = 3.0
"""Seconds the fakes hold their answers to sends in round 2, so the kill finds them in flight."""


def echo(body: dict[str, Any]) -> str:
    return f"re: {body['messages'][-1]['content']}"


@dataclass
class Update:
    """One webhook as the platform sends it, and whether the gateway acknowledged it."""

    channel: str
    chat: str
    text: str
    body: bytes
    headers: dict[str, str]
    acked: bool = False


@dataclass
class Stream:
    """Builds and posts the updates; remembers every one."""

    telegram: FakeTelegramAPI
    line: FakeLineAPI
    sent: list[Update] = field(default_factory=list)
    _ids: int = 0

    def telegram_update(self, chat: int, text: str) -> Update:
        self._ids += 1
        update = make_text_update(self._ids, text, chat_id=chat, user_id=chat)
        headers = {"X-Telegram-Bot-Api-Secret-Token": TG_SECRET, "Content-Type": "application/json"}
        return Update("telegram", str(chat), text, json.dumps(update).encode(), headers)

    def line_update(self, user: str, text: str, *, redelivered: bool = False) -> Update:
        token = self.line.issue_reply_token(to=user)
        event = text_event(text, user_id=user, reply_token=token, redelivery=redelivered)
        body = webhook_body(event)
        headers = {"X-Line-Signature": sign(LINE_SECRET, body), "Content-Type": "application/json"}
        return Update("line", user, text, body, headers)

    def round(self, n: int, *, pushed: Callable[[int], bool] = lambda i: False) -> list[Update]:
        tg = [self.telegram_update(chat, f"r{n} tg {chat}") for chat in TG_CHATS]
        ln = [
            self.line_update(user, f"r{n} line {i}", redelivered=pushed(i))
            for i, user in enumerate(LINE_USERS)
        ]
        return tg + ln

    async def post(self, http: aiohttp.ClientSession, url: str, update: Update) -> None:
        if update not in self.sent:
            self.sent.append(update)
        path = "/webhook/telegram" if update.channel == "telegram" else "/webhook/line"
        try:
            async with http.post(url + path, data=update.body, headers=update.headers) as resp:
                update.acked = update.acked or resp.status == 200
        except aiohttp.ClientError:
            pass  # the process died under it: the platform would deliver it again


def answers(telegram: FakeTelegramAPI, line: FakeLineAPI) -> Counter[str]:
    """How often each answer text reached its chat."""
    texts = [t for chat in TG_CHATS for t in telegram.sent_texts(chat)]
    texts += [t for user in LINE_USERS for t in line.delivered_texts(user)]
    return Counter(texts)


async def test_sigkill_mid_stream_loses_nothing_and_repeats_only_sends_caught_in_flight(
    tmp_path: Path, make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    fake_llm.default = echo
    async with FakeTelegramAPI() as telegram, FakeLineAPI() as line:
        env = {
            "SKILLGATE_DATA_DIR": str(tmp_path / "data"),
            "SKILLGATE_SYNTHESIS_INTERVAL_MINUTES": "0",
            "LLM_BASE_URL": fake_llm.base_url,
            "LLM_MODEL": "fake-model",
            "TELEGRAM_BOT_TOKEN": telegram.token,
            "TELEGRAM_WEBHOOK_SECRET": TG_SECRET,
            "TELEGRAM_API_BASE_URL": telegram.base_url,
            "LINE_CHANNEL_SECRET": LINE_SECRET,
            "LINE_CHANNEL_ACCESS_TOKEN": line.access_token,
            "LINE_API_BASE_URL": line.base_url,
        }
        stream = Stream(telegram, line)
        first = Server(env)
        await first.start()
        async with aiohttp.ClientSession() as http:
            # Round 1: answered and recorded before anything goes wrong.
            round1 = stream.round(1)
            for update in round1:
                await stream.post(http, first.url, update)
            await wait_answered(telegram, line, round1)

            # Round 2: every send is held by the fakes, so the kill catches it in flight.
            # Half the LINE events are redeliveries, whose answers go by push.
            telegram.set_delay("sendMessage", HOLD)
            line.set_delay(REPLY, HOLD)
            line.set_delay(PUSH, HOLD)
            round2 = stream.round(2, pushed=lambda i: i % 2 == 1)
            for update in round2:
                await stream.post(http, first.url, update)
            # Round 3: stored, and waiting behind round 2 in each chat.
            round3 = stream.round(3)
            for update in round3:
                await stream.post(http, first.url, update)
            await wait_in_flight(telegram, line)
            # Round 4 is posted while the process dies: some get 200, some nothing.
            round4 = stream.round(4)
            posting = asyncio.gather(*(stream.post(http, first.url, u) for u in round4))
            await first.kill()
            await posting
            acked = [u for u in stream.sent if u.acked]
            assert len(acked) >= len(round1) + len(round2) + len(round3)

            # The fakes finish what they held (Telegram creates those messages now).
            await telegram.wait_for("sendMessage", len(TG_CHATS) * 2, timeout=10)
            telegram.set_delay("sendMessage", 0)
            line.set_delay(REPLY, 0)
            line.set_delay(PUSH, 0)

            second = Server(env)
            await second.start()
            # The platforms deliver again what got no 200, and (harmlessly) some that did.
            for update in [u for u in stream.sent if not u.acked] + round3:
                await stream.post(http, second.url, update)
            await wait_answered(telegram, line, stream.sent)
            async with asyncio.timeout(20):
                while (await second.health() or {}).get("inbox_pending") != 0:
                    await asyncio.sleep(0.05)
            assert await second.stop() == 0

    counts = answers(telegram, line)
    in_flight = {f"re: {u.text}" for u in round2 if u.channel == "telegram"}
    in_flight |= {f"re: {u.text}" for i, u in enumerate(round2[len(TG_CHATS) :]) if i % 2 == 0}
    for update in stream.sent:
        text = f"re: {update.text}"
        if text in in_flight:
            assert 1 <= counts[text] <= 2, (text, counts[text])
        else:
            assert counts[text] == 1, (text, counts[text])
    pushed = {f"re: {u.text}" for i, u in enumerate(round2[len(TG_CHATS) :]) if i % 2}
    assert all(counts[t] == 1 for t in pushed)  # the retry key held
    assert all(counts[t] == 2 for t in in_flight)  # the documented window, exactly
    for chat in TG_CHATS:
        assert first_seen(telegram.sent_texts(chat)) == [f"re: r{n} tg {chat}" for n in range(1, 5)]
    for i, user in enumerate(LINE_USERS):
        assert first_seen(line.delivered_texts(user)) == [f"re: r{n} line {i}" for n in range(1, 5)]


def first_seen(texts: list[str]) -> list[str]:
    """Texts in the order they first arrived."""
    return list(dict.fromkeys(texts))


async def wait_answered(
    telegram: FakeTelegramAPI, line: FakeLineAPI, updates: list[Update], timeout: float = 30
) -> None:
    """Until every update's answer reached its chat."""
    async with asyncio.timeout(timeout):
        while True:
            counts = answers(telegram, line)
            if all(counts[f"re: {u.text}"] for u in updates):
                return
            await asyncio.sleep(0.05)


async def wait_in_flight(telegram: FakeTelegramAPI, line: FakeLineAPI) -> None:
    """Until every round-2 send reached the fakes (whose answers they still hold)."""
    async with asyncio.timeout(30):
        while True:
            held = [c for c in telegram.calls_of("sendMessage") if c.status is None]
            replies = [c for c in line.calls_to(REPLY) if c.status == 200]
            pushes = [c for c in line.calls_to(PUSH) if c.status == 200]
            done = len(LINE_USERS) // 2
            lines = len(replies) == len(LINE_USERS) + done and len(pushes) == done
            if len(held) == len(TG_CHATS) and lines:
                return
            await asyncio.sleep(0.01)
