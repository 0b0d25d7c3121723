"""What a voice note, photo or document gets, for every channel alike, and what the user is told.

- Voice, audio and video notes (and files that are audio) are transcribed; the transcript is
  the user's message. Without speech-to-text configured, a notice says voice is not set up
  (nothing is downloaded).
- A photo (or a file that is an image) goes to the model as an image, with its caption, when
  the model takes images (`core.vision`); otherwise the caption alone is answered, or, with
  none, a notice says so.
- A PDF, DOCX or text file (Markdown and CSV included) gives its text, cut to a token budget
  with a note; other files get a notice.
- Every download is bounded in bytes (per kind, the platform's declared size checked first)
  and in time; types are sniffed from the bytes; images past a pixel limit, PDFs past a page
  limit and DOCX files that unpack too far are refused; images and documents are decoded in
  a child process bounded in memory and time (`media.worker`), one at a time per user and a
  few at once overall, so that one user's file holds up another's for a bounded time only.
- Each refusal has its notice; nothing is answered that the user did not send.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import Counter
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from gateway.config import MediaSettings
from gateway.core.models import AttachmentRecord
from gateway.core.settings import MB
from gateway.core.vision import NO_VISION, VisionPolicy
from gateway.errors import (
    MediaBomb,
    MediaError,
    MediaTooBig,
    MediaUnavailable,
    MediaUnsupported,
    TranscriptionFailed,
)
from gateway.i18n import N_
from gateway.media.documents import READ as DOCUMENT_TYPES
from gateway.media.documents import Extracted
from gateway.media.held import Held
from gateway.media.images import PreparedImage
from gateway.media.keep import keep
from gateway.media.remote import READABLE, Kind, Remote, megabytes
from gateway.media.sniff import sniff
from gateway.media.stt import EXTENSIONS, Transcriber, duration
from gateway.media.worker import decode

log = logging.getLogger(__name__)

TOO_BIG = {
    "voice": N_("Sorry, that voice message is too big for me: I can read up to {limit}."),
    "image": N_("Sorry, that image is too big for me: I can read up to {limit}."),
    "document": N_("Sorry, that file is too big for me: I can read up to {limit}."),
}
UNAVAILABLE = {
    "voice": N_("Sorry, I couldn't download that voice message. Please send it again in a moment."),
    "image": N_("Sorry, I couldn't download that image. Please send it again in a moment."),
    "document": N_("Sorry, I couldn't download that file. Please send it again in a moment."),
}
BOMB = {
    "pixels": N_("Sorry, that image is too large to open safely: it has more than {limit} pixels."),
    "pages": N_("Sorry, that PDF has more than {limit} pages, too many for me to read."),
    "bytes": N_("Sorry, that file unpacks to more than {limit}, too much to open safely."),
    "work": N_("Sorry, that file takes too much memory or time to open safely."),
}
TOO_LONG = N_("Sorry, that recording is too long for me: I can listen to up to {limit}.")
NO_STT = N_("Sorry, voice messages are not set up on this bot yet. Please type your question.")
STT_FAILED = N_(
    "Sorry, I couldn't transcribe that voice message just now. Please try again or type it."
)
NO_SPEECH = N_("I couldn't make out any words in that voice message. Please try again or type it.")
UNSUPPORTED_FILE = N_(
    "Sorry, I can't read that kind of file. I read PDF, Word (.docx), text, Markdown and CSV"
    " documents, and images."
)
UNSUPPORTED_AUDIO = N_(
    "Sorry, I can't play that audio format. Please send a voice message instead."
)
UNSUPPORTED_IMAGE = N_("Sorry, I can't open that image format. Please send it as a photo instead.")
EMPTY_DOCUMENT = N_(
    "I found no text in that document (a scanned PDF holds only pictures of its pages)."
    " Send it as a photo, or paste the text."
)
CUT_NOTE = "cut to fit: {shown:,} of {total:,} characters shown"
DECODING = 2
"""Attachments decoded at once (each image may take up to 4 bytes per allowed pixel)."""
IMAGE_SIDE = 1568
"""The longest side of an image sent to the model, in pixels."""
IMAGE_BYTES_OUT = 1 * MB
"""The most bytes of one image as sent to the model (JPEG)."""
UNPACKED_BYTES = 200 * MB
"""The most bytes a DOCX (a zip) may unpack to."""
T = TypeVar("T")


@dataclass
class Read:
    """What the model gets of a message with an attachment, or the notice the user gets instead."""

    text: str = ""
    images: list[str] = field(default_factory=list)
    attachments: list[AttachmentRecord] = field(default_factory=list)
    notice: str | None = None
    """The notice's message id (English, `N_`-marked), translated where it is said."""
    notice_args: dict[str, object] = field(default_factory=dict)
    then_answer: bool = False
    """The notice is said first, then `text` (the caption) is answered all the same."""


def readable(media: str | None, remote: Remote | None) -> bool:
    """Whether the gateway reads this message's media (else the content policy's notice)."""
    return remote is not None and media in READABLE


