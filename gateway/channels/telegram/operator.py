"""Telegram for the operator commands: a Bot for the settings, errors translated, the webhook.

`skillgate set-webhook` and `skillgate doctor` use these; each setting is read back
first and only written when it differs, because Telegram rate-limits setWebhook.
Telegram never reveals the secret token it holds, so a keyed hash of the last one
registered is kept in the database to notice a changed TELEGRAM_WEBHOOK_SECRET.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from telegram import Bot, BotCommand, BotCommandScopeChat
from telegram.error import BadRequest, Forbidden, InvalidToken, NetworkError, TelegramError

from gateway.channels.api import (
    ADMIN_COMMANDS,
    COMMANDS,
    ChannelError,
    ConfigError,
    Languages,
    Settings,
    Step,
    Texts,
    mask,
    public_endpoint,
    secrets,
    texts_for,
)
from gateway.channels.telegram.settings import TelegramSettings
from gateway.channels.telegram.spec import SPEC
from gateway.channels.telegram.updates import ALLOWED_UPDATES, WEBHOOK_PATH

if TYPE_CHECKING:
    from gateway.channels.api import RegistryQueries, Store

SECRET_META = "telegram_webhook_secret_hmac"
MENU_LANGUAGES = {"": "en", "ja": "ja", "zh": "zh_TW", "th": "th"}
"""Telegram's language code of each command menu ("": everyone else), and its catalog.
Telegram keys menus by two-letter codes only, so every Chinese app gets the Traditional one."""


@asynccontextmanager
async def telegram_bot(settings: Settings) -> AsyncIterator[Bot]:
    """An initialised Bot (getMe done) for the configured token and API base."""
    tg = settings.section(TelegramSettings)
    assert tg.telegram_bot_token is not None
    bot = Bot(tg.telegram_bot_token.get_secret_value(), base_url=tg.telegram_api_base_url)
    async with bot:
        yield bot


@asynccontextmanager
async def telegram_errors(settings: Settings) -> AsyncIterator[None]:
    """Turn python-telegram-bot's errors into ChannelError."""
    tg = settings.section(TelegramSettings)
    host = urlsplit(tg.telegram_api_base_url).netloc
    try:
        yield
    except InvalidToken as exc:
        raise ChannelError("Telegram rejected TELEGRAM_BOT_TOKEN") from exc
    except BadRequest as exc:
        raise ChannelError(f"Telegram refused: {_clean(settings, exc.message)}") from exc
    except NetworkError as exc:
        detail = _clean(settings, exc.message)
        raise ChannelError(f"cannot reach the Bot API at {host}: {detail}") from exc
    except TelegramError as exc:
        raise ChannelError(f"Telegram: {_clean(settings, exc.message)}") from exc


def _clean(settings: Settings, text: str) -> str:
    """An error of the Bot API without a secret or anything shaped like a token."""
    return mask(text, secrets(settings), SPEC.token_shapes)


def secret_fingerprint(settings: Settings) -> str:
    """A keyed hash of the webhook secret (the bot token is the key); never the secret."""
    tg = settings.section(TelegramSettings)
    assert tg.telegram_bot_token is not None
    if tg.telegram_webhook_secret is None:
        return ""
    key = tg.telegram_bot_token.get_secret_value().encode()
    secret = tg.telegram_webhook_secret.get_secret_value().encode()
    return hmac.new(key, secret, hashlib.sha256).hexdigest()


