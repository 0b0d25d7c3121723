"""Reading an update python-telegram-bot refuses: the fields the gateway uses, from the raw JSON.

PTB validates every object of an update, so one field it calls required and Telegram
left out (`is_bot` in the Bot API's own examples, a poll's `members_only`), or a date in
milliseconds, would throw the user's whole message away. `salvage` keeps only what the
gateway reads (chat, sender, text or caption, entities, reply-to, topic, album, callback
data), fills in what PTB insists on, and lets PTB read that.
"""

from __future__ import annotations

from typing import Any

from telegram import Bot, Update

MESSAGE_KEYS = ("message", "edited_message")
"""The updates that carry a user's message the gateway handles."""
HANDLED = (*MESSAGE_KEYS, "callback_query")
_MAX_DATE = 253402300799  # 9999-12-31: beyond it datetime refuses (a date in milliseconds)


def read(raw: dict[str, Any], bot: Bot) -> tuple[Update | None, str]:
    """The update as PTB reads it, else as salvaged; (None, why) when neither can."""
    try:
        return Update.de_json(raw, bot), ""
    except Exception as exc:  # PTB raises TypeError, ValueError, KeyError, AttributeError
        problem = type(exc).__name__
    if not any(key in raw for key in HANDLED):
        # An update the gateway does not handle (an inline query, a member change): no loss.
        return Update(update_id=raw["update_id"]), ""
    kept = salvage(raw)
    if kept is None:
        return None, f"{problem}; no message or button press in it"
    try:
        return Update.de_json(kept, bot), ""
    except Exception as exc:
        return None, f"{problem}, then {type(exc).__name__}"


def salvage(raw: dict[str, Any]) -> dict[str, Any] | None:
    """A minimal update with the fields the gateway uses, or None when it has none of them."""
    out: dict[str, Any] = {"update_id": raw["update_id"]}
    query = raw.get("callback_query")
    if isinstance(query, dict):
        kept = _query(query)
        if kept is None:
            return None
        out["callback_query"] = kept
        return out
    for key in MESSAGE_KEYS:
        message = _message(raw.get(key))
        if message is not None:
            out[key] = message
            return out
    return None


def raw_message(raw: dict[str, Any]) -> dict[str, Any] | None:
    """The message object of a raw update, as Telegram sent it."""
    for key in MESSAGE_KEYS:
        if isinstance(raw.get(key), dict):
            return dict(raw[key])
    return None


def query_id(raw: dict[str, Any]) -> str | None:
    """The id of a raw update's callback query, so that even an unreadable press is answered."""
    query = raw.get("callback_query")
    value = query.get("id") if isinstance(query, dict) else None
    return value if isinstance(value, str) and value else None


def _query(query: dict[str, Any]) -> dict[str, Any] | None:
    sender = _user(query.get("from"))
    if sender is None or query_id({"callback_query": query}) is None:
        return None
    out: dict[str, Any] = {
        "id": query["id"],
        "from": sender,
        "chat_instance": str(query.get("chat_instance") or ""),
    }
    if isinstance(query.get("data"), str):
        out["data"] = query["data"]
    message = _message(query.get("message"))
    if message is not None:
        out["message"] = message
    return out


def _message(raw: Any, *, nested: bool = False) -> dict[str, Any] | None:
    if not isinstance(raw, dict) or not _is_int(raw.get("message_id")):
        return None
    chat = raw.get("chat")
    if not isinstance(chat, dict) or not _is_int(chat.get("id")):
        return None
    kind = chat.get("type")
    if kind not in ("private", "group", "supergroup", "channel"):
        kind = "private" if chat["id"] > 0 else "supergroup"
    date = raw.get("date")
    if not (isinstance(date, int) and 0 <= date <= _MAX_DATE):
        date = 0
    out: dict[str, Any] = {
        "message_id": raw["message_id"],
        "date": date,
        "chat": {"id": chat["id"], "type": kind},
    }
    sender = _user(raw.get("from"))
    if sender is None and kind == "private":
        # In a 1:1 chat the chat is the user (some sources leave `from` out).
        sender = {"id": chat["id"], "is_bot": False, "first_name": _name(chat)}
    if sender is not None:
        out["from"] = sender
    for key in ("text", "caption", "media_group_id"):
        if isinstance(raw.get(key), str):
            out[key] = raw[key]
    for key in ("entities", "caption_entities"):
        entities = [e for e in map(_entity, _list(raw.get(key))) if e is not None]
        if entities:
            out[key] = entities
    if _is_int(raw.get("message_thread_id")):
        out["message_thread_id"] = raw["message_thread_id"]
    if raw.get("is_topic_message") is True:
        out["is_topic_message"] = True
    if not nested:
        replied = _message(raw.get("reply_to_message"), nested=True)
        if replied is not None:
            out["reply_to_message"] = replied
    return out


def _user(raw: Any) -> dict[str, Any] | None:
    if not isinstance(raw, dict) or not _is_int(raw.get("id")):
        return None
    out: dict[str, Any] = {
        "id": raw["id"],
        "is_bot": raw.get("is_bot") is True,
        "first_name": _name(raw),
    }
    if isinstance(raw.get("username"), str):
        out["username"] = raw["username"]
    return out


def _entity(raw: Any) -> dict[str, Any] | None:
    if not isinstance(raw, dict) or not isinstance(raw.get("type"), str):
        return None
    if not (_is_int(raw.get("offset")) and _is_int(raw.get("length"))):
        return None
    out = {"type": raw["type"], "offset": raw["offset"], "length": raw["length"]}
    user = _user(raw.get("user"))
    if user is not None:
        out["user"] = user
    return out


def _name(raw: dict[str, Any]) -> str:
    name = raw.get("first_name")
    return name if isinstance(name, str) else ""


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
