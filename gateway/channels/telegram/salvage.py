"""Reading a button press python-telegram-bot refuses: the fields the gateway uses, from the JSON.

A press is read by PTB (its `CallbackQuery` answers it and its message is edited), and PTB
validates every object of an update, so one field it calls required and Telegram left out
(`is_bot` in the Bot API's own examples), or a date in milliseconds, would leave the
button spinning. `salvage` keeps only what the gateway reads (the presser, the callback
data, the message as `incoming` reads it), fills in what PTB insists on, and lets PTB read
that. Messages are read by `incoming` alone.
"""

from __future__ import annotations

from typing import Any

from telegram import Bot, CallbackQuery, Update

from gateway.channels.telegram.incoming import read_message, read_user

MESSAGE_KEYS = ("message", "edited_message")
"""The updates that carry a user's message the gateway handles."""


def read_press(raw: dict[str, Any], bot: Bot) -> tuple[CallbackQuery | None, str]:
    """The press as PTB reads it, else as salvaged; (None, why) when neither can."""
    problem = "no user"  # PTB lets a press without its user through
    try:
        query = Update.de_json(raw, bot).callback_query
    except Exception as exc:  # PTB raises TypeError, ValueError, KeyError, AttributeError
        problem = type(exc).__name__
    else:
        if query is not None and query.from_user is not None:
            return query, ""
    kept = salvage(raw)
    if kept is None:
        return None, f"{problem}; no button press in it"
    try:
        query = Update.de_json(kept, bot).callback_query
    except Exception as exc:
        return None, f"{problem}, then {type(exc).__name__}"
    return query, ""


def salvage(raw: dict[str, Any]) -> dict[str, Any] | None:
    """A minimal update with the press's fields the gateway uses, or None without them."""
    query = raw.get("callback_query")
    if not isinstance(query, dict):
        return None
    sender = read_user(query.get("from"))
    if sender is None or query_id(raw) is None:
        return None
    kept: dict[str, Any] = {
        "id": query["id"],
        "from": sender.to_json(),
        "chat_instance": str(query.get("chat_instance") or ""),
    }
    if isinstance(query.get("data"), str):
        kept["data"] = query["data"]
    message = read_message(query.get("message"))
    if message is not None:
        kept["message"] = message.to_json()
    return {"update_id": raw["update_id"], "callback_query": kept}


def raw_message(raw: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """The message object of a raw update as Telegram sent it, with its key."""
    for key in MESSAGE_KEYS:
        value = raw.get(key)
        if value is not None:
            return key, value
    return None


def query_id(raw: dict[str, Any]) -> str | None:
    """The id of a raw update's callback query, so that even an unreadable press is answered."""
    query = raw.get("callback_query")
    value = query.get("id") if isinstance(query, dict) else None
    return value if isinstance(value, str) and value else None