async def telegram_register(
    settings: Settings, store: Store, *, max_connections: int = 40, force: bool = False
) -> list[Step]:
    """Set the Telegram webhook and commands where they differ from what is wanted."""
    tg = settings.section(TelegramSettings)
    url = public_endpoint(settings, WEBHOOK_PATH)
    if tg.telegram_webhook_secret is None:
        raise ConfigError("TELEGRAM_WEBHOOK_SECRET is not set: the gateway would refuse every post")
    fingerprint = secret_fingerprint(settings)
    steps: list[Step] = []
    async with telegram_errors(settings), telegram_bot(settings) as bot:
        steps.append(Step("telegram bot", "ok", f"@{bot.username}"))
        info = await bot.get_webhook_info()
        same = (
            info.url == url
            and info.max_connections == max_connections
            and set(info.allowed_updates or ()) == set(ALLOWED_UPDATES)
            and await store.get_meta(SECRET_META) == fingerprint
        )
        if same and not force:
            steps.append(
                Step(
                    "telegram webhook", "unchanged", f"{url} ({info.pending_update_count} pending)"
                )
            )
            if info.last_error_message:
                when = f"{info.last_error_date:%Y-%m-%d %H:%M} UTC" if info.last_error_date else ""
                steps.append(
                    Step(
                        "telegram webhook", "warn", f"last error {when}: {info.last_error_message}"
                    )
                )
        else:
            await bot.set_webhook(
                url,
                secret_token=tg.telegram_webhook_secret.get_secret_value(),
                allowed_updates=list(ALLOWED_UPDATES),
                max_connections=max_connections,
                drop_pending_updates=False,
            )
            await store.set_meta(SECRET_META, fingerprint)
            steps.append(
                Step(
                    "telegram webhook",
                    "set",
                    f"{url} with the secret token, max_connections={max_connections},"
                    f" allowed_updates={','.join(ALLOWED_UPDATES)}",
                )
            )
        steps.append(await public_commands(bot, force=force))
        steps += await admin_commands(
            settings, bot, Languages(store, settings.default_language), force=force
        )
    return steps


def menu(commands: Sequence[tuple[str, str]], texts: Texts) -> list[tuple[str, str]]:
    """(command, description) pairs with the descriptions in one language."""
    return [(name, texts(description)) for name, description in commands]


async def public_commands(bot: Bot, *, force: bool = False) -> Step:
    """Everyone's menu: English by default, and one per language Telegram's apps are set to."""
    names = ", ".join(f"/{name}" for name, _ in COMMANDS)
    changed = []
    for code, language in MENU_LANGUAGES.items():
        wanted = menu(COMMANDS, texts_for(language))
        found = await bot.get_my_commands(language_code=code or None)
        if [(c.command, c.description) for c in found] == wanted and not force:
            continue
        commands = [BotCommand(name, text) for name, text in wanted]
        await bot.set_my_commands(commands, language_code=code or None)
        changed.append(code or "default")
    if not changed:
        return Step("telegram commands", "unchanged", names)
    return Step("telegram commands", "set", f"{names} ({', '.join(changed)})")


async def admin_commands(
    settings: Settings, bot: Bot, languages: Languages, *, force: bool = False
) -> list[Step]:
    """The admins' own command menu, each in the admin's language: public plus review commands."""
    tg = settings.section(TelegramSettings)
    names = ", ".join(f"/{name}" for name, _ in ADMIN_COMMANDS)
    steps: list[Step] = []
    changed = 0
    for admin in tg.telegram_admin_ids:
        scope = BotCommandScopeChat(admin)
        texts = await languages.for_admin("telegram", str(admin))
        wanted = menu([*COMMANDS, *ADMIN_COMMANDS], texts)
        try:
            current = [(c.command, c.description) for c in await bot.get_my_commands(scope=scope)]
            if current == wanted and not force:
                continue
            await bot.set_my_commands([BotCommand(n, text) for n, text in wanted], scope=scope)
            changed += 1
        except (BadRequest, Forbidden) as exc:
            # Telegram knows a private chat only once the person has written to the bot.
            steps.append(
                Step(
                    "telegram admin commands",
                    "warn",
                    f"admin {admin}: {exc.message}; they should send /start to the bot",
                )
            )
    if tg.telegram_admin_ids:
        status = "set" if changed else "unchanged"
        count = len(tg.telegram_admin_ids)
        steps.insert(0, Step("telegram admin commands", status, f"{names} for {count} admin(s)"))
    return steps


async def telegram_unregister(settings: Settings, store: RegistryQueries) -> list[Step]:
    """Remove the Telegram webhook (pending updates are kept)."""
    async with telegram_errors(settings), telegram_bot(settings) as bot:
        info = await bot.get_webhook_info()
        if not info.url:
            return [Step("telegram webhook", "absent", "no webhook was registered")]
        await bot.delete_webhook(drop_pending_updates=False)
    await store.set_meta(SECRET_META, "")
    return [Step("telegram webhook", "deleted", f"{info.url} (pending updates kept)")]
