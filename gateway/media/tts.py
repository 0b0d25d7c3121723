"""Text to speech through an OpenAI-compatible `/audio/speech` endpoint.

OpenAI, Kokoro-FastAPI, speaches and LocalAI speak the same JSON request and answer with
the audio's bytes; the official `openai` client sends it (imported on first use) and the
body is read in pieces, bounded in bytes and in time while it arrives. The audio is asked
for in the format the platform plays (Telegram's voice messages: OGG/Opus; LINE's audio:
MP3); a server that answers another one is converted with libsndfile (`soundfile`).
"""

from __future__ import annotations

import asyncio
import io
import logging
import re
from dataclasses import dataclass
from typing import Literal, Protocol

from gateway.core.llm_wire import error_message, one_line
from gateway.core.openai_client import OpenAIEndpoint, load_openai
from gateway.errors import SpeechFailed
from gateway.logs import mask

log = logging.getLogger(__name__)

AudioFormat = Literal["opus", "mp3"]
"""What a platform plays: "opus" (OGG/Opus, Telegram's voice messages) or "mp3" (LINE)."""
MIME: dict[AudioFormat, str] = {"opus": "audio/ogg", "mp3": "audio/mpeg"}
OPUS_RATES = (8000, 12000, 16000, 24000, 48000)
"""The sample rates an Opus stream is written at (libsndfile refuses others)."""
_SENTENCE_END = re.compile(r"(?<=[.!?\u3002\uff01\uff1f\u2026])\s*|\n+")


@dataclass(frozen=True)
class Speech:
    """Spoken audio in the format asked for, how long it lasts, and how much text it says."""

    audio: bytes
    format: AudioFormat
    seconds: float
    spoken: int
    """Characters of the answer it says (the rest stays text only)."""

    @property
    def mime(self) -> str:
        return MIME[self.format]


class Speaker(Protocol):
    """Something that turns text into speech."""

    async def speak(self, text: str, voice: str, audio_format: AudioFormat) -> Speech: ...

    async def close(self) -> None: ...


def spoken_part(text: str, max_chars: int) -> str:
    """The start of `text` that is spoken: all of it when short, else whole sentences up to
    `max_chars` (a single longer sentence is cut at a word, or at the bound)."""
    text = text.strip()
    if len(text) <= max_chars:
        return text
    best = 0
    for found in _SENTENCE_END.finditer(text):
        end = found.start()
        if end > max_chars:
            break
        if end > 0:
            best = end
    if best == 0:
        cut = text.rfind(" ", 0, max_chars + 1)
        best = cut if cut > max_chars // 2 else max_chars
    return text[:best].strip()


class OpenAISpeaker(OpenAIEndpoint):
    """An OpenAI-compatible speech endpoint; every answer bounded in bytes and in time."""

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        *,
        timeout: float = 30.0,
        max_bytes: int = 5 * 1024 * 1024,
        unix_socket: str | None = None,
    ) -> None:
        super().__init__(base_url, model, api_key, timeout=timeout, unix_socket=unix_socket)
        self.max_bytes = max_bytes

    async def speak(self, text: str, voice: str, audio_format: AudioFormat) -> Speech:
        """`text` spoken in `voice`, as `audio_format`; SpeechFailed with the server's reason
        (keys masked), or when the audio is more than `max_bytes`, later than the timeout,
        empty, or not audio."""
        try:
            async with asyncio.timeout(self._timeout):
                raw = await self._read(text, voice, audio_format)
        except TimeoutError as exc:
            raise SpeechFailed(f"text-to-speech did not answer within {self._timeout:g} s") from exc
        if not raw:
            raise SpeechFailed("text-to-speech answered no audio")
        audio, seconds = await asyncio.to_thread(as_format, raw, audio_format)
        return Speech(audio=audio, format=audio_format, seconds=seconds, spoken=len(text))

    async def _read(self, text: str, voice: str, audio_format: AudioFormat) -> bytes:
        await load_openai()
        import openai

        secrets = self._secrets
        client = self._get_client()
        try:
            async with client.audio.speech.with_streaming_response.create(
                model=self.model, voice=voice, input=text, response_format=audio_format
            ) as response:
                declared = response.headers.get("content-length", "")
                if declared.isdigit() and int(declared) > self.max_bytes:
                    raise SpeechFailed(
                        f"text-to-speech answered {int(declared)} bytes, over the"
                        f" {self.max_bytes} allowed"
                    )
                body = bytearray()
                async for piece in response.iter_bytes():
                    body += piece
                    if len(body) > self.max_bytes:
                        raise SpeechFailed(
                            f"text-to-speech answered more than the {self.max_bytes} bytes allowed"
                        )
                return bytes(body)
        except openai.APIStatusError as exc:
            message = one_line(mask(error_message(_body(exc)) or _text(exc), secrets))
            raise SpeechFailed(
                f"text-to-speech answered HTTP {exc.status_code}: {message}"
            ) from exc
        except openai.APITimeoutError as exc:
            raise SpeechFailed(f"text-to-speech did not answer within {self._timeout:g} s") from exc
        except openai.APIConnectionError as exc:
            raise SpeechFailed(f"text-to-speech unreachable ({self.base_url})") from exc
        except openai.OpenAIError as exc:
            raise SpeechFailed(f"text-to-speech failed: {type(exc).__name__}") from exc


