"""Pictures made on request (`generate_image`): the day's limit per user, and the pictures
made ready for the platform.

Decided here once for every platform: a user may have SKILLGATE_USER_DAILY_IMAGES pictures
made a UTC day (admins are exempt); the call past it is refused before anyone is asked to
confirm it, the model is told why and the user is told once per turn. A platform that
fetches media by URL (LINE) gets each picture under a signed link (`MediaLinks`); without a
public https address there is none, and the user is told the picture could not be sent. The
count is kept on the answer (`messages.pictures`), so /forget and retention delete it with
the answer.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

from gateway.config import QuotaSettings
from gateway.conversation.models import Profile
from gateway.conversation.voice import owner_of
from gateway.core.models import ChatRef, Reply
from gateway.core.turn import QuotaSpend
from gateway.i18n import N_
from gateway.media.links import MediaLinks
from gateway.usage import day_start, media_spend, utc_day

log = logging.getLogger(__name__)

IMAGE_LIMIT = N_("You have had today's {limit} pictures; I can make more after 00:00 UTC.")
IMAGE_NOT_SENT = N_("I made the picture you asked for, but I could not send it here.")


class PictureStore(Protocol):
    """The pictures made for each answer (`gateway.store.usage`)."""

    async def pictured_by(self, channel: str, user_id: str, since: float) -> int: ...

    async def record_pictures(
        self, message_id: int, count: int, spent: QuotaSpend | None = None
    ) -> None: ...


@dataclass
class Drawing:
    """One turn's pictures: whether the next may be made, and whether one was refused."""

    pictures: Pictures
    chat: ChatRef
    admin: bool
    allowed: int = 0
    """Pictures this turn was allowed to make so far (counted against the limit)."""
    refused: bool = False

    async def may_draw(self) -> str | None:
        """Why the turn's next picture may not be made, or None (it counts as made)."""
        if await self.pictures.over(self.chat, self.admin, self.allowed):
            self.refused = True
            # For the model and the trace (the user is told IMAGE_LIMIT, translated).
            return "the user has had the day's pictures (SKILLGATE_USER_DAILY_IMAGES)"
        self.allowed += 1
        return None


class Pictures:
    """The daily limit on pictures, and the pictures made ready to send."""

    def __init__(
        self,
        profile: Profile,
        store: PictureStore,
        quotas: QuotaSettings,
        links: MediaLinks | None,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.profile = profile
        self.store = store
        self.quotas = quotas
        self.links = links
        self.clock = clock

    def drawing(self, chat: ChatRef, admin: bool) -> Drawing:
        return Drawing(self, chat, admin)

    async def over(self, chat: ChatRef, admin: bool, made: int) -> bool:
        """The user has had the day's pictures (with the `made` ones of this turn)."""
        limit = self.quotas.user_images
        if limit is None or admin or chat.user_id is None:
            return False
        today = day_start(datetime.fromtimestamp(self.clock(), UTC).date())
        return await self.store.pictured_by(chat.channel, chat.user_id, today) + made >= limit

    async def ready(self, reply: Reply, chat: ChatRef) -> bool:
        """Count the reply's pictures, priced (IMAGE_PRICE) in the day's counts, and make them
        sendable here (a signed link each where the platform fetches by URL); False when they
        cannot be sent (they are dropped)."""
        if not reply.pictures:
            return True
        if reply.message_id is not None:
            made = len(reply.pictures)
            spent = None
            if self.quotas.limited:
                cost = made * self.quotas.image_price
                spent = media_spend(chat, utc_day(self.clock()), cost)
            await self.store.record_pictures(reply.message_id, made, spent)
        if not self.profile.capabilities.media_by_link:
            return True
        links = self.links
        if links is None:
            log.warning(
                "%s: a picture was not sent: it fetches images by URL, and"
                " SKILLGATE_PUBLIC_URL is not an https address",
                self.profile.who,
            )
            reply.pictures = []
            return False
        for picture in reply.pictures:
            published = await asyncio.to_thread(
                links.publish, owner_of(chat), picture.data, picture.suffix
            )
            picture.url = published.url
        return True
