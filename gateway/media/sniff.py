"""The type of a file from its bytes (puremagic), never from what the platform says."""

from __future__ import annotations

import io
import zipfile

import puremagic
from charset_normalizer import from_bytes

OCTET = "application/octet-stream"
DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
_TEXT_SAMPLE = 64 * 1024
# puremagic's names that mean the same as the usual ones.
_ALIASES = {
    "audio/wave": "audio/wav",
    "audio/x-wav": "audio/wav",
    "audio/mpga": "audio/mpeg",
    "audio/x-m4a": "audio/mp4",
    "image/jpg": "image/jpeg",
}
# Matches puremagic names by extension only (an MP3 after its ID3 tag, an M4A's ftyp).
_EXTENSIONS = {
    ".mp3": "audio/mpeg",
    ".mpga": "audio/mpeg",
    ".m4a": "audio/mp4",
    ".m4b": "audio/mp4",
    ".aac": "audio/aac",
    ".oga": "audio/ogg",
    ".opus": "audio/ogg",
    ".mp4": "video/mp4",
    ".mov": "video/quicktime",
}
_OGG_AUDIO = (b"OpusHead", b"\x01vorbis", b"Speex   ", b"\x7fFLAC")


def sniff(data: bytes) -> str:
    """The MIME type the bytes show: a magic number, a DOCX's inner part, else plain text."""
    if not data:
        return OCTET
    found = _magic(data)
    if found in ("application/zip", DOCX) or found.startswith("application/vnd.openxmlformats"):
        # Word, Excel and PowerPoint files are all zips: the part inside tells them apart.
        return DOCX if _zip_has(data, "word/document.xml") else "application/zip"
    if found == "application/ogg":
        # An Ogg container: Telegram's voice notes (Opus), Vorbis; Theora would be video.
        head = data[:4096]
        return "audio/ogg" if any(c in head for c in _OGG_AUDIO) else found
    if found:
        return _ALIASES.get(found, found)
    frames = _mpeg_frames(data)
    if frames:
        return frames
    return "text/plain" if _looks_like_text(data) else OCTET


def _mpeg_frames(data: bytes) -> str | None:
    """A raw MPEG audio stream without a tag: MP3 (any MPEG version) or ADTS AAC frames."""
    if len(data) < 4 or data[0] != 0xFF or data[1] & 0xE0 != 0xE0:
        return None
    layer = (data[1] >> 1) & 0b11
    if layer == 0:  # "reserved" in MPEG audio: ADTS (AAC) uses it, with sync 0xFFF
        return "audio/aac" if data[1] & 0xF0 == 0xF0 else None
    bitrate, rate = data[2] >> 4, (data[2] >> 2) & 0b11
    return "audio/mpeg" if bitrate not in (0, 15) and rate != 3 else None


def _magic(data: bytes) -> str:
    """puremagic's best match, by its MIME type or, where it names none, its extension."""
    try:
        matches = puremagic.magic_string(data)
    except (puremagic.PureError, ValueError):
        return ""
    for match in matches:
        if str(match.mime_type).startswith("text/"):
            continue  # short, loose signatures (a DOS driver's 0xFFFFFFFF): text is checked here
        if match.mime_type:
            return str(match.mime_type)
        by_extension = _EXTENSIONS.get(match.extension.lower())
        if by_extension:
            return by_extension
    return ""


def _zip_has(data: bytes, member: str) -> bool:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            return member in archive.namelist()
    except (zipfile.BadZipFile, ValueError, OSError):
        return False


def _looks_like_text(data: bytes) -> bool:
    """Text without control bytes other than whitespace, in any encoding `decode_text` reads."""
    text = decode_text(data[:_TEXT_SAMPLE], sample=True)
    if text is None:
        return False
    return not any(ord(ch) < 32 and ch not in "\t\n\r\f" for ch in text)


def decode_text(data: bytes, *, sample: bool = False) -> str | None:
    """UTF-8 (a BOM's UTF-16), else the encoding charset-normalizer finds (Shift_JIS, Big5
    and the like, as spreadsheets export CSV); None for what is no text at all."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16", errors="replace")
    # A sample may end inside a character: drop up to three bytes of it.
    for cut in range(4 if sample else 1):
        try:
            return data[: len(data) - cut].decode("utf-8-sig")
        except UnicodeDecodeError:
            continue
    found = from_bytes(data[:_TEXT_SAMPLE]).best()  # a sample: detection is slow on megabytes
    return None if found is None else data.decode(found.encoding, errors="replace")
