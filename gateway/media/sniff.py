"""The type of a file from its bytes (puremagic), never from what the platform says."""

from __future__ import annotations

import io
import zipfile

import puremagic

OCTET = "application/octet-stream"
DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
_TEXT_SAMPLE = 64 * 1024
# puremagic's names that mean the same as the usual ones.
_ALIASES = {"audio/wave": "audio/wav", "audio/x-wav": "audio/wav", "image/jpg": "image/jpeg"}


def sniff(data: bytes) -> str:
    """The MIME type the bytes show: a magic number, a DOCX's inner part, else plain text."""
    if not data:
        return OCTET
    try:
        found = puremagic.from_string(data, mime=True)
    except (puremagic.PureError, ValueError):
        found = ""
    if found in ("application/zip", DOCX) or found.startswith("application/vnd.openxmlformats"):
        # Word, Excel and PowerPoint files are all zips: the part inside tells them apart.
        return DOCX if _zip_has(data, "word/document.xml") else "application/zip"
    if found:
        return _ALIASES.get(found, found)
    return "text/plain" if _looks_like_text(data) else OCTET


def _zip_has(data: bytes, member: str) -> bool:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            return member in archive.namelist()
    except (zipfile.BadZipFile, ValueError, OSError):
        return False


def _looks_like_text(data: bytes) -> bool:
    """UTF-8 (or UTF-16 with its BOM) without control bytes other than whitespace."""
    sample = data[:_TEXT_SAMPLE]
    if sample.startswith((b"\xff\xfe", b"\xfe\xff")):
        return True
    # A sample may end inside a character: drop up to three bytes of it.
    for cut in range(4):
        try:
            text = sample[: len(sample) - cut].decode("utf-8")
            break
        except UnicodeDecodeError:
            continue
    else:
        return False
    controls = sum(1 for ch in text if ord(ch) < 32 and ch not in "\t\n\r\f")
    return controls == 0
