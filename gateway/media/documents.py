"""Text from documents: PDF (pypdf, page limit), DOCX (python-docx, unpacked-size limit), text.

Each result is cut to a token budget and says so when cut. Blocking: run in a thread.
"""

from __future__ import annotations

import io
import logging
import zipfile
from dataclasses import dataclass

from gateway.core.tokens import estimate_tokens
from gateway.errors import MediaBomb, MediaUnsupported
from gateway.media.sniff import DOCX, decode_text

log = logging.getLogger(__name__)

PDF = "application/pdf"
TEXT = "text/plain"
READ = (PDF, DOCX, TEXT)
"""The document types read (Markdown and CSV are text/plain to the bytes)."""


@dataclass(frozen=True)
class Extracted:
    """A document's text within the budget, and what it held in full."""

    text: str
    total_chars: int
    pages: int | None = None
    cut: bool = False


def extract(
    data: bytes, mime: str, *, max_pages: int, budget_tokens: int, unpacked: int
) -> Extracted:
    """The text of a PDF, DOCX or text file, at most `budget_tokens`; MediaError otherwise."""
    if mime == PDF:
        return _pdf(data, max_pages, budget_tokens)
    if mime == DOCX:
        return _bounded(_docx(data, unpacked), budget_tokens)
    if mime == TEXT:
        return _bounded(_text(data), budget_tokens)
    raise MediaUnsupported(f"{mime} is not a document type the gateway reads")


def _pdf(data: bytes, max_pages: int, budget: int) -> Extracted:
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise MediaUnsupported("the PDF is protected by a password")
        pages = len(reader.pages)
    except (PdfReadError, ValueError, KeyError, TypeError, OSError) as exc:
        raise MediaUnsupported(f"not a PDF pypdf can read: {exc}") from exc
    if pages > max_pages:
        raise MediaBomb(
            f"{pages} pages, more than the {max_pages} allowed", unit="pages", limit=max_pages
        )
    parts: list[str] = []
    used = total = 0
    cut = False
    for page in reader.pages:
        try:
            text = (page.extract_text() or "").strip()
        except Exception as exc:  # pypdf raises many kinds on a broken page; skip that page
            log.info("a PDF page could not be read: %s", type(exc).__name__)
            continue
        total += len(text)
        if cut or not text:
            continue
        cost = estimate_tokens(text)
        if used + cost > budget:
            parts.append(_clip(text, budget - used))
            cut = True
            continue
        parts.append(text)
        used += cost
    return Extracted("\n\n".join(p for p in parts if p), total, pages, cut)


def _docx(data: bytes, unpacked: int) -> str:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            size = sum(info.file_size for info in archive.infolist())
    except (zipfile.BadZipFile, ValueError, OSError) as exc:
        raise MediaUnsupported(f"not a DOCX file: {exc}") from exc
    if size > unpacked:
        raise MediaBomb(
            f"it unpacks to {size:,} bytes, more than the {unpacked:,} allowed",
            unit="bytes",
            limit=unpacked,
        )
    from docx import Document

    try:
        document = Document(io.BytesIO(data))
    except Exception as exc:  # python-docx raises KeyError, ValueError, lxml errors...
        raise MediaUnsupported(f"not a DOCX python-docx can read: {type(exc).__name__}") from exc
    lines = [p.text for p in document.paragraphs]
    for table in document.tables:
        for row in table.rows:
            lines.append(" | ".join(cell.text.strip() for cell in row.cells))
    return "\n".join(line for line in lines if line.strip())


def _text(data: bytes) -> str:
    text = decode_text(data)
    return data.decode("utf-8", errors="replace") if text is None else text


def _bounded(text: str, budget: int) -> Extracted:
    text = text.strip()
    if estimate_tokens(text) <= budget:
        return Extracted(text, len(text))
    return Extracted(_clip(text, budget), len(text), cut=True)


def _clip(text: str, tokens: int) -> str:
    """The start of `text` within about `tokens`, ended at a line or word."""
    if tokens <= 0:
        return ""
    low, high = 0, len(text)
    while low < high:  # the longest prefix within the budget
        mid = (low + high + 1) // 2
        if estimate_tokens(text[:mid]) <= tokens:
            low = mid
        else:
            high = mid - 1
    head = text[:low]
    end = max(head.rfind("\n"), head.rfind(" "))
    return (head[:end] if end > len(head) // 2 else head).rstrip()
