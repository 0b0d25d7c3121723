"""Asking the user who wrote a message whether a tool may run, once for every platform.

The card names the tool and every argument it will run with, each on its own line, whole
and masked only for secrets (arguments too long to show are refused before anyone is
asked), with ✅ and ✖ buttons whose data, "tc:<id>:<y|n>:<digest>:<signature>", is signed
with the channel's card key; the digest is of the tool and its exact arguments, stored with
the question, and a press counts only for the question with that digest. The question is a
stored row: a press is recorded by whichever replica gets it, and the waiting turn reads
the row (woken at once when the press lands on its own replica). Only the asker's first
press before the deadline counts; no press in time means no, and a forged, replayed or
foreign press changes nothing.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import re
import time
from collections.abc import Callable
from typing import Literal

from gateway.conversation.models import Press, Profile
from gateway.conversation.ports import ConfirmStore, Replies
from gateway.core.models import Button, ChatRef
from gateway.core.tools import AskedCall, Confirm
from gateway.i18n import N_

log = logging.getLogger(__name__)

ACTION = "tc"
_DATA = re.compile(ACTION + r":(\d{1,18}):([yn]):([0-9a-f]{16}):([\w-]{1,32})", re.ASCII)

ASK = N_("🔧 May I use the tool {tool}?\n{arguments}\nOnly you can answer, within {seconds} s.")
ALLOWED = N_("✅ Allowed.")
DECLINED = N_("✖ Not allowed.")
ALREADY = N_("This question was already answered, or its time ran out.")
FOREIGN = N_("Only the person who asked can answer this.")
INVALID = N_("This button is not valid.")


def is_confirm_data(data: str | None) -> bool:
    return data is not None and data.startswith(f"{ACTION}:")


class Confirmations:
    """One channel's tool confirmations."""

    def __init__(
        self,
        profile: Profile,
        store: ConfirmStore,
        *,
        seconds: float,
        clock: Callable[[], float] = time.time,
        poll: float = 0.5,
    ) -> None:
        self.profile = profile
        self.store = store
        self.seconds = seconds
        self.clock = clock
        self.poll = poll
        """How often a waiting turn reads the row (a press on another replica)."""
        self._waiting: dict[int, asyncio.Event] = {}

    def asker(self, chat: ChatRef, out: Replies) -> Confirm | None:
        """How this turn asks its user; None where no one can be asked (no user id)."""
        user_id = chat.user_id
        if user_id is None:
            return None

        async def confirm(tool: str, call: AskedCall) -> bool:
            return await self.ask(chat, user_id, out, tool, call)

        return confirm

    async def ask(
        self, chat: ChatRef, user_id: str, out: Replies, tool: str, call: AskedCall
    ) -> bool:
        """Show the card and wait for the user's press; True only for ✅ in time."""
        now = self.clock()
        confirmation = await self.store.open_confirmation(
            chat.channel,
            chat.chat_id,
            user_id,
            tool,
            call.text,
            digest=call.digest,
            expires_at=now + self.seconds,
        )
        woken = self._waiting[confirmation] = asyncio.Event()
        try:
            text = out.texts(ASK, tool=tool, arguments=call.text, seconds=f"{self.seconds:g}")
            await out.notice(text, buttons=self._buttons(confirmation, call.digest))
            decision = await self._wait(confirmation, woken)
        finally:
            self._waiting.pop(confirmation, None)
        log.info("tool %s in %s: %s", tool, chat.channel, decision)
        return decision == "approved"

    async def _wait(self, confirmation: int, woken: asyncio.Event) -> str:
        deadline = time.monotonic() + self.seconds
        while (left := deadline - time.monotonic()) > 0:
            decision = await self.store.confirmation_decision(confirmation)
            if decision is not None:
                return decision
            try:
                async with asyncio.timeout(min(self.poll, left)):
                    await woken.wait()
            except TimeoutError:
                pass
        # Closed as expired unless a press landed just now: then that press stands.
        return await self.store.expire_confirmation(confirmation)

    def _buttons(self, confirmation: int, digest: str) -> list[Button]:
        def button(label: str, answer: str) -> Button:
            value = f"{confirmation}:{answer}:{digest}"
            signature = self.profile.signer.sign(f"{ACTION}:{value}")
            return Button(label=label, action=ACTION, value=f"{value}:{signature}")

        return [button("✅", "y"), button("✖", "n")]

    def verify(self, data: str | None) -> tuple[int, bool, str] | None:
        """(confirmation id, allowed, arguments digest) for data signed by this channel."""
        match = _DATA.fullmatch(data or "")
        if match is None:
            return None
        raw_id, answer, digest, signature = match.groups()
        expected = self.profile.signer.sign(f"{ACTION}:{raw_id}:{answer}:{digest}")
        if not hmac.compare_digest(signature, expected):
            return None
        return int(raw_id), answer == "y", digest

    async def on_press(self, press: Press, out: Replies) -> None:
        """A ✅ or ✖ press: recorded when it is the asker's first, in time; else said why not."""
        verified = self.verify(press.data)
        if verified is None:
            log.warning("%s: a tool confirmation press with bad data", self.profile.who)
            await out.acknowledge(out.texts(INVALID))
            return
        confirmation, allowed, digest = verified
        decision: Literal["approved", "declined"] = "approved" if allowed else "declined"
        outcome = await self.store.press_confirmation(
            confirmation,
            press.chat.channel,
            press.chat.user_id,
            decision,
            digest=digest,
            now=self.clock(),
        )
        if outcome == "decided":
            woken = self._waiting.get(confirmation)
            if woken is not None:
                woken.set()
            await out.acknowledge(out.texts(ALLOWED if allowed else DECLINED))
            await out.close_buttons()  # decided: no ✅/✖ left to press
        elif outcome == "foreign":
            await out.acknowledge(out.texts(FOREIGN))
        elif outcome == "already":
            await out.acknowledge(out.texts(ALREADY))
            await out.close_buttons()  # decided earlier, or its time ran out
        else:
            await out.acknowledge(out.texts(INVALID))
