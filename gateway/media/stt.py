"""Speech to text through an OpenAI-compatible `/audio/transcriptions` endpoint.

OpenAI, faster-whisper-server/speaches, whisper.cpp's server, LocalAI and Groq speak the same
multipart API; the official `openai` client sends it (imported on first use).
"""

from __future__ import annotations

import io
import logging
import wave
from typing import Protocol

from gateway.core.llm_wire import error_message, one_line
from gateway.core.openai_client import OpenAIEndpoint, load_openai
from gateway.errors import TranscriptionFailed
from gateway.logs import mask

log = logging.getLogger(__name__)

EXTENSIONS = {
    "audio/ogg": "ogg",
    "audio/opus": "ogg",
    "audio/wav": "wav",
    "audio/mpeg": "mp3",
    "audio/mp4": "m4a",
    "audio/x-m4a": "m4a",
    "audio/aac": "m4a",
    "audio/flac": "flac",
    "audio/x-flac": "flac",
    "audio/webm": "webm",
    "video/mp4": "mp4",
    "video/webm": "webm",
    "video/quicktime": "mp4",
}
"""The audio (and video-note) types sent for transcription, with the file extension the
endpoints use to pick a decoder."""


class Transcriber(Protocol):
    """Something that turns speech into text."""

    async def transcribe(self, audio: bytes, mime: str) -> str: ...

    async def close(self) -> None: ...


class OpenAITranscriber(OpenAIEndpoint):
    """An OpenAI-compatible transcription endpoint."""

    async def transcribe(self, audio: bytes, mime: str) -> str:
        """The words spoken; TranscriptionFailed with the server's reason (keys masked)."""
        await load_openai()
        import openai

        name = f"voice.{EXTENSIONS.get(mime, 'ogg')}"
        secrets = self._secrets
        try:
            result = await self._get_client().audio.transcriptions.create(
                model=self.model, file=(name, audio, mime)
            )
        except openai.APIStatusError as exc:
            message = one_line(mask(error_message(exc.body) or exc.response.text, secrets))
            raise TranscriptionFailed(
                f"speech-to-text answered HTTP {exc.status_code}: {message}"
            ) from exc
        except openai.APITimeoutError as exc:
            raise TranscriptionFailed(
                f"speech-to-text did not answer within {self._timeout:g} s"
            ) from exc
        except openai.APIConnectionError as exc:
            raise TranscriptionFailed(f"speech-to-text unreachable ({self.base_url})") from exc
        except openai.OpenAIError as exc:
            raise TranscriptionFailed(f"speech-to-text failed: {type(exc).__name__}") from exc
        text = getattr(result, "text", None)
        if not isinstance(text, str):
            raise TranscriptionFailed("speech-to-text answered without a text")
        return text.strip()


def duration(audio: bytes) -> float | None:
    """The seconds a recording lasts, from its container's header (mutagen); None when it
    cannot tell. Blocking: run it in a thread."""
    import mutagen

    try:
        found = mutagen.File(io.BytesIO(audio))
    except Exception:  # mutagen raises its own kinds, and struct or index errors, on junk
        return None
    length = getattr(getattr(found, "info", None), "length", None)
    return float(length) if isinstance(length, int | float) and length > 0 else None


def silence(seconds: float = 0.5, rate: int = 16000) -> bytes:
    """A short silent WAV: the smallest real request a transcription endpoint answers."""
    out = io.BytesIO()
    with wave.open(out, "wb") as writer:
        writer.setnchannels(1)
        writer.setsampwidth(2)
        writer.setframerate(rate)
        writer.writeframes(b"\0\0" * int(seconds * rate))
    return out.getvalue()
