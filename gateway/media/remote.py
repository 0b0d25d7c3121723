"""A file a user sent, as its channel describes it before download."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal

from gateway.core.settings import MB

Kind = Literal["voice", "image", "document"]
"""What the gateway reads a file as: speech to transcribe, a picture to show, text to extract."""

READABLE: dict[str, Kind] = {
    "voice": "voice",
    "audio": "voice",
    "video note": "voice",
    "photo": "image",
    "file": "document",
}
"""The channel-neutral media names (see `conversation.models.Message.media`) the gateway reads,
and as what. A file (document) turns out an image when its bytes say so."""

Fetch = Callable[[int], Awaitable[bytes]]
"""Downloads the file, raising MediaTooBig past the given number of bytes and MediaUnavailable
when the platform fails; the caller bounds it in time."""


@dataclass(frozen=True)
class Remote:
    """A file not downloaded yet: what the platform declares (sizes may be unknown), how to get it.

    `name` is for showing only (a document's file name): nothing composes a path from it.
    """

    fetch: Fetch
    size: int | None = None
    name: str | None = None
    duration: float | None = None
    """Seconds, for voice and audio, as the platform declares."""
    width: int | None = None
    height: int | None = None


def megabytes(size: int) -> str:
    """A size as people read it: "20 MB", "1.5 MB", "300 KB"."""
    if size >= MB:
        value = size / MB
        return f"{value:.0f} MB" if value >= 10 or value == int(value) else f"{value:.1f} MB"
    return f"{max(1, round(size / 1024))} KB"