def _body(exc: object) -> object:
    return getattr(exc, "body", None)


def _text(exc: object) -> str:
    response = getattr(exc, "response", None)
    try:
        return str(getattr(response, "text", "") or "")
    except Exception:  # a streamed error body not read: its status says enough
        return ""


def as_format(raw: bytes, audio_format: AudioFormat) -> tuple[bytes, float]:
    """`raw` audio as `audio_format` (converted with libsndfile when the server answered
    another), and its seconds; SpeechFailed when it is no audio. Blocking: run it in a thread."""
    seconds = _length(raw, audio_format)
    if seconds is not None:
        return raw, seconds
    converted = _convert(raw, audio_format)
    seconds = _length(converted, audio_format)
    if seconds is None:
        raise SpeechFailed(f"text-to-speech audio could not be made {audio_format}")
    return converted, seconds


def _length(audio: bytes, audio_format: AudioFormat) -> float | None:
    """The seconds `audio` lasts when it is `audio_format` (mutagen reads the container)."""
    from mutagen.mp3 import MP3
    from mutagen.oggopus import OggOpus

    kind = OggOpus if audio_format == "opus" else MP3
    try:
        found = kind(io.BytesIO(audio))
    except Exception:  # mutagen raises its own kinds, and struct or index errors, on junk
        return None
    if audio_format == "mp3" and audio[:3] != b"ID3" and audio[:1] != b"\xff":
        return None  # mutagen finds an MPEG frame sync inside other files too
    length = getattr(found.info, "length", None)
    return float(length) if isinstance(length, int | float) and length > 0 else None


def _convert(raw: bytes, audio_format: AudioFormat) -> bytes:
    """Decode any audio libsndfile reads (WAV, FLAC, OGG, MP3) and write it as `audio_format`."""
    import soundfile

    try:
        data, rate = soundfile.read(io.BytesIO(raw), dtype="float32")
    except (soundfile.LibsndfileError, RuntimeError, TypeError) as exc:
        raise SpeechFailed("text-to-speech answered something that is not audio") from exc
    if not len(data):
        raise SpeechFailed("text-to-speech answered no audio")
    out = io.BytesIO()
    try:
        if audio_format == "opus":
            if rate not in OPUS_RATES:
                raise SpeechFailed(f"text-to-speech audio at {rate} Hz cannot be written as Opus")
            soundfile.write(out, data, rate, format="OGG", subtype="OPUS")
        else:
            soundfile.write(out, data, rate, format="MP3", subtype="MPEG_LAYER_III")
    except (soundfile.LibsndfileError, RuntimeError, TypeError) as exc:
        raise SpeechFailed(f"text-to-speech audio could not be written as {audio_format}") from exc
    return out.getvalue()
