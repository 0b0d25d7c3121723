"""A user's message as the gateway reads it: the few fields it uses, straight from the JSON.

python-telegram-bot's `Update.de_json` builds every object of an update with all of its
attributes (about 200 for a message, each through a frozen `__setattr__`); an answer needs
a dozen fields. This reader takes those leniently, with the rules that used to salvage what
PTB refused: a chat type Telegram did not give is read from the id's sign, a missing
`is_bot` is false, a missing first name is empty, a bad date is 0, and entities that are not
whole are left out. What it cannot read at all (no message id, no chat id) is None.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from telegram import User

CHAT_TYPES = frozenset(("private", "group", "supergroup", "channel"))
_MAX_DATE = 253402300799  # 9999-12-31: beyond it datetime refuses (a date in milliseconds)


@dataclass(frozen=True, slots=True)
class Person:
    """Who sent a message or pressed a button."""

    id: int
    first_name: str = ""
    is_bot: bool = False
    last_name: str | None = None
    username: str | None = None
    language_code: str | None = None

    @property
    def full_name(self) -> str:
        return f"{self.first_name} {self.last_name}" if self.last_name else self.first_name

    def to_json(self) -> dict[str, Any]:
        """The user as the Bot API would send it."""
        out: dict[str, Any] = {"id": self.id, "is_bot": self.is_bot, "first_name": self.first_name}
        for key in ("last_name", "username", "language_code"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        return out

    @classmethod
    def of(cls, user: User) -> Person:
        """The person of a PTB user (a button press is read by PTB)."""
        return cls(
            user.id, user.first_name, user.is_bot, user.last_name, user.username, user.language_code
        )


@dataclass(frozen=True, slots=True)
class Entity:
    """A marked span of a text (mention, command, ...), in UTF-16 code units as Telegram counts."""

    type: str
    offset: int
    length: int
    user_id: int | None = None
    """Whom a text_mention names."""


@dataclass(frozen=True, slots=True)
class Incoming:
    """A message from a chat, with what the gateway reads of it."""

    message_id: int
    chat_id: int
    chat_type: str
    date: int
    sender: Person | None
    chat_name: str = ""
    """The private chat's first name (the user's, when `from` is missing)."""
    text: str | None = None
    caption: str | None = None
    entities: tuple[Entity, ...] = ()
    caption_entities: tuple[Entity, ...] = ()
    thread_id: int | None = None
    is_topic_message: bool = False
    album: str | None = None
    reply_to: Incoming | None = None

    @property
    def is_group(self) -> bool:
        return self.chat_type != "private"

    @property
    def topic(self) -> int | None:
        """The forum topic it was written in (in a forum only: elsewhere the id is a thread)."""
        return self.thread_id if self.is_topic_message else None

    def spans(self, kinds: frozenset[str], *, caption: bool = True) -> list[tuple[Entity, str]]:
        """The entities of these kinds in the text (and the caption), with the text each marks."""
        out = [(e, _span(self.text, e)) for e in self.entities if e.type in kinds]
        if caption:
            out += [(e, _span(self.caption, e)) for e in self.caption_entities if e.type in kinds]
        return out

    def to_json(self) -> dict[str, Any]:
        """The message as the Bot API would send it, with these fields only (for PTB to read)."""
        out: dict[str, Any] = {
            "message_id": self.message_id,
            "date": self.date,
            "chat": {"id": self.chat_id, "type": self.chat_type},
        }
        if self.sender is not None:
            out["from"] = self.sender.to_json()
        for key, value in (("text", self.text), ("caption", self.caption)):
            if value is not None:
                out[key] = value
        if self.album is not None:
            out["media_group_id"] = self.album
        for key, entities in (
            ("entities", self.entities),
            ("caption_entities", self.caption_entities),
        ):
            if entities:
                out[key] = [_entity_json(e) for e in entities]
        if self.thread_id is not None:
            out["message_thread_id"] = self.thread_id
        if self.is_topic_message:
            out["is_topic_message"] = True
        if self.reply_to is not None:
            out["reply_to_message"] = self.reply_to.to_json()
        return out


def read_message(raw: Any, *, nested: bool = False) -> Incoming | None:
    """The message of a raw update, or None when it has no message id or no chat id."""
    if not isinstance(raw, dict) or not _is_int(raw.get("message_id")):
        return None
    chat = raw.get("chat")
    if not isinstance(chat, dict) or not _is_int(chat.get("id")):
        return None
    kind = chat.get("type")
    if kind not in CHAT_TYPES:
        kind = "private" if chat["id"] > 0 else "supergroup"
    date = as_int(raw.get("date"))
    sender = read_user(raw.get("from"))
    replied = None if nested else read_message(raw.get("reply_to_message"), nested=True)
    return Incoming(
        message_id=raw["message_id"],
        chat_id=chat["id"],
        chat_type=kind,
        date=date if date is not None and 0 <= date <= _MAX_DATE else 0,
        sender=sender,
        chat_name=_str(chat.get("first_name")) or "",
        text=_str(raw.get("text")),
        caption=_str(raw.get("caption")),
        entities=_entities(raw.get("entities")),
        caption_entities=_entities(raw.get("caption_entities")),
        thread_id=as_int(raw.get("message_thread_id")),
        is_topic_message=raw.get("is_topic_message") is True,
        album=_str(raw.get("media_group_id")),
        reply_to=replied,
    )


def read_user(raw: Any) -> Person | None:
    """A user object, or None without an integer id."""
    if not isinstance(raw, dict) or not _is_int(raw.get("id")):
        return None
    return Person(
        id=raw["id"],
        first_name=_str(raw.get("first_name")) or "",
        is_bot=raw.get("is_bot") is True,
        last_name=_str(raw.get("last_name")),
        username=_str(raw.get("username")),
        language_code=_str(raw.get("language_code")),
    )


def _entities(raw: Any) -> tuple[Entity, ...]:
    if not isinstance(raw, list):
        return ()
    out = []
    for item in raw:
        if not isinstance(item, dict) or not isinstance(item.get("type"), str):
            continue
        offset, length = as_int(item.get("offset")), as_int(item.get("length"))
        if offset is not None and length is not None:
            user = read_user(item.get("user"))
            out.append(Entity(item["type"], offset, length, user.id if user else None))
    return tuple(out)


def _span(text: str | None, entity: Entity) -> str:
    """The text an entity marks: its offsets count UTF-16 code units, not characters."""
    if not text:
        return ""
    units = text.encode("utf-16-le")
    start = entity.offset * 2
    return units[start : start + entity.length * 2].decode("utf-16-le", "replace")


def _entity_json(entity: Entity) -> dict[str, Any]:
    out: dict[str, Any] = {"type": entity.type, "offset": entity.offset, "length": entity.length}
    if entity.user_id is not None:
        out["user"] = {"id": entity.user_id, "is_bot": False, "first_name": ""}
    return out


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def as_int(value: Any) -> int | None:
    """`value` if it is an integer (JSON's true and false are not)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _is_int(value: Any) -> bool:
    return as_int(value) is not None
