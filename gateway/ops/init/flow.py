"""The questions of `skillgate init`, in order: the model, the bots, how updates arrive, admins.

Each answer that can be checked is checked at once against the real service (the model
with doctor's probe, a platform's settings with its own check), and a failed check
offers to try again or to go on without that part. What each platform asks is what its
spec declares (`gateway.channels.interview`); this module only asks.
"""

from __future__ import annotations

import itertools
import os
import re
from dataclasses import dataclass
from typing import TypeVar, cast

import questionary
from questionary import Choice

from gateway.channels.spec import PlatformSpec
from gateway.errors import ChannelError, ModelError
from gateway.ops.init.answers import Answers, PlatformAnswers, interviewed, new_secret
from gateway.ops.init.model import (
    LOCAL,
    SERVERS,
    check_local,
    check_model,
    install_local,
    list_models,
    server_for,
)

_HTTP = r"https?://[^/\s]+\S*"
_HTTPS = r"https://[^/\s]+\S*"
OTHER_MODEL = "(another name)"
T = TypeVar("T")


@dataclass(frozen=True)
class Where:
    """Where the proxy forwards to and how long to wait for an admin's message."""

    listen_host: str
    listen_port: int
    wait_seconds: float


def say(text: str) -> None:
    print(text, flush=True)


def together(labels: list[str]) -> str:
    """ "A", "A and B", "A, B and C"."""
    return labels[0] if len(labels) == 1 else f"{', '.join(labels[:-1])} and {labels[-1]}"


async def _select(message: str, choices: list[tuple[str, T]], default: T | None = None) -> T:
    """One of `choices` (title, value), by arrow keys and Enter."""
    options = [Choice(title, value) for title, value in choices]
    chosen = next((c for c in options if c.value == default), None)
    answer = await questionary.select(message, choices=options, default=chosen).unsafe_ask_async()
    return cast(T, answer)


async def _text(message: str, default: str = "", pattern: str = "") -> str:
    def valid(value: str) -> bool | str:
        if not pattern or re.fullmatch(pattern, value.strip()):
            return True
        return "that does not look right; try again"

    answer = await questionary.text(message, default=default, validate=valid).unsafe_ask_async()
    return str(answer).strip()


async def _secret(message: str, current: str = "", *, required: bool = True) -> str:
    hint = " (Enter keeps the current one)" if current else ""

    def valid(value: str) -> bool | str:
        return bool(value.strip() or current or not required) or "it is needed; paste it"

    answer = await questionary.password(message + hint, validate=valid).unsafe_ask_async()
    return str(answer).strip() or current


async def _yes(message: str, default: bool = True) -> bool:
    return bool(await questionary.confirm(message, default=default).unsafe_ask_async())


