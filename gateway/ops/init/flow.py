"""The questions of `skillgate init`, in order: the model, the bots, how updates arrive, admins.

Each answer that can be checked is checked at once against the real service (the model
with doctor's probe, the Telegram token with getMe, the LINE token with the bot info
API), and a failed check offers to try again or to go on without that part.
"""

from __future__ import annotations

import re
import secrets
import time
from dataclasses import dataclass
from typing import TypeVar, cast

import questionary
from questionary import Choice

from gateway.channels.line.spec import SPEC as LINE
from gateway.channels.telegram.spec import SPEC as TELEGRAM
from gateway.errors import ChannelError, ModelError
from gateway.ops.init.answers import Answers, new_secret
from gateway.ops.init.model import (
    LOCAL,
    SERVERS,
    check_local,
    check_model,
    install_local,
    list_models,
    server_for,
)

_HTTP = re.compile(r"^https?://[^/\s]+\S*$")
_HTTPS = re.compile(r"^https://[^/\s]+\S*$")
_TELEGRAM_IDS = TELEGRAM.user_ids()
_LINE_IDS = LINE.user_ids()
OTHER_MODEL = "(another name)"
T = TypeVar("T")


@dataclass(frozen=True)
class Where:
    """Where the platforms are and how long to wait for an admin's message."""

    telegram_api: str
    line_api: str
    listen_host: str
    listen_port: int
    wait_seconds: float


def say(text: str) -> None:
    print(text, flush=True)


async def _select(message: str, choices: list[tuple[str, T]], default: T | None = None) -> T:
    """One of `choices` (title, value), by arrow keys and Enter."""
    options = [Choice(title, value) for title, value in choices]
    chosen = next((c for c in options if c.value == default), None)
    answer = await questionary.select(message, choices=options, default=chosen).unsafe_ask_async()
    return cast(T, answer)


