"""A file a user sent, as its channel describes it before download, and the caps per kind."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

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


MB = 1024 * 1024


@dataclass(frozen=True)
class MediaLimits:
    """How much of each kind is downloaded, unpacked and handed on."""

    voice_bytes: int = 20 * MB
    image_bytes: int = 10 * MB
    document_bytes: int = 20 * MB
    seconds: float = 30.0
    """The most one download may take."""
    max_pixels: int = 40_000_000
    """An image with more pixels is refused before it is decoded (a decompression bomb)."""
    max_pdf_pages: int = 100
    document_tokens: int = 2000
    """The most estimated tokens of a document's text the model gets."""
    image_side: int = 1568
    """The longest side of an image sent to the model, in pixels."""
    image_bytes_out: int = 1 * MB
    """The most bytes of one image as sent to the model (JPEG)."""
    unpacked_bytes: int = 200 * MB
    """The most bytes a DOCX (a zip) may unpack to."""
    decode_memory_bytes: int = 1024 * MB
    """The address space of the child process decoding one image or document."""
    decode_seconds: float = 20.0
    """The wall (and CPU) time that child may take."""
    voice_seconds: float = 600.0
    """The longest recording sent for transcription (declared, then as its bytes say)."""
    downloads: int = 8
    """Downloads at once, across all chats."""
    held_bytes: int = 256 * MB
    """Bytes of downloads held in memory at once, across all chats (each counts its cap)."""
    keep_dir: Path | None = None
    """Where downloads are kept after their turn; None keeps nothing."""

    def cap(self, kind: Kind) -> int:
        return {
            "voice": self.voice_bytes,
            "image": self.image_bytes,
            "document": self.document_bytes,
        }[kind]


def megabytes(size: int) -> str:
    """A size as people read it: "20 MB", "1.5 MB", "300 KB"."""
    if size >= MB:
        value = size / MB
        return f"{value:.0f} MB" if value >= 10 or value == int(value) else f"{value:.1f} MB"
    return f"{max(1, round(size / 1024))} KB"
