"""The answer while it is written, in Telegram: a draft in private chats, or an edited message.

TELEGRAM_STREAMING picks how: `drafts` (the default) shows the growing answer in private
chats with sendMessageDraft, the Bot API's own preview, which is ephemeral and animated;
`edit` does the same and, in groups and forum topics (where Telegram refuses drafts),
sends one message and edits it in place; `off` shows only "typing…". Partial text goes out
as plain text (escaped), so no half-written markup can fail to parse; the final answer is
rendered and sent (or, in a group, edited in) by the responder as before. When to show an
update is decided in `gateway.conversation.preview`.

The edited message's id is stored (the deliveries table, under the user's message) as
soon as it exists, so an answer resumed after a crash or a failed final send continues in
that same message instead of leaving a half-written one behind.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Literal

from gateway.channels.api import DeliveryLog, PartialText, previewing, split_text, utf16_len
from gateway.channels.telegram.format import MAX_TEXT, Part
from gateway.channels.telegram.send import NotModified, Sender, Target

Streaming = Literal["off", "drafts", "edit"]
CHANNEL = "telegram"


def tail(text: str) -> str:
    """What fits in one message: the part being written (the earlier ones are complete)."""
    if len(text) <= MAX_TEXT // 2 or utf16_len(text) <= MAX_TEXT:
        return text
    recent = text[-2 * MAX_TEXT :]  # only the end is shown: split no more than that
    return (split_text(recent, MAX_TEXT, utf16_len) or [recent[-MAX_TEXT // 2 :]])[-1]


class DraftPreview:
    """sendMessageDraft in a private chat; the draft vanishes when the answer is sent."""

    message_id: int | None = None

    def __init__(self, sender: Sender, target: Target, draft_id: int) -> None:
        self.sender = sender
        self.target = target
        self.draft_id = draft_id

    async def show(self, text: str) -> None:
        await self.sender.draft(self.target, self.draft_id, tail(text))

    def previewing(
        self, first_shown: Callable[[], None]
    ) -> AbstractAsyncContextManager[PartialText]:
        policy = self.sender.policy
        # A draft lasts 30 s on its own: shown again while the model is silent for longer.
        return previewing(
            self.show,
            interval=policy.draft_interval,
            first_shown=first_shown,
            keepalive=policy.draft_keepalive,
        )


def preview_ref(target: Target, message_id: int) -> str:
    """Where the streamed message of the answer to one user message is remembered."""
    return f"stream:{target.chat_id}:{message_id}"


async def stored_preview(log: DeliveryLog, ref: str) -> int | None:
    """The message an earlier attempt streamed this answer into, if any."""
    batch = await log.delivery_batch(CHANNEL, ref, 0, "")
    return int(batch.platform_ids[0]) if batch.platform_ids else None


class EditPreview:
    """One message in a group, sent with the first words and edited as the answer grows."""

    def __init__(
        self, sender: Sender, target: Target, reply_to: int | None, log: DeliveryLog, ref: str
    ) -> None:
        self.sender = sender
        self.target = target
        self.reply_to = reply_to
        self.log = log
        self.ref = ref
        self.message_id: int | None = None

    async def show(self, text: str) -> None:
        part = Part.of_text(tail(text))
        if self.message_id is None:
            self.message_id = await stored_preview(self.log, self.ref)
        if self.message_id is None:
            self.message_id = await self.sender.send(
                self.target, part, reply_to=self.reply_to, retries=0
            )
            await self.log.delivery_sent(CHANNEL, self.ref, 0, [str(self.message_id)])
            return
        with contextlib.suppress(NotModified):  # the escaped text came out the same
            await self.sender.edit(self.target.chat_id, self.message_id, part, retries=0)

    def previewing(
        self, first_shown: Callable[[], None]
    ) -> AbstractAsyncContextManager[PartialText]:
        interval = self.sender.policy.edit_interval
        return previewing(self.show, interval=interval, first_shown=first_shown)


def preview_for(
    streaming: Streaming,
    sender: Sender,
    target: Target,
    message_id: int | None,
    reply_to: int | None,
    log: DeliveryLog,
) -> DraftPreview | EditPreview | None:
    """How this chat shows an answer being written, or None for "typing…" alone."""
    if streaming == "off":
        return None
    if target.is_group:
        if streaming != "edit" or message_id is None:
            return None
        return EditPreview(sender, target, reply_to, log, preview_ref(target, message_id))
    if sender.drafts_unsupported:
        return None
    # Drafts with the same id animate into each other; the user's message id is one per answer.
    return DraftPreview(sender, target, message_id or 1)
