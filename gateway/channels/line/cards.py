"""Proposal cards in LINE: a Flex bubble with Approve / Reject / Full diff postbacks.

The bubbles are line-bot-sdk's Flex models, sent as their JSON (`to_dict`). This is the
module of the channel's hot and idle paths that loads the SDK (29 MB resident): it is
imported when the first card or repeat notice is rendered (`admin_cards.FlexCards`), not
at start.
"""

from __future__ import annotations

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
    CardSigner,
    NoticeView,
    Texts,
    clip,
    fit,
    trimmed_note,
    utf16_len,
)

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
