"""Proposal cards in Telegram: HTML within 4096 characters, signed buttons, edits, the full diff."""

from __future__ import annotations

from collections.abc import Collection
from html import escape

from telegram import InlineKeyboardButton, InlineKeyboardMarkup

from gateway.channels.api import (
    N_,
    Card,
    CardDelivery,
    CardSigner,
    CopyGone,
    Np_,
    Proposal,
    RepeatNotice,
    Texts,
    fit,
    notice_view,
    trimmed_note,
    utf16_len,
)
from gateway.channels.telegram.buttons import callback_data
from gateway.channels.telegram.format import MAX_TEXT, Part
from gateway.channels.telegram.send import NotModified, Sender, Target, Undeliverable
from gateway.channels.telegram.spec import SPEC

APPROVE, REJECT, FULL_DIFF = N_("✅ Approve"), N_("❌ Reject"), N_("🔍 Full diff")
DIFF_CAPTION = Np_(
    "Full diff of proposal #{id} ({slug}): {n} line",
    "Full diff of proposal #{id} ({slug}): {n} lines",
)
NO_DIFFERENCES = N_("(no differences)")
MIN_DIFF = 40
"""Below this many characters of room, a card shows no diff at all, only the note."""


def _e(text: str) -> str:
    return escape(text, quote=False)


def card_part(card: Card, limit: int = MAX_TEXT) -> Part:
    """The card as one message; the diff is cut at a line to keep within `limit`, with a note."""
    texts = card.texts
    head = [(f"<b>{_e(card.title)}</b>", card.title)]
    head += [
        (f"<b>{_e(label)}:</b> {_e(text)}", f"{label}: {text}") for label, text in card.facts()
    ]
    head += [(f"<i>“{_e(c)}”</i>", f"“{c}”") for c in card.evidence.comments]
    outcome = card.outcome()
    html = "\n".join(h for h, _ in head)
    plain = "\n".join(p for _, p in head)
    tail_html = tail_plain = ""
    if outcome:
        tail_html, tail_plain = f"\n\n<b>{_e(outcome)}</b>", f"\n\n{outcome}"
    if card.diff.strip():
        total = len(card.diff.splitlines())
        room = limit - utf16_len(plain + tail_plain + "\n\n\n" + trimmed_note(total, texts))
        shown, dropped = fit(card.diff, room, utf16_len) if room >= MIN_DIFF else ("", total)
        if shown:
            html += f'\n\n<pre><code class="language-diff">{_e(shown)}</code></pre>'
            plain += f"\n\n{shown}"
        if dropped:
            note = trimmed_note(dropped, texts)
            html += f"\n<i>{_e(note)}</i>"
            plain += f"\n{note}"
    return Part(html + tail_html, plain + tail_plain)


class TelegramCards:
    """Sends and edits cards in the admins' private chats with the bot."""

    channel = SPEC.name

    def __init__(self, sender: Sender, signer: CardSigner, admins: Collection[int]) -> None:
        self.sender = sender
        self.signer = signer
        self._admins = [str(user_id) for user_id in admins]

    def admins(self) -> list[str]:
        return list(self._admins)

    def keyboard(self, card: Card) -> InlineKeyboardMarkup | None:
        """✅ Approve / ❌ Reject / 🔍 Full diff while pending; none once decided."""
        if not card.pending:
            return None
        pid, t = card.proposal.id, card.texts
        diff = [InlineKeyboardButton(t(FULL_DIFF), callback_data=self.signer.data("diff", pid))]
        decide = [
            InlineKeyboardButton(t(APPROVE), callback_data=self.signer.data("approve", pid)),
            InlineKeyboardButton(t(REJECT), callback_data=self.signer.data("reject", pid)),
        ]
        return InlineKeyboardMarkup([decide, diff])

    async def send_card(self, chat_id: str, card: Card) -> str | None:
        sent = await self.sender.send(
            Target(int(chat_id)), card_part(card), markup=self.keyboard(card)
        )
        return str(sent)

    async def send_notice(self, chat_id: str, text: str, ref: str) -> None:
        await self.sender.send(Target(int(chat_id)), Part.of_text(text))

    async def send_repeats(self, chat_id: str, notice: RepeatNotice, texts: Texts) -> str | None:
        """The repeat notice, a row of 🔍 and Reopen under it for each rejection."""
        view = notice_view(notice, self.signer, texts)
        rows = [
            [InlineKeyboardButton(b.label, callback_data=callback_data(b)) for b in row]
            for row in view.rows
        ]
        sent = await self.sender.send(
            Target(int(chat_id)), Part.of_text(view.text), markup=InlineKeyboardMarkup(rows)
        )
        return str(sent)

    async def edit_card(self, copy: CardDelivery, card: Card) -> None:
        if copy.platform_message_id is None:
            return
        await self.edit(int(copy.chat_id), int(copy.platform_message_id), card)

    async def look_up_language(self, user_id: str) -> str | None:
        return None  # the Bot API tells it only with the admin's own updates

    async def edit(self, chat_id: int, message_id: int, card: Card) -> None:
        """Make one copy show the card as it stands (no keyboard once decided)."""
        try:
            await self.sender.edit(chat_id, message_id, card_part(card), markup=self.keyboard(card))
        except NotModified:
            pass  # it already shows this: a second press, or another process got there first
        except Undeliverable as exc:
            raise CopyGone(str(exc)) from exc

    async def send_diff(self, target: Target, p: Proposal, diff: str, texts: Texts) -> None:
        """The whole unified diff as a .diff document."""
        lines = len(diff.splitlines())
        caption = texts.plural(DIFF_CAPTION, lines, id=p.id, slug=p.slug)
        body = (diff if diff.strip() else texts(NO_DIFFERENCES) + "\n").encode()
        filename = f"proposal-{p.id}-{p.slug}.diff"
        await self.sender.document(target, filename, body, caption)
