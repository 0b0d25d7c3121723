"""Inline keyboards: the core's buttons as callback data, 👍/👎 under answers, card buttons.

A button's callback_data is "<action>:<value>" of the core's `Button`, e.g. "rate:42:-1"
(well under Telegram's 64 bytes); card buttons carry their signed data.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from telegram import InlineKeyboardButton, InlineKeyboardMarkup

from gateway.channels.api import Button

CHOSEN = "✓ "


def callback_data(button: Button) -> str:
    """The callback_data that carries a core button (at most 64 bytes, as Telegram requires)."""
    data = f"{button.action}:{button.value}"
    if len(data.encode()) > 64:
        raise ValueError(f"callback data too long: {data!r}")
    return data


@dataclass(frozen=True, slots=True)
class Keyboard:
    """One row of callback buttons, (label, data) each.

    Every answer carries one, so it is sent as the Bot API's JSON straight away; PTB's
    `InlineKeyboardMarkup` (an object per button, walked again to encode it) is built
    only for PTB's typed calls (`markup`).
    """

    row: tuple[tuple[str, str], ...]

    def to_dict(self) -> dict[str, Any]:
        """The reply_markup as the Bot API reads it."""
        return {"inline_keyboard": [[{"text": t, "callback_data": d} for t, d in self.row]]}

    def markup(self) -> InlineKeyboardMarkup:
        return InlineKeyboardMarkup(
            [[InlineKeyboardButton(text, callback_data=data) for text, data in self.row]]
        )


def keyboard(buttons: list[Button], chosen: str | None = None) -> Keyboard:
    """One row of inline buttons; the one whose value is `chosen` is marked."""
    return Keyboard(
        tuple(((CHOSEN if b.value == chosen else "") + b.label, callback_data(b)) for b in buttons)
    )
