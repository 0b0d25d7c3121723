"""The real gateway on loopback, driven the way Telegram and an admin drive it.

Users' messages, button presses and replies are Bot API updates posted to
`/webhook/telegram` with the secret; what the bot sends lands in the fake Bot
API, where the users and the reviewer read it. Synthesis runs through the admin
API. `start` and `stop` rebuild the whole application on the same data dir: a
restart, as after a deploy.
"""

from __future__ import annotations

import itertools
import random
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

import aiohttp
from aiohttp import web

from gateway.app import PARTS, build_app
from gateway.channels.telegram.channel import TelegramChannel
from gateway.config import Settings
from gateway.core.tokens import estimate_tokens
from gateway.runtime.assembly import Parts
from gateway.skills.selection import index_entry, render_index
from tests.fakes.telegram_api import (
    FakeTelegramAPI,
    html_to_plain,
    make_callback_update,
    make_text_update,
)

WEBHOOK_SECRET = "eval-webhook-secret"
ADMIN_TOKEN = "eval-admin-token"
REVIEWER_ID = 900_001
ASK_COMMENT = "What went wrong?"
_RATE = re.compile(r"rate:(\d+):[+-]1")
_CARD = re.compile(r"<b>Proposal #(\d+)")


@dataclass(frozen=True)
class Answer:
    """What a user was shown: the visible text and the message carrying 👍/👎 (none on errors)."""

    text: str
    message: dict[str, Any] | None
    answer_id: int | None


@dataclass(frozen=True)
class TurnCost:
    """What the skills cost one turn, in estimated tokens, and whether holdout withheld one."""

    index_tokens: int
    loaded_tokens: int
    withheld: bool
    offered: int = 0


def rating_data(message: dict[str, Any], value: int) -> str:
    """The callback_data of the 👍 or 👎 button under an answer."""
    suffix = ":+1" if value > 0 else ":-1"
    for row in message["reply_markup"]["inline_keyboard"]:
        for button in row:
            data = str(button.get("callback_data", ""))
            if data.startswith("rate:") and data.endswith(suffix):
                return data
    raise LookupError("the answer has no rating buttons")


