"""Rejections that keep coming back: the admins' chat notice of one pass, and its buttons.

When a synthesis pass suppresses repeats of standing rejections, the run records the new
wording of each (`RejectedRepeat`) with the run itself, so the notice is in the database
before anything is sent. One notice per pass names each rejection matched and how many
times it has come back, with two buttons per rejection: 🔍 shows the new wording beside
the rejected one, Reopen takes the rejection back as the console's Reopen does.

A button carries "rq<v|o>:<notice item id>:<signature>", signed with the channel's card
key like the card buttons (well within Telegram's 64 bytes and LINE's 300 characters).
"""

from __future__ import annotations

import hmac
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel

from gateway.core.models import Button
from gateway.i18n import ENGLISH, N_, Np_, Texts
from gateway.review.buttons import CardSigner
from gateway.review.cards import clip
from gateway.review.proposals import Proposal

RepeatAction = Literal["compare", "reopen"]

PREFIX = "rq"
_CODES: dict[RepeatAction, str] = {"compare": "v", "reopen": "o"}
_ACTIONS: dict[str, RepeatAction] = {code: action for action, code in _CODES.items()}
_DATA = re.compile(PREFIX + r"([vo]):([0-9]{1,18}):([A-Za-z0-9_-]{1,32})", re.ASCII)
MAX_ITEMS = 10
"""Rejections one notice names with buttons; the rest are counted (the console lists all)."""
MAX_WORDING = 1200
"""Characters of each skill body 🔍 shows."""

TITLE = Np_(
    "🔁 Synthesis run {run} suppressed repeats of {n} rejected proposal:",
    "🔁 Synthesis run {run} suppressed repeats of {n} rejected proposals:",
)
ITEM = Np_(
    "#{id} {slug}: came back {n} time since it was rejected",
    "#{id} {slug}: came back {n} times since it was rejected",
)
MORE = Np_("…and {n} more: see the console.", "…and {n} more: see the console.")
HINT = N_("🔍 shows the new wording beside the rejected one; Reopen takes the rejection back.")
COMPARE_LABEL = N_("🔍 #{id}")
REOPEN_LABEL = N_("↩️ Reopen #{id}")
COMPARE_TITLE = N_("🔍 Rejected proposal #{id} ({slug}) and what came back in run {run}")
REJECTED_WORDING = N_("Rejected")
NEW_WORDING = N_("New, as {name}")


def is_repeat_data(data: str | None) -> bool:
    """Whether button data is meant for the repeat notice (valid or not)."""
    return data is not None and data[:4] in {f"{PREFIX}v:", f"{PREFIX}o:"}


def repeat_button(signer: CardSigner, label: str, action: RepeatAction, item_id: int) -> Button:
    """A signed notice button ("rqv:12:<signature>" as the core's action and value)."""
    code = f"{PREFIX}{_CODES[action]}"
    return Button(label=label, action=code, value=f"{item_id}:{signer.sign(f'{code}:{item_id}')}")


def verify_repeat(signer: CardSigner, data: str | None) -> tuple[RepeatAction, int] | None:
    """(action, notice item id) when the data is well formed and signed by us, else None."""
    match = _DATA.fullmatch(data or "")
    if match is None:
        return None
    code, raw_id, signature = match.groups()
    if not hmac.compare_digest(signature, signer.sign(f"{PREFIX}{code}:{raw_id}")):
        return None
    return _ACTIONS[code], int(raw_id)


class RejectedRepeat(BaseModel):
    """A suppressed repeat of a standing rejection: which one, and the wording that came back."""

    proposal_id: int
    name: str
    description: str
    content: str


class NoticeItem(RejectedRepeat):
    """One rejection a notice names: its repeats this pass and in all since it was rejected."""

    id: int
    notice_id: int
    run_id: int
    repeats: int
    total: int
    slug: str


class RepeatNotice(BaseModel):
    """What one pass's notice names (at most `MAX_ITEMS`, `more` not named)."""

    id: int
    run_id: int
    created_at: float
    items: list[NoticeItem]
    more: int = 0


def grouped(repeats: Sequence[RejectedRepeat]) -> list[tuple[RejectedRepeat, int]]:
    """One entry per rejection, in the order first matched: its latest wording and count."""
    found: dict[int, tuple[RejectedRepeat, int]] = {}
    for r in repeats:
        count = found[r.proposal_id][1] if r.proposal_id in found else 0
        found[r.proposal_id] = (r, count + 1)
    return list(found.values())


@dataclass(frozen=True)
class NoticeView:
    """The notice as one admin sees it: its text, and a row of two buttons per rejection."""

    text: str
    rows: list[list[Button]]
    notice_id: int


def notice_view(notice: RepeatNotice, signer: CardSigner, texts: Texts = ENGLISH) -> NoticeView:
    """The text and the signed buttons of a notice, in the admin's language."""
    lines = [texts.plural(TITLE, len(notice.items) + notice.more, run=notice.run_id)]
    rows: list[list[Button]] = []
    for item in notice.items:
        lines.append(texts.plural(ITEM, item.total, id=item.proposal_id, slug=item.slug))
        rows.append(
            [
                repeat_button(
                    signer, texts(COMPARE_LABEL, id=item.proposal_id), "compare", item.id
                ),
                repeat_button(signer, texts(REOPEN_LABEL, id=item.proposal_id), "reopen", item.id),
            ]
        )
    if notice.more:
        lines.append(texts.plural(MORE, notice.more))
    lines.append(texts(HINT))
    return NoticeView("\n".join(lines), rows, notice.id)


def comparison(item: NoticeItem, rejected: Proposal, texts: Texts = ENGLISH) -> str:
    """The new wording beside the rejected one, as 🔍 shows it."""
    title = texts(COMPARE_TITLE, id=rejected.id, slug=rejected.slug, run=item.run_id)
    return "\n\n".join(
        [
            title,
            _wording(texts(REJECTED_WORDING), rejected.description, rejected.content),
            _wording(texts(NEW_WORDING, name=item.name), item.description, item.content),
        ]
    )


def _wording(label: str, description: str, content: str) -> str:
    body = content.strip()
    shown = body if len(body) <= MAX_WORDING else body[: MAX_WORDING - 1].rstrip() + "…"
    return f"— {label} —\n{clip(description, 300)}\n{shown}"
