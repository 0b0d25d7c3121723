"""Channel-neutral messages that flow between channels and the agent."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

MessageKind = Literal["normal", "error", "notice"]
"""`error` marks a placeholder shown to the user that the model never sees again."""

Role = Literal["user", "assistant"]


class ChatRef(BaseModel):
    """Where a message came from and where its answer goes."""

    model_config = ConfigDict(frozen=True)

    channel: str
    chat_id: str
    user_id: str | None = None
    thread_id: str | None = None
    is_group: bool = False


class IncomingMessage(BaseModel):
    """A user's text, already accepted by its channel for answering."""

    chat: ChatRef
    text: str
    user_name: str | None = None
    platform_message_id: str | None = None
    inbox_id: int | None = None
    language: str = "en"
    """The language of the user's fixed texts (the gateway's own notices, not the model's)."""


class Button(BaseModel):
    """A channel-neutral button; each channel encodes `action` and `value` its own way."""

    label: str
    action: str
    value: str


class Reply(BaseModel):
    """What the agent answers: text, its stored id, and the buttons to show under it."""

    text: str
    kind: MessageKind = "normal"
    message_id: int | None = None
    buttons: list[Button] = Field(default_factory=list)
    delivered_ids: list[str] = Field(default_factory=list)
    """Platform ids of messages that already carried this answer (set after a crash)."""


def rating_buttons(message_id: int) -> list[Button]:
    """The 👍/👎 pair shown under every normal answer."""
    return [
        Button(label="👍", action="rate", value=f"{message_id}:+1"),
        Button(label="👎", action="rate", value=f"{message_id}:-1"),
    ]