class Gateway:
    """One data dir, one fake Bot API, and the gateway started and stopped on them."""

    def __init__(self, settings: Settings, telegram: FakeTelegramAPI) -> None:
        self.settings = settings
        self.telegram = telegram
        self.url = ""
        self.starts = 0
        self._runner: web.AppRunner | None = None
        self._http: aiohttp.ClientSession | None = None
        # Update ids are unique for the whole run, as Telegram's are across restarts.
        self._updates = itertools.count(1)

    @property
    def parts(self) -> Parts:
        if self._runner is None:
            raise RuntimeError("the gateway is not running")
        return self._runner.app[PARTS]

    @property
    def http(self) -> aiohttp.ClientSession:
        if self._http is None:
            raise RuntimeError("the gateway is not running")
        return self._http

    async def start(self, holdout_seed: str) -> None:
        """Build and serve the app; the holdout draws come from `holdout_seed`."""
        channel = TelegramChannel(self.settings, private_interval=0.0, group_per_minute=0.0)
        runner = web.AppRunner(build_app(self.settings, channels=[channel]), access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        self._runner = runner
        self.url = f"http://127.0.0.1:{runner.addresses[0][1]}"
        if self._http is None:
            self._http = aiohttp.ClientSession()
        # A failed update is retried at once rather than after seconds: the run waits for it.
        self.parts.worker.backoff = lambda attempt: 0.01
        self.parts.agent.rng = random.Random(holdout_seed)
        self.starts += 1
        await self.idle()

    @contextmanager
    def every_skill(self) -> Iterator[None]:
        """Turns without the holdout: a panel that never rates gives its comparison nothing.

        Withholding skills from the held-out users would only add the holdout's draws to
        what they measure, and at first far more than later: a skill whose comparison lags
        is withheld from half the turns until the ratings catch up.
        """
        agent = self.parts.agent
        kept = agent.config
        agent.config = replace(kept, skill_holdout=0.0)
        try:
            yield
        finally:
            agent.config = kept

    async def stop(self) -> None:
        """Stop the app as a service manager would (stored work resumes at the next start)."""
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def close(self) -> None:
        await self.stop()
        if self._http is not None:
            await self._http.close()
            self._http = None

    @property
    def patience(self) -> float:
        """Seconds a turn may take: every model call of every tool round timing out and retried."""
        s = self.settings
        return s.llm_timeout_seconds * (s.llm_max_retries + 1) * 5 + 10

    async def idle(self) -> None:
        """Wait until every stored update is handled and every card job is done."""
        await self.parts.worker.wait_idle(self.patience)
        if self.parts.admins.cards is not None:
            await self.parts.admins.cards.wait_idle(self.patience)

    async def post(self, update: dict[str, Any]) -> None:
        """Post one update as Telegram does and wait until it was handled."""
        headers = {"X-Telegram-Bot-Api-Secret-Token": WEBHOOK_SECRET}
        async with self.http.post(
            f"{self.url}/webhook/telegram", json=update, headers=headers
        ) as resp:
            if resp.status != 200:
                raise RuntimeError(f"webhook answered {resp.status}: {await resp.text()}")
        await self.idle()

    async def api(self, method: str, path: str, body: Any = None) -> Any:
        """Call the admin API; raises on any answer but 200."""
        headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
        async with self.http.request(
            method, f"{self.url}/admin/api{path}", json=body, headers=headers
        ) as resp:
            if resp.status != 200:
                raise RuntimeError(f"{method} {path} answered {resp.status}: {await resp.text()}")
            return await resp.json()

    # ---- a user's side -------------------------------------------------------------------

    def _messages(self, chat_id: int, after: int = 0) -> list[dict[str, Any]]:
        """Messages the bot sent to a chat (as they stand now), after a message id."""
        return [
            m
            for (c, mid), m in sorted(self.telegram.messages.items())
            if c == chat_id and mid > after
        ]

    def _last_id(self, chat_id: int) -> int:
        return max((mid for c, mid in self.telegram.messages if c == chat_id), default=0)

    async def ask(self, user_id: int, text: str) -> Answer:
        """A user sends a message; returns the answer as they see it."""
        before = self._last_id(user_id)
        await self.post(make_text_update(next(self._updates), text, **_person(user_id)))
        sent = self._messages(user_id, before)
        visible = "\n\n".join(html_to_plain(str(m.get("text", ""))) for m in sent)
        rated = [m for m in sent if m.get("reply_markup")]
        if not rated:
            return Answer(visible, None, None)
        match = _RATE.fullmatch(rating_data(rated[-1], 1))
        return Answer(visible, rated[-1], int(match.group(1)) if match else None)

    async def rate(self, user_id: int, answer: Answer, value: int) -> dict[str, Any] | None:
        """A user presses 👍 or 👎; returns the bot's "what went wrong?" prompt, if it asked."""
        assert answer.message is not None
        before = self._last_id(user_id)
        await self.press(user_id, answer.message, rating_data(answer.message, value))
        asked = [
            m
            for m in self._messages(user_id, before)
            if str(m.get("text", "")).startswith(ASK_COMMENT)
        ]
        return asked[-1] if asked else None

    async def reply(self, user_id: int, to: dict[str, Any], text: str) -> None:
        """A user replies to one of the bot's messages (a ForceReply prompt)."""
        update = make_text_update(
            next(self._updates), text, reply_to_message=to, **_person(user_id)
        )
        await self.post(update)

    async def press(self, user_id: int, message: dict[str, Any], data: str) -> None:
        """A user presses a button carrying `data` under one of the bot's messages."""
        person = _person(user_id)
        update = make_callback_update(
            next(self._updates),
            data,
            chat_id=message["chat"]["id"],
            user_id=user_id,
            message_id=message["message_id"],
            message_text=str(message.get("text", "")),
            reply_markup=message.get("reply_markup"),
            username=person["username"],
            first_name=person["first_name"],
        )
        await self.post(update)

    # ---- the reviewer's side -------------------------------------------------------------

    def pending_cards(self, admin_id: int) -> list[tuple[int, dict[str, Any]]]:
        """(proposal id, message) of the cards in an admin's chat that still have buttons."""
        cards = []
        for message in self._messages(admin_id):
            match = _CARD.match(str(message.get("text", "")))
            if match and message.get("reply_markup"):
                cards.append((int(match.group(1)), message))
        return cards

    def newest(self, chat_id: int, starts_with: str) -> dict[str, Any] | None:
        """The newest message in a chat whose text starts with `starts_with`."""
        found = [
            m for m in self._messages(chat_id) if str(m.get("text", "")).startswith(starts_with)
        ]
        return found[-1] if found else None

    # ---- measurement ---------------------------------------------------------------------

    async def cost(self, answer_id: int) -> TurnCost:
        """The skill index and skill bodies that reached the model in one turn, from its trace."""
        trace = await self.parts.store.get_trace(answer_id)
        if trace is None:
            return TurnCost(0, 0, False)
        library = self.parts.catalog.library
        entries = [index_entry(n, library.read(n).description) for n in trace.skills_offered]
        loaded = sum(estimate_tokens(library.read(n).body) for n in trace.skills_loaded)
        return TurnCost(
            estimate_tokens(render_index(entries)),
            loaded,
            bool(trace.skills_withheld),
            len(trace.skills_offered),
        )


def _person(user_id: int) -> dict[str, Any]:
    """The private chat and Telegram identity of a simulated user or the reviewer."""
    name = "Reviewer" if user_id == REVIEWER_ID else f"User{user_id}"
    return {"chat_id": user_id, "user_id": user_id, "username": name.lower(), "first_name": name}
