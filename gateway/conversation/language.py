"""Which language the bot's fixed texts are in, for every channel alike.

In order: the language the chat chose with /language; else the user's own, as the
platform says it (Telegram sends it with every update; LINE's profile is looked up
once and kept, then looked up again after REFRESH_SECONDS, sooner after a failure,
which never holds up the answer: the last known language or the default is used);
else SKILLGATE_DEFAULT_LANGUAGE. A language the gateway has no catalog for counts as
unknown. Proposal cards follow each admin's language as last known.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import NamedTuple, Protocol

from gateway.core.models import Button, ChatRef
from gateway.core.records import LanguageState
from gateway.errors import ChannelError
from gateway.i18n import LANGUAGES, N_, Texts, language_of, texts_for

log = logging.getLogger(__name__)

REFRESH_SECONDS = 30 * 24 * 3600.0
"""How long a looked-up language is trusted before it is asked for again."""
RETRY_SECONDS = 3600.0
"""After a failed lookup, how long until the next try (meanwhile the last known one is used)."""
LOOKUP_SECONDS = 3.0
"""The most a lookup may take before the answer goes ahead without it."""
RESET_WORDS = frozenset(("auto", "reset", "default"))

CURRENT = N_("I write to this chat in {name}.")
CHOICES = N_(
    "To change it, send /language with one of: {choices}."
    " /language auto follows each person's app language again."
)
CHOSEN = N_("OK, from now on I write to this chat in {name}.")
FOLLOWING = N_("OK, I follow each person's app language again.")
UNKNOWN_LANGUAGE = N_("I can't write in “{word}” yet.")
FOLLOW_APP = N_("Follow my app")
"""The button that goes back to each person's app language."""
ACTION = "lang"
"""The action of a language button: "lang:<code>" (or "lang:auto")."""


class LanguageStore(Protocol):
    async def language_state(
        self, channel: str, chat_id: str, user_id: str | None
    ) -> LanguageState: ...

    async def choose_language(
        self,
        channel: str,
        chat_id: str,
        language: str | None,
        by: str | None = None,
        now: float | None = None,
    ) -> None: ...

    async def user_language_seen(
        self, channel: str, user_id: str, tag: str | None, *, ok: bool, now: float | None = None
    ) -> None: ...


class Speaker(Protocol):
    """What the platform tells about the language of the user being answered."""

    @property
    def language_tag(self) -> str | None:
        """The user's language as the update itself gives it (Telegram), else None."""
        ...

    async def look_up_language(self) -> str | None:
        """Ask the platform for the user's language (LINE's profile); ChannelError if it fails."""
        ...


class AdminLookup(Protocol):
    """How a channel's cards look up an admin's language (LINE's profile), if it can."""

    async def look_up_language(self, user_id: str) -> str | None: ...


class _Admin:
    """An admin as a Speaker: no update to read a language from, only the lookup."""

    language_tag = None

    def __init__(self, platform: AdminLookup, user_id: str) -> None:
        self.platform = platform
        self.user_id = user_id

    async def look_up_language(self) -> str | None:
        return await self.platform.look_up_language(self.user_id)


def shown_code(language: str) -> str:
    """How a user types a language: "zh-TW" for the catalog zh_TW."""
    return language.replace("_", "-")


def choices() -> str:
    return ", ".join(f"{shown_code(code)} ({name})" for code, name in LANGUAGES.items())


def buttons(texts: Texts) -> tuple[Button, ...]:
    """One button per language (its own name), and one to follow the app again."""
    each = [
        Button(label=name, action=ACTION, value=shown_code(code))
        for code, name in LANGUAGES.items()
    ]
    return (*each, Button(label=texts(FOLLOW_APP), action=ACTION, value="auto"))


def pressed(data: str | None) -> str | None:
    """The choice a language button carries, or None for any other button."""
    action, _, value = (data or "").partition(":")
    return value if action == ACTION and value else None


class Said(NamedTuple):
    """The answer to /language: the texts now in force, the text, and its buttons."""

    texts: Texts
    text: str
    buttons: tuple[Button, ...] = ()


def choice(word: str) -> str | None:
    """The language a /language argument names ("ja", "zh-TW", "日本語", "ไทย"), or None."""
    cleaned = word.strip()
    for code, name in LANGUAGES.items():
        if cleaned.casefold() in (code.casefold(), name.casefold()):
            return code
    return language_of(cleaned)