async def _text(message: str, default: str = "", pattern: re.Pattern[str] | None = None) -> str:
    def valid(value: str) -> bool | str:
        if pattern is None or pattern.match(value.strip()):
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
    """Asks, checks, and fills in Answers."""

    def __init__(self, where: Where, old: dict[str, str]) -> None:
        self.where = where
        self.old = old
        self.answers = Answers(
            telegram_api_base_url=where.telegram_api, line_api_base_url=where.line_api
        )

    async def run(self) -> Answers:
        a = self.answers
        a.admin_token = self.old.get("SKILLGATE_ADMIN_TOKEN") or new_secret()
        a.data_dir = self.old.get("SKILLGATE_DATA_DIR", "")
        await self.model()
        bots = await _select(
            "Which bots should it answer?",
            [
                ("Telegram", "telegram"),
                ("LINE", "line"),
                ("Telegram and LINE", "both"),
                ("none for now (only `skillgate chat`)", "none"),
            ],
            default=self._bots_before(),
        )
        if bots in ("telegram", "both"):
            await self.telegram()
        if bots in ("line", "both"):
            await self.line()
        return a

    def _bots_before(self) -> str:
        tg, line = "TELEGRAM_BOT_TOKEN" in self.old, "LINE_CHANNEL_ACCESS_TOKEN" in self.old
        return "both" if tg and line else "line" if line else "telegram"

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
        return await _text("The model's name:", suggested, re.compile(r"^\S+$"))

    # ---- Telegram ----------------------------------------------------------------------

    async def telegram(self) -> None:
        from gateway.channels.telegram import setup as tg

        a, api = self.answers, self.where.telegram_api
        token = self.old.get("TELEGRAM_BOT_TOKEN", "")
        while True:
            token = await _secret("Telegram bot token (from @BotFather, /newbot):", token)
            try:
                bot = await tg.bot_info(token, api)
                break
            except ChannelError as exc:
                say(f"  ✗ {exc}")
                token = ""
                if not await _yes("Try another token?"):
                    return
        say(f"  ✓ @{bot.username} ({bot.name})")
        a.telegram_token, a.telegram_bot = token, bot.username
        polling = await _select(
            "How should Telegram updates arrive?",
            [
                ("polling: no public address needed (trying it out, a home machine)", True),
                ("webhook: Telegram posts to your https address (a server)", False),
            ],
            default=self.old.get("TELEGRAM_POLLING", "true").lower() in ("true", "1", "yes"),
        )
        a.telegram_polling = polling
        if not a.telegram_polling:
            a.telegram_webhook_secret = self.old.get("TELEGRAM_WEBHOOK_SECRET") or new_secret()
            if not a.public_url:
                await self.public_url()
        a.telegram_admin_ids = await self._telegram_admin(bot.username)

    async def _telegram_admin(self, username: str) -> list[int]:
        try:
            return await self._telegram_start(username)
        except ChannelError as exc:  # another poller (a running gateway), the network, ...
            say(f"  ✗ {exc}")
            if await _yes("Type the admin's user id instead?"):
                return await self._typed_ids()
            return []

    async def _telegram_start(self, username: str) -> list[int]:
        from gateway.channels.telegram import setup

        a, api, wait = self.answers, self.where.telegram_api, self.where.wait_seconds
        url = await setup.webhook_url(a.telegram_token, api)
        if url:
            if a.telegram_polling:
                say(f"  Telegram holds a webhook ({url}); polling has no use for it: removing it.")
            elif not await _yes(
                f"Telegram holds a webhook ({url}), and no update can be read while it is set."
                " Remove it for now? (`skillgate set-webhook` registers it again)"
            ):
                return await self._typed_ids()
            await setup.remove_webhook(a.telegram_token, api)
        code = secrets.token_hex(4)
        while True:
            say(
                f"Now send /start to @{username} in Telegram (or open"
                f" https://t.me/{username}?start={code}). Waiting up to {wait:.0f} s ..."
            )
            user = await setup.wait_for_start(
                a.telegram_token, api, code=code, since=time.time(), within=wait
            )
            if user is not None and (
                user.with_code or await _yes(f"Make {user.describe()} an admin?")
            ):
                say(f"  ✓ admin: {user.describe()}")
                return [user.id]
            if user is None:
                say("  no /start arrived")
            what = await _select(
                "What now?",
                [
                    ("wait for /start again", "wait"),
                    ("type the user id", "type"),
                    ("no admin for now", "none"),
                ],
            )
            if what == "type":
                return await self._typed_ids()
            if what == "none":
                return []

    async def _typed_ids(self) -> list[int]:
        text = await _text("Telegram user id(s), comma-separated:", "", _TELEGRAM_IDS)
        return [int(part) for part in text.split(",")]

    # ---- LINE --------------------------------------------------------------------------

    async def line(self) -> None:
        from gateway.channels.line import setup as ln

        a, api = self.answers, self.where.line_api
        secret = self.old.get("LINE_CHANNEL_SECRET", "")
        token = self.old.get("LINE_CHANNEL_ACCESS_TOKEN", "")
        while True:
            secret = await _secret(
                "LINE channel secret (LINE Developers console, your channel, Basic settings):",
                secret,
            )
            token = await _secret(
                "LINE channel access token (Messaging API tab, a long-lived one):", token
            )
            try:
                bot = await ln.bot_info(token, api)
                break
            except ChannelError as exc:
                say(f"  ✗ {exc}")
                token = ""
                if not await _yes("Try again?"):
                    return
        say(f"  ✓ {bot.name} ({bot.basic_id})")
        a.line_secret, a.line_token, a.line_bot = secret, token, bot.name
        if not a.public_url:
            await self.public_url()
        a.line_admin_ids = await self._line_admin(bot.name, bot.basic_id)

    async def _line_admin(self, name: str, basic_id: str) -> list[str]:
        where = self.where
        address = f"{where.listen_host}:{where.listen_port}"
        while True:
            how = await _select(
                "Your LINE user id, for the admins who review skill proposals:",
                [
                    (f"send a code to {name} now (the proxy must forward to {address})", "code"),
                    ("paste it (LINE Developers console, Basic settings, Your user ID)", "paste"),
                    ("no admin for now", "none"),
                ],
            )
            if how == "paste":
                text = await _text(
                    "LINE user id(s) (U and 32 hex digits), comma-separated:", "", _LINE_IDS
                )
                return [part.strip() for part in text.split(",")]
            if how == "none":
                return []
            found = await self._line_code(name, basic_id)
            if found:
                return [found]

    async def _line_code(self, name: str, basic_id: str) -> str | None:
        from gateway.channels.line import setup

        a, where = self.answers, self.where
        try:
            state = await setup.point_webhook(a.line_token, where.line_api, a.public_url)
            if state.changed:
                say(f"  set the LINE webhook URL to {state.endpoint}")
            active = state.active
            while not active:
                say(
                    "  'Use webhook' is off, so LINE sends nothing: turn it on in the LINE"
                    " Developers console (your channel, Messaging API tab, Webhook settings)."
                )
                if not await _yes("Done? (check again)"):
                    return None
                active = await setup.webhook_active(a.line_token, where.line_api)
        except ChannelError as exc:
            say(f"  ✗ {exc}")
            return None
        code = f"{secrets.randbelow(10**6):06d}"
        listener = setup.CodeListener(a.line_secret, code)
        try:
            await listener.start(where.listen_host, where.listen_port)
        except OSError as exc:
            say(
                f"  ✗ cannot listen on {where.listen_host}:{where.listen_port}: {exc.strerror}"
                " (is `skillgate serve` running there? stop it while init runs)"
            )
            return None
        try:
            say(
                f"Now send {code} to {name} in LINE (add {basic_id} as a friend first)."
                f" Waiting up to {where.wait_seconds:.0f} s ..."
            )
            found = await listener.wait(where.wait_seconds)
        finally:
            await listener.close()
        if found is None:
            say("  the code did not arrive")
            return None
        user, reply_token = found
        if reply_token:
            try:
                await setup.thank(a.line_token, where.line_api, user, reply_token)
            except ChannelError as exc:
                say(f"  (could not answer in LINE: {exc})")
        say(f"  ✓ admin: {user}")
        return user

    # ---- the public address ------------------------------------------------------------

    async def public_url(self) -> None:
        self.answers.public_url = (
            await _text(
                "The public https address that forwards to this gateway (e.g."
                " https://bot.example.com):",
                self.old.get("SKILLGATE_PUBLIC_URL", ""),
                _HTTPS,
            )
        ).rstrip("/")