class Attachments:
    """Reads attachments within the limits: download, sniff, transcribe, prepare, extract."""

    def __init__(
        self,
        media: MediaSettings,
        vision: VisionPolicy,
        transcriber: Transcriber | None = None,
        *,
        keep_dir: Path | None = None,
    ) -> None:
        self.media = media
        """How much of each kind is downloaded, unpacked and handed on, and how fast."""
        self.vision = vision
        self.transcriber = transcriber
        self.keep_dir = keep_dir
        """Where downloads are kept after their turn; None keeps nothing."""
        self._decoding = asyncio.Semaphore(DECODING)
        self._held = Held(media.download_memory_bytes, media.max_downloads)
        self._users: dict[str, asyncio.Lock] = {}
        self._waiting: Counter[str] = Counter()

    async def _off_loop(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """Light work (sniffing, keeping a file) in a thread, a few at a time."""
        async with self._decoding:
            return await asyncio.to_thread(fn, *args, **kwargs)

    @contextlib.asynccontextmanager
    async def _turn(self, user: str) -> AsyncIterator[None]:
        """One decoding at a time per user: a user's second file waits for their first."""
        lock = self._users.setdefault(user, asyncio.Lock())
        self._waiting[user] += 1
        try:
            async with lock, self._decoding:
                yield
        finally:
            self._waiting[user] -= 1
            if not self._waiting[user]:
                del self._waiting[user], self._users[user]

    async def _decode(self, user: str, job: str, data: bytes, **options: Any) -> Any:
        """Decoding in a bounded child process (`media.worker`)."""
        media = self.media
        async with self._turn(user):
            return await decode(
                job,
                data,
                memory=media.decode_memory_bytes,
                seconds=media.decode_seconds,
                **options,
            )

    async def read(
        self, media: str, remote: Remote, caption: str | None, *, user: str = ""
    ) -> Read:
        """The turn's parts for one attachment, or a notice; never raises for the user's file.

        `user` (any stable key for the sender) shares the decoding fairly between users.
        """
        kind = READABLE[media]
        words = (caption or "").strip()
        if kind == "voice" and self.transcriber is None:
            return Read(notice=NO_STT)
        if kind == "voice" and (remote.duration or 0) > self.media.max_voice_seconds:
            return self._too_long()  # as declared: not even downloaded
        if kind == "image" and not await self.vision.allowed():
            # Not worth downloading: the model would not see it.
            return self._unseen(media, remote, words)
        try:
            # The bytes are held until the turn is done with them: room is made first.
            seconds = self.media.media_timeout_seconds
            async with self._held.bytes(self.media.download_cap(kind), seconds):
                return await self._read(media, kind, remote, words, user)
        except MediaError as exc:
            log.info("a %s was not read: %s", media, exc)
            notice, args = _notice(kind, exc)
            return Read(notice=notice, notice_args=args)

    async def _read(self, media: str, kind: Kind, remote: Remote, words: str, user: str) -> Read:
        try:
            data = await self._download(kind, remote)
            mime = await self._off_loop(sniff, data)
            if kind == "document" and mime.startswith("image/"):
                kind = "image"
                if not await self.vision.allowed():
                    return self._unseen(media, remote, words, mime=mime, size=len(data))
            elif kind == "document" and mime.startswith("audio/") and mime in EXTENSIONS:
                kind = "voice"  # a recording sent as a file
                if self.transcriber is None:
                    return Read(notice=NO_STT)
            record = AttachmentRecord(
                kind=kind,
                source=media,
                mime=mime,
                size=len(data),
                name=_shown_name(remote.name) if kind == "document" else None,
                duration=remote.duration,
            )
            if kind == "voice":
                read = await self._voice(data, record, words)
            elif kind == "image":
                read = await self._image(user, data, record, words)
            else:
                read = await self._document(user, data, record, words)
            if read.notice is None and self.keep_dir is not None:
                record.kept = await self._off_loop(keep, self.keep_dir, data, mime)
            return read
        except MediaError as exc:
            log.info("a %s was not read: %s", media, exc)
            notice, args = _notice(kind, exc)
            if isinstance(exc, MediaUnavailable) and words:
                # The caption still asks something: answered, the model told the file is
                # missing, after the notice that says so.
                return self._caption_only(media, kind, remote, words, notice)
            return Read(notice=notice, notice_args=args)

    def _too_long(self) -> Read:
        limit = self.media.max_voice_seconds
        shown = f"{int(limit // 60)}:{int(limit % 60):02d}"
        return Read(notice=TOO_LONG, notice_args={"limit": shown})

    def _caption_only(
        self, media: str, kind: Kind, remote: Remote, words: str, notice: str
    ) -> Read:
        record = AttachmentRecord(
            kind=kind,
            source=media,
            mime="unknown (not downloaded)",
            size=remote.size or 0,
            name=_shown_name(remote.name) if kind == "document" else None,
            sent_as="caption",
            note="the file could not be downloaded",
        )
        return Read(text=words, attachments=[record], notice=notice, then_answer=True)

    async def _download(self, kind: Kind, remote: Remote) -> bytes:
        cap = self.media.download_cap(kind)
        if remote.size is not None and remote.size > cap:
            raise MediaTooBig(f"declared {remote.size} bytes, over {cap}", cap)
        seconds = self.media.media_timeout_seconds
        try:
            async with self._held.slot(seconds), asyncio.timeout(seconds):
                data = await remote.fetch(cap)
        except TimeoutError:
            raise MediaUnavailable(f"no download within {seconds:g} s") from None
        if len(data) > cap:  # whatever the channel's download did
            raise MediaTooBig(f"{len(data)} bytes, over {cap}", cap)
        if not data:
            raise MediaUnavailable("the download was empty")
        return data

    async def _voice(self, data: bytes, record: AttachmentRecord, words: str) -> Read:
        assert self.transcriber is not None
        if record.mime not in EXTENSIONS:
            raise MediaUnsupported(
                f"{record.mime} is not audio the gateway sends for transcription"
            )
        # The platform's word is checked before the download; the bytes' own, here.
        seconds = await self._off_loop(duration, data)
        if seconds is not None and seconds > self.media.max_voice_seconds:
            return self._too_long()
        if seconds is not None and record.duration is None:
            record.duration = seconds
        transcript = await self.transcriber.transcribe(data, record.mime)
        if not transcript:
            return Read(notice=NO_SPEECH)
        record.text_chars = len(transcript)
        record.sent_as = "transcript"
        text = f"{words}\n\n{transcript}" if words else transcript
        return Read(text=text, attachments=[record])

    async def _image(self, user: str, data: bytes, record: AttachmentRecord, words: str) -> Read:
        cap = self.media.download_cap("image")
        if cap < record.size:
            raise MediaTooBig(f"{record.size} bytes, over {cap}", cap)
        prepared: PreparedImage = await self._decode(
            user,
            "image",
            data,
            max_pixels=self.media.max_image_pixels,
            side=IMAGE_SIDE,
            max_bytes=IMAGE_BYTES_OUT,
        )
        record.width, record.height = prepared.width, prepared.height
        record.sent_as = "image"
        if (prepared.sent_width, prepared.sent_height) != (prepared.width, prepared.height):
            record.note = f"resized to {prepared.sent_width}x{prepared.sent_height}"
        return Read(text=words, images=[prepared.data_url], attachments=[record])

    async def _document(self, user: str, data: bytes, record: AttachmentRecord, words: str) -> Read:
        if record.mime not in DOCUMENT_TYPES:
            raise MediaUnsupported(f"{record.mime} is not a document type the gateway reads")
        found: Extracted = await self._decode(
            user,
            "document",
            data,
            mime=record.mime,
            max_pages=self.media.max_pdf_pages,
            budget_tokens=self.media.document_tokens,
            unpacked=UNPACKED_BYTES,
        )
        if not found.text.strip():
            return Read(notice=EMPTY_DOCUMENT)
        record.pages = found.pages
        record.text_chars = found.total_chars
        record.content = found.text
        record.sent_as = "text"
        if found.cut:
            record.note = CUT_NOTE.format(shown=len(found.text), total=found.total_chars)
        return Read(text=words, attachments=[record])

    def _unseen(
        self, media: str, remote: Remote, words: str, *, mime: str = "", size: int | None = None
    ) -> Read:
        """An image the model will not see: its caption alone, or the notice."""
        if not words:
            return Read(notice=NO_VISION)
        record = AttachmentRecord(
            kind="image",
            source=media,
            mime=mime or "unknown (not downloaded)",
            size=size if size is not None else remote.size or 0,
            width=remote.width,
            height=remote.height,
            sent_as="caption",
            note="the model gets no images (LLM_VISION)",
        )
        return Read(text=words, attachments=[record])


def _notice(kind: Kind, exc: MediaError) -> tuple[str, dict[str, object]]:
    """The notice for a file that could not be read, and what it names."""
    if isinstance(exc, MediaTooBig):
        return TOO_BIG[kind], {"limit": megabytes(exc.limit)}
    if isinstance(exc, MediaBomb):
        limit = megabytes(exc.limit) if exc.unit == "bytes" else f"{exc.limit:,}"
        return BOMB[exc.unit], {"limit": limit}
    if isinstance(exc, TranscriptionFailed):
        return STT_FAILED, {}
    if isinstance(exc, MediaUnsupported):
        return {"voice": UNSUPPORTED_AUDIO, "image": UNSUPPORTED_IMAGE}.get(
            kind, UNSUPPORTED_FILE
        ), {}
    return UNAVAILABLE[kind], {}


def _shown_name(name: str | None) -> str | None:
    """A file name fit to show: its last path part, printable, at most 120 characters."""
    if not name:
        return None
    base = name.replace("\\", "/").rsplit("/", 1)[-1]
    shown = "".join(ch for ch in base if ch.isprintable() and ch not in "[]").strip()
    return shown[:120] or None
