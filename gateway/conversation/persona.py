"""/persona: a chat's own persona, shown to anyone there, set and cleared by its admins.

Who administers a chat: Skillgate's admins of the platform anywhere; in a private chat its
user; in a group its administrators where the platform says who they are (Telegram's
getChatMember; LINE names none, so there only Skillgate's admins). The text passes the same
checks as in the console (`gateway.core.persona`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Protocol

from gateway.conversation.models import Audience
from gateway.core.models import ChatRef
from gateway.core.persona import PERSONA_CHARS, refusal
from gateway.i18n import N_, Texts

PERSONA_COMMAND = ("persona", N_("Show this chat's persona; admins set or clear it"))

SHOWN = N_(
    "This chat's persona:\n{persona}\n\nAdmins change it with /persona followed by the new"
    " text, or remove it with /persona clear."
)
NONE = N_(
    "This chat has no persona of its own. Admins give it one with /persona followed by the text."
)
SET = N_("Done: from now on I answer here with this persona:\n{persona}")
CLEARED = N_("Done: this chat has no persona of its own any more.")
NOT_ADMIN = N_("Only this chat's admins can change its persona.")
TOO_LONG = N_("That persona is too long: at most {limit} characters.")
SECRET = N_("I won't use that persona: it looks like it holds a password or a key.")


class PersonaStore(Protocol):
    """Where a chat's persona is kept (`gateway.store.personas`)."""

    async def get_chat_persona(self, channel: str, chat_id: str) -> str | None: ...

    async def set_chat_persona(
        self, channel: str, chat_id: str, text: str | None, by: str | None, now: float
    ) -> None: ...


class ChatAdmins(Protocol):
    """What the platform says about who administers the chat (the `Responder`)."""

    async def is_chat_admin(self) -> bool:
        """Whether the sender administers this group on the platform (Telegram asks
        getChatMember); False where the platform does not say (LINE) or cannot tell now."""
        ...


class Personas:
    """The /persona command, for one channel."""

    def __init__(
        self,
        audience: Audience,
        store: PersonaStore,
        *,
        known: Sequence[str] = (),
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.audience = audience
        self.store = store
        self.known = tuple(known)
        """The gateway's configured secrets, refused in any encoding."""
        self.clock = clock

    async def may_change(self, chat: ChatRef, admins: ChatAdmins) -> bool:
        """Skillgate's admins; a private chat's user; a group's administrators."""
        if self.audience.is_admin(chat.user_id):
            return True
        if chat.user_id is None:
            return False
        if not chat.is_group:
            return True
        return await admins.is_chat_admin()

    async def command(self, chat: ChatRef, argument: str, texts: Texts, admins: ChatAdmins) -> str:
        """Show, set or clear; what to tell the chat."""
        text = argument.strip()
        if not text:
            persona = await self.store.get_chat_persona(chat.channel, chat.chat_id)
            return texts(SHOWN, persona=persona) if persona else texts(NONE)
        if not await self.may_change(chat, admins):
            return texts(NOT_ADMIN)
        by = f"{chat.channel}:{chat.user_id}"
        if text.lower() == "clear":
            await self.store.set_chat_persona(chat.channel, chat.chat_id, None, by, self.clock())
            return texts(CLEARED)
        refused = refusal(text, self.known)
        if refused == "too long":
            return texts(TOO_LONG, limit=PERSONA_CHARS)
        if refused is not None:
            return texts(SECRET)
        await self.store.set_chat_persona(chat.channel, chat.chat_id, text, by, self.clock())
        return texts(SET, persona=text)