class Interview:
    """Asks, checks, and fills in Answers; the `Asker` each platform's setup asks through."""

    def __init__(self, where: Where, old: dict[str, str]) -> None:
        self.listen_host, self.listen_port = where.listen_host, where.listen_port
        self.wait_seconds = where.wait_seconds
        self.old = old
        self.answers = Answers()
        self.platforms = interviewed()

    async def run(self) -> Answers:
        a = self.answers
        a.admin_token = self.old.get("SKILLGATE_ADMIN_TOKEN") or new_secret()
        a.data_dir = self.old.get("SKILLGATE_DATA_DIR", "")
        await self.model()
        if self.platforms:
            chosen = await _select(
                "Which bots should it answer?",
                [*self._bot_choices(), ("none for now (only `skillgate chat`)", ())],
                default=self._bots_before(),
            )
            for spec in chosen:
                await self.platform(spec)
        return a

    def _bot_choices(self) -> list[tuple[str, tuple[PlatformSpec, ...]]]:
        """Each platform alone, then each combination of them."""
        return [
            (together([p.label for p in chosen]), chosen)
            for size in range(1, len(self.platforms) + 1)
            for chosen in itertools.combinations(self.platforms, size)
        ]

    def _bots_before(self) -> tuple[PlatformSpec, ...]:
        """The platforms the old env file set up (the first one when none)."""
        before = tuple(
            p for p in self.platforms if any(s.required and s.var in self.old for s in p.settings)
        )
        return before or tuple(self.platforms[:1])

    # ---- the Asker a platform's setup asks through -------------------------------------

    def say(self, text: str) -> None:
        say(text)

    async def select(
        self, message: str, choices: list[tuple[str, T]], default: T | None = None
    ) -> T:
        return await _select(message, choices, default)

    async def text(self, message: str, default: str = "", pattern: str = "") -> str:
        return await _text(message, default, pattern)

    async def yes(self, message: str, default: bool = True) -> bool:
        return await _yes(message, default)

    # ---- the model ---------------------------------------------------------------------

    async def model(self) -> None:
        a = self.answers
        url = self.old.get("LLM_BASE_URL", "")
        key = self.old.get("LLM_API_KEY", "")
        name = self.old.get("LLM_MODEL", "")
        while True:
            known = server_for(url) if url else None
            server = await _select(
                "Where does the model run?",
                [(s.label, s) for s in SERVERS],
                default=known or (SERVERS[-1] if url else SERVERS[0]),
            )
            if server.local:
                if await self.local_model():
                    return
                continue
            url = await _text(
                "Its base URL (ends in /v1):",
                url if known is server or not server.base_url else server.base_url,
                _HTTP,
            )
            key = await _secret(
                "API key" + ("" if server.needs_key else " (empty if it needs none)"),
                key,
                required=server.needs_key,
            )
            name = await self._model_name(url, key, name or server.model)
            if not name:
                continue
            say(f"Trying {name} at {url} ...")
            checks = await check_model(url, name, key)
            for check in checks:
                say("  " + "\n  ".join(check.lines()))
            if not any(c.status == "fail" for c in checks):
                break
            what = await _select(
                "The model does not work yet:",
                [
                    ("change the model settings", "again"),
                    ("keep them anyway (fix the server later)", "keep"),
                    ("go on without a model for now", "skip"),
                ],
            )
            if what == "keep":
                break
            if what == "skip":
                return
        a.llm_base_url, a.llm_api_key, a.llm_model = url.rstrip("/"), key, name

    async def local_model(self) -> bool:
        """The bundled small model: installed if missing, started and probed; True if chosen."""
        if (failed := install_local()) is not None:
            say(f"  ✗ {failed}")
            return False
        say("Starting the small model on this machine ...")
        checks = await check_local(LOCAL.model)
        for check in checks:
            say("  " + "\n  ".join(check.lines()))
        if any(c.status == "fail" for c in checks):
            return False
        say("  It is tiny: good for trying the gateway, not for users.")
        self.answers.llm_local_model = LOCAL.model
        return True

    async def _model_name(self, url: str, key: str, suggested: str) -> str:
        """The model to use: chosen from what the server lists, or typed; "" to start over."""
        try:
            names = await list_models(url, key)
        except ModelError as exc:
            say(f"  ✗ {exc}")
            if not await _yes("Type the model's name anyway?", default=False):
                return ""
            names = []
        if names:
            default = suggested if suggested in names else names[0]
            choice = await _select(
                "Which model?",
                [(n, n) for n in names[:40]] + [(OTHER_MODEL, OTHER_MODEL)],
                default=default,
            )
            if choice != OTHER_MODEL:
                return str(choice)
        return await _text("The model's name:", suggested, r"\S+")

    # ---- a platform ------------------------------------------------------------------

    async def platform(self, spec: PlatformSpec) -> None:
        """Its settings asked and checked, then what its setup asks; left out if given up."""
        found, setup = None, spec.load_setup()
        values = {
            s.var: self.old.get(s.var, "") if s.ask else self._unasked(s.var, s.default)
            for s in spec.settings
        }
        for var in (spec.polling_var, spec.webhook_secret):
            if var is not None and var in self.old:
                values[var] = self.old[var]
        while True:
            for s in (s for s in spec.settings if s.ask):
                if s.secret:
                    values[s.var] = await _secret(s.ask, values[s.var], required=s.required)
                else:
                    values[s.var] = await _text(s.ask, values[s.var], s.pattern)
            if setup is None:
                break
            try:
                found = await setup.check(values)
                break
            except ChannelError as exc:
                say(f"  ✗ {exc}")
                for s in spec.settings:
                    if s.secret and s.required:
                        values[s.var] = ""  # a refused credential is not offered again
                if not await _yes("Try another token?"):
                    return
        if found is not None:
            say(f"  ✓ {found.shown}")
            assert setup is not None
            await setup.interview(self, values, found)
        answers = PlatformAnswers(spec, values, found)
        if answers.webhook:
            if spec.webhook_secret is not None:
                values[spec.webhook_secret] = self.old.get(spec.webhook_secret) or new_secret()
            await self.public_url()
        self.answers.platforms.append(answers)

    def _unasked(self, var: str, default: str) -> str:
        """A setting init does not ask: the environment's (a test server), the old file's."""
        return os.environ.get(var) or self.old.get(var) or default

    # ---- the public address ------------------------------------------------------------

    async def public_url(self) -> str:
        """SKILLGATE_PUBLIC_URL, asked the first time a platform needs it."""
        if not self.answers.public_url:
            self.answers.public_url = (
                await _text(
                    "The public https address that forwards to this gateway (e.g."
                    " https://bot.example.com):",
                    self.old.get("SKILLGATE_PUBLIC_URL", ""),
                    _HTTPS,
                )
            ).rstrip("/")
        return self.answers.public_url
