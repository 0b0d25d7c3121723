"""Proposal cards in LINE: a Flex bubble with Approve / Reject / Full diff postbacks.

LINE cannot edit a sent message, so a decision reaches each LINE admin as a
short pushed notice instead (except the admin who decided, who was answered
directly). Every push has a stable delivery reference, so the outbox's stored
retry key makes a retry after a crash a no-op at LINE (409) rather than a
second message.
"""

from __future__ import annotations

from collections.abc import Collection

from linebot.v3.messaging import (
    FlexBox,
    FlexBubble,
    FlexButton,
    FlexComponent,
    FlexMessage,
    FlexSeparator,
    FlexSpan,
    FlexText,
    PostbackAction,
)

from gateway.channels.api import (
    N_,
    Card,
    CardAction,
    CardDelivery,
    CardSigner,
    ChannelError,
    NoticeView,
    RepeatNotice,
    Texts,
    clip,
    fit,
    notice_view,
    trimmed_note,
    utf16_len,
)
from gateway.channels.line.client import text_messages
from gateway.channels.line.delivery import LineOutbox
from gateway.channels.line.spec import SPEC

MAX_ALT_TEXT = 400
MAX_DIFF = 1500
"""UTF-16 units of diff in a bubble; a bubble's JSON may not exceed 30 KB."""
GREEN, RED, GREY = "#1DB446", "#D9534F", "#888888"
APPROVE, REJECT, FULL_DIFF = N_("Approve"), N_("Reject"), N_("Full diff")
PRESSED = N_("{label} #{id}")
"""What LINE shows in the chat as the admin's own message when a button is tapped."""
WAITING_FOR_YOU = N_("waiting for your review")


def _text(text: str, **style: object) -> FlexText:
    return FlexText(text=text or " ", wrap=True, **style)


class CardBubbles:
    """Proposal cards as Flex bubbles with signed postback buttons."""

    def __init__(self, signer: CardSigner) -> None:
        self.signer = signer

    def button(
        self, texts: Texts, label: str, action: CardAction, proposal_id: int, **style: object
    ) -> FlexButton:
        shown = texts(label)
        postback = PostbackAction(
            label=shown,
            data=self.signer.data(action, proposal_id),
            display_text=texts(PRESSED, label=shown, id=proposal_id),
        )
        return FlexButton(action=postback, height="sm", **style)

    def message(self, card: Card) -> FlexMessage:
        """The card as a Flex message; buttons only while the proposal is pending."""
        p, texts = card.proposal, card.texts
        body: list[FlexComponent] = [_text(card.title, weight="bold", size="md")]
        for label, text in card.facts():
            spans = [FlexSpan(text=f"{label}: ", weight="bold"), FlexSpan(text=text or " ")]
            body.append(FlexText(contents=spans, wrap=True, size="sm"))
        body += [_text(f"“{c}”", size="xs", color=GREY) for c in card.evidence.comments]
        if card.diff.strip():
            shown, dropped = fit(card.diff, MAX_DIFF, utf16_len)
            body += [FlexSeparator(margin="md"), _text(shown, size="xxs", margin="md")]
            if dropped:
                body.append(_text(trimmed_note(dropped, texts), size="xxs", color=GREY))
        outcome = card.outcome()
        if outcome:
            body.append(_text(outcome, weight="bold", size="sm", margin="md"))
        bubble = FlexBubble(
            size="giga",
            body=FlexBox(layout="vertical", spacing="sm", contents=body),
            footer=self._footer(card) if card.pending else None,
        )
        what = texts(WAITING_FOR_YOU) if card.pending else (outcome or p.status)
        return FlexMessage(alt_text=clip(f"{card.title}: {what}", MAX_ALT_TEXT), contents=bubble)

    def _footer(self, card: Card) -> FlexBox:
        pid, t = card.proposal.id, card.texts
        decide = FlexBox(
            layout="horizontal",
            spacing="sm",
            contents=[
                self.button(t, APPROVE, "approve", pid, style="primary", color=GREEN),
                self.button(t, REJECT, "reject", pid, style="primary", color=RED),
            ],
        )
        diff = self.button(t, FULL_DIFF, "diff", pid, style="link")
        return FlexBox(layout="vertical", spacing="sm", contents=[decide, diff])


def repeats_message(view: NoticeView) -> FlexMessage:
    """A repeat notice as a Flex bubble: its lines, then 🔍 and Reopen for each rejection
    (postback buttons stay on the message, unlike quick replies)."""
    lines = view.text.splitlines()
    body: list[FlexComponent] = [_text(lines[0], weight="bold", size="sm")]
    body += [_text(line, size="sm") for line in lines[1:]]
    rows: list[FlexComponent] = [
        FlexBox(
            layout="horizontal",
            spacing="sm",
            contents=[
                FlexButton(
                    action=PostbackAction(
                        label=b.label, data=f"{b.action}:{b.value}", display_text=b.label
                    ),
                    height="sm",
                    style="link" if n == 0 else "secondary",
                )
                for n, b in enumerate(row)
            ],
        )
        for row in view.rows
    ]
    bubble = FlexBubble(
        size="giga",
        body=FlexBox(layout="vertical", spacing="sm", contents=body),
        footer=FlexBox(layout="vertical", spacing="sm", contents=rows) if rows else None,
    )
    return FlexMessage(alt_text=clip(view.text, MAX_ALT_TEXT), contents=bubble)


class LineCards:
    """Pushes card bubbles, and decision notices, to LINE admins."""

    channel = SPEC.name

    def __init__(self, outbox: LineOutbox, bubbles: CardBubbles, admins: Collection[str]) -> None:
        self.outbox = outbox
        self.bubbles = bubbles
        self._admins = list(admins)

    def admins(self) -> list[str]:
        return list(self._admins)

    async def look_up_language(self, user_id: str) -> str | None:
        return (await self.outbox.client.profile(user_id)).language

    async def send_card(self, chat_id: str, card: Card) -> str | None:
        ids = await self.outbox.deliver_messages(
            chat_id, [self.bubbles.message(card)], f"card:{card.proposal.id}:{chat_id}"
        )
        return ids[0] if ids else None

    async def send_notice(self, chat_id: str, text: str, ref: str) -> None:
        await self.outbox.deliver_messages(chat_id, text_messages([text]), ref)

    async def send_repeats(self, chat_id: str, notice: RepeatNotice, texts: Texts) -> str | None:
        view = notice_view(notice, self.bubbles.signer, texts)
        ref = f"repeats:{notice.id}:{chat_id}"
        ids = await self.outbox.deliver_messages(chat_id, [repeats_message(view)], ref)
        return ids[0] if ids else None

    async def edit_card(self, copy: CardDelivery, card: Card) -> None:
        """Never called: the spec says LINE cannot edit, so a decision comes as a notice."""
        raise ChannelError("LINE cannot edit a sent message")
