"""Channel-neutral messages that flow between channels and the agent."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

MessageKind = Literal["normal", "error", "notice"]
"""`error` marks a placeholder shown to the user that the model never sees again."""

Role = Literal["user", "assistant"]
TERMINAL = "console"
"""The channel of `skillgate chat`: its users are exported and forgotten like a platform's."""


class ChatRef(BaseModel):
    """Where a message came from and where its answer goes."""

    model_config = ConfigDict(frozen=True)

    channel: str
    chat_id: str
    user_id: str | None = None
    thread_id: str | None = None
    is_group: bool = False


class AttachmentRecord(BaseModel):
    """What a user's message carried besides words, and what of it the model got.

    A voice note's transcript is the message's text; a document's extracted text is kept
    here (bounded) so that later turns can still read it; the media itself is not kept.
    """

    id: int = 0
    message_id: int = 0
    kind: Literal["voice", "image", "document"]
    source: str
    """The platform's word for it: "voice", "audio", "video note", "photo", "file"."""
    mime: str
    """Sniffed from the bytes."""
    size: int
    name: str | None = None
    """A document's file name, for showing only."""
    duration: float | None = None
    pages: int | None = None
    width: int | None = None
    height: int | None = None
    text_chars: int = 0
    """Characters of the transcript or of the document's whole text."""
    sent_as: Literal["transcript", "image", "text", "caption"] = "text"
    """What the model got: the transcript, the image, the extracted text, or only the caption."""
    note: str | None = None
    """What was cut or left out, and why."""
    content: str | None = None
    """A document's text as the model gets it (within the token budget)."""
    kept: str | None = None
    """The downloaded file, relative to the media folder, when SKILLGATE_KEEP_MEDIA is on."""


class IncomingMessage(BaseModel):
    """A user's text, already accepted by its channel for answering, with what it carried."""

    chat: ChatRef
    text: str
    """The user's words: text, caption, or a voice note's transcript ("" for a bare photo)."""
    user_name: str | None = None
    platform_message_id: str | None = None
    inbox_id: int | None = None
    language: str = "en"
    """The language of the user's fixed texts (the gateway's own notices, not the model's)."""
    images: list[str] = Field(default_factory=list)
    """Images for the model this turn, as data URLs (prepared, bounded)."""
    attachments: list[AttachmentRecord] = Field(default_factory=list)
    """Stored with the user's message."""
    memory: bool = False
    """The sender's memory may be used (SKILLGATE_MEMORY on, a sender id); in a group the
    store also asks for the sender's opt-in there."""
    context_since: float | None = None
    """In a group with group context on: the group's unaddressed lines kept since then go
    with the question (and are cleared)."""


class Button(BaseModel):
    """A channel-neutral button; each channel encodes `action` and `value` its own way."""

    label: str
    action: str
    value: str


class Voice(BaseModel):
    """An answer spoken: the audio in the format its platform plays, and how long it lasts.

    `url` is its signed link where the platform fetches media by URL (LINE); else the
    channel uploads `audio` (Telegram's voice message)."""

    audio: bytes
    mime: str
    seconds: float
    url: str | None = None


class Picture(BaseModel):
    """A picture the answer sends (`generate_image`): its bytes, type, and the prompt it was
    made from. `url` is its signed link where the platform fetches media by URL (LINE)."""

    data: bytes
    mime: str
    suffix: str
    prompt: str
    url: str | None = None


class Reply(BaseModel):
    """What the agent answers: text, its stored id, and the buttons to show under it."""

    text: str
    kind: MessageKind = "normal"
    message_id: int | None = None
    buttons: list[Button] = Field(default_factory=list)
    delivered_ids: list[str] = Field(default_factory=list)
    """Platform ids of messages that already carried this answer (set after a crash)."""
    remembered: list[str] = Field(default_factory=list)
    """Memory entries the model kept this turn (`remember`), shown to the user after it."""
    memory_dropped: int = 0
    """Old entries that went to make room for them."""
    resumed: bool = False
    """Stored by an earlier attempt at the same update: some of it may have gone out."""
    voice: Voice | None = None
    """The answer spoken too (text-to-speech), sent before its text."""
    pictures: list[Picture] = Field(default_factory=list)
    """Pictures made for this answer (`generate_image`), sent before its text."""


def rating_buttons(message_id: int) -> list[Button]:
    """The 👍/👎 pair shown under every normal answer."""
    return [
        Button(label="👍", action="rate", value=f"{message_id}:+1"),
        Button(label="👎", action="rate", value=f"{message_id}:-1"),
    ]