class Languages:
    """Decides the language of each chat's fixed texts and remembers what it learns."""

    def __init__(
        self,
        store: LanguageStore,
        default: str = "en",
        clock: Callable[[], float] = time.time,
        *,
        lookup_seconds: float = LOOKUP_SECONDS,
    ) -> None:
        self.store = store
        self.default = language_of(default) or "en"
        self.clock = clock
        self.lookup_seconds = lookup_seconds

    def pick(self, tag: str | None) -> Texts:
        """The texts for a platform's language tag; the default for an unknown or missing one."""
        return texts_for(language_of(tag) or self.default)

    async def texts(
        self, chat: ChatRef, speaker: Speaker, state: LanguageState | None = None
    ) -> Texts:
        """The texts for the user being answered in `chat` (`state`: as read with the chat's)."""
        if state is None:
            state = await self.store.language_state(chat.channel, chat.chat_id, chat.user_id)
        if state.chosen is not None:
            return texts_for(state.chosen)
        return self.pick(await self._tag(chat, speaker, state))

    async def for_chat(self, chat: ChatRef) -> Texts:
        """The texts for a message the bot starts itself in `chat` (a reminder): the chat's
        choice, else its user's language as last seen, else the default."""
        state = await self.store.language_state(chat.channel, chat.chat_id, chat.user_id)
        if state.chosen is not None:
            return texts_for(state.chosen)
        return self.pick(state.tag)

    async def for_admin(
        self,
        channel: str,
        chat_id: str,
        platform: AdminLookup | None = None,
        state: LanguageState | None = None,
    ) -> Texts:
        """The texts for an admin's private chat (whose id is the admin's user id).

        What is known already (`state`, where it was read with something else), else what
        `platform` looks up (once, then as for any user).
        """
        chat = ChatRef(channel=channel, chat_id=chat_id, user_id=chat_id)
        if state is None:
            state = await self.store.language_state(channel, chat_id, chat_id)
        if state.chosen is not None:
            return texts_for(state.chosen)
        if platform is None:
            return self.pick(state.tag)
        return self.pick(await self._tag(chat, _Admin(platform, chat_id), state))

    async def choose(self, chat: ChatRef, language: str | None) -> None:
        """The chat's own choice (None: follow each user's language again)."""
        await self.store.choose_language(
            chat.channel, chat.chat_id, language, chat.user_id, now=self.clock()
        )

    async def command(self, chat: ChatRef, argument: str, texts: Texts, speaker: Speaker) -> Said:
        """/language [code|auto] (or its button): what to answer, in the language it leaves."""
        word = argument.strip()
        if not word:
            text = texts(CURRENT, name=texts.name) + "\n" + texts(CHOICES, choices=choices())
            return Said(texts, text, buttons(texts))
        if word.casefold() in RESET_WORDS:
            await self.choose(chat, None)
            now = await self.texts(chat, speaker)
            return Said(now, now(FOLLOWING))
        chosen = choice(word)
        if chosen is None:
            text = texts(UNKNOWN_LANGUAGE, word=word[:40]) + " " + texts(CHOICES, choices=choices())
            return Said(texts, text, buttons(texts))
        await self.choose(chat, chosen)
        now = texts_for(chosen)
        return Said(now, now(CHOSEN, name=now.name))

    async def _tag(self, chat: ChatRef, speaker: Speaker, state: LanguageState) -> str | None:
        user, now = chat.user_id, self.clock()
        given = speaker.language_tag
        if given is not None:
            if user is not None and (given != state.tag or not state.ok):
                await self.store.user_language_seen(chat.channel, user, given, ok=True, now=now)
            return given
        if user is None or self._fresh(state, now):
            return state.tag
        try:
            async with asyncio.timeout(self.lookup_seconds):
                found = await speaker.look_up_language()
        except (ChannelError, TimeoutError) as exc:
            log.info("%s: no language for a user (%s); trying again later", chat.channel, exc)
            await self.store.user_language_seen(chat.channel, user, None, ok=False, now=now)
            return state.tag
        found = found or state.tag  # a platform that does not say keeps what was known
        await self.store.user_language_seen(chat.channel, user, found, ok=True, now=now)
        return found

    @staticmethod
    def _fresh(state: LanguageState, now: float) -> bool:
        if state.checked_at is None:
            return False
        age = now - state.checked_at
        return age < (REFRESH_SECONDS if state.ok else RETRY_SECONDS)
