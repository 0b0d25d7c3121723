"""Inline keyboards: the core's buttons as callback data, 👍/👎 under answers, card buttons.

A button's callback_data is "<action>:<value>" of the core's `Button`, e.g. "rate:42:-1"
(well under Telegram's 64 bytes); card buttons carry their signed data.
"""

from __future__ import annotations

from telegram import InlineKeyboardButton, InlineKeyboardMarkup

from gateway.core.models import Button

CHOSEN = "✓ "


def callback_data(button: Button) -> str:
    """The callback_data that carries a core button (at most 64 bytes, as Telegram requires)."""
    data = f"{button.action}:{button.value}"
    if len(data.encode()) > 64:
        raise ValueError(f"callback data too long: {data!r}")
    return data


def keyboard(buttons: list[Button], chosen: str | None = None) -> InlineKeyboardMarkup:
    """One row of inline buttons; the one whose value is `chosen` is marked."""
    row = [
        InlineKeyboardButton(
            (CHOSEN if b.value == chosen else "") + b.label, callback_data=callback_data(b)
        )
        for b in buttons
    ]
    return InlineKeyboardMarkup([row])
