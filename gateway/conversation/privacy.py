"""/forget: a user deletes everything the gateway keeps about them, confirmed with a button.

In a private chat only, so nobody else can press the button. The confirmation is a
button on both platforms (Telegram inline keyboard, LINE postback quick reply); the
deletion itself is one store transaction (`forget_user`). Skills already approved are
not changed; the console marks their deleted evidence.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from pathlib import Path

from gateway.conversation.content import ALBUM_META, MEDIA_META
from gateway.conversation.models import Press, Profile
from gateway.conversation.ports import ForgetStore, Replies, Withdrawals
from gateway.core.models import Button, ChatRef
from gateway.core.records import Forgotten
from gateway.i18n import ENGLISH, N_, Texts
from gateway.media.keep import discard
from gateway.media.links import MediaLinks

log = logging.getLogger(__name__)

FORGET_COMMAND = ("forget", N_("Delete everything this bot keeps about you"))
FORGET_ACTION = "forget"
FORGET_ASK = N_(
    "This deletes everything this bot keeps about you: your messages, the answers to them,"
    " your ratings and comments. It cannot be undone. Skills the admins already approved"
    " stay as they are. Delete it all?"
)
FORGET_YES = N_("Delete my data")
FORGET_NO = N_("Cancel")
FORGET_DONE = N_(
    "Done: everything this bot kept about you is deleted. If you write again, that starts"
    " a new conversation."
)
FORGET_DELETED = N_("Deleted.")
FORGET_CANCELLED = N_("Okay, nothing was deleted.")
FORGET_PRIVATE = N_("Send /forget in a private chat with me, so that only you can confirm it.")


def forget_buttons(texts: Texts = ENGLISH) -> list[Button]:
    """Delete and Cancel; the data ("forget:yes", "forget:no") is never translated."""
    return [
        Button(label=texts(FORGET_YES), action=FORGET_ACTION, value="yes"),
        Button(label=texts(FORGET_NO), action=FORGET_ACTION, value="no"),
    ]


def is_forget_press(data: str) -> bool:
    return data in (f"{FORGET_ACTION}:yes", f"{FORGET_ACTION}:no")


async def forget(
    store: ForgetStore,
    channel: str,
    user_id: str,
    *,
    handling: int | None = None,
    now: float | None = None,
    media: Path | None = None,
    review: Withdrawals | None = None,
    links: MediaLinks | None = None,
) -> Forgotten:
    """Delete everything about one user (the chat button, the console and the CLI all use this).

    `media`: the dir of kept downloads (SKILLGATE_KEEP_MEDIA); the user's files go too.
    `review`: pending proposals made from the user's sessions are withdrawn there.
    `links`: the files served to the user by signed link (spoken answers) go too.
    """
    at = time.time() if now is None else now
    keys = [meta.format(channel=channel, chat=user_id) for meta in (ALBUM_META, MEDIA_META)]
    done = await store.forget_user(channel, user_id, at, meta_keys=keys, handling=handling)
    if review is not None and done.session_ids:
        withdrawn = await review.withdraw_evidence(done.session_ids)
        if withdrawn:
            log.info("withdrew pending proposal(s) %s made from the deleted sessions", withdrawn)
    # The deleted words are still in SQLite's write-ahead log until it is checkpointed.
    await store.checkpoint()
    if media is not None and done.files:
        await asyncio.to_thread(discard, media, done.files)
    if links is not None:
        await asyncio.to_thread(links.forget, f"{channel}:{user_id}")
    # Counts only: the user's id is what was just deleted.
    log.info(
        "a %s user's data was deleted: %d session(s), %d message(s), %d rating(s)",
        channel,
        done.sessions,
        done.messages,
        done.feedback,
    )
    return done


class Privacy:
    """/forget and its confirmation, for one channel."""

    def __init__(
        self,
        profile: Profile,
        store: ForgetStore,
        clock: Callable[[], float] = time.time,
        media: Path | None = None,
        review: Withdrawals | None = None,
        links: MediaLinks | None = None,
    ) -> None:
        self.profile = profile
        self.links = links
        self.store = store
        self.clock = clock
        self.media = media
        self.review = review

    async def ask(self, chat: ChatRef, out: Replies) -> None:
        texts = out.texts
        if chat.is_group or chat.user_id is None:
            await out.notice(texts(FORGET_PRIVATE))
            return
        await out.notice(texts(FORGET_ASK), buttons=forget_buttons(texts))

    async def on_press(self, press: Press, out: Replies) -> None:
        user, texts = press.chat.user_id, out.texts
        if press.data.endswith(":no") or user is None:
            await out.acknowledge(texts(FORGET_CANCELLED))
            return
        if press.chat.is_group:
            await out.acknowledge(texts(FORGET_PRIVATE))
            return
        await forget(
            self.store,
            self.profile.channel,
            user,
            handling=press.inbox_id,
            now=self.clock(),
            media=self.media,
            review=self.review,
            links=self.links,
        )
        # `texts` was chosen before the user's language was deleted with the rest.
        await out.acknowledge(texts(FORGET_DELETED), courtesy=True)
        await out.notice(texts(FORGET_DONE))
