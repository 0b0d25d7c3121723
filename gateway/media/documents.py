"""Text from documents: PDF (pypdf, page limit), DOCX (lxml, streamed), text.

Each result is cut to a token budget and says so when cut; reading stops there, so a file
whose text goes on (millions of empty paragraphs, pages sharing one huge stream) costs no
more than its budget's worth. A DOCX's XML is read as a stream, a bounded number of
elements (`ELEMENTS_PER_TOKEN`), each freed once read; a PDF content stream shared by
several pages is read once.
Blocking and bounded only in what it reads: run it in a worker (`media.worker`), which
bounds its memory and time.
"""

from __future__ import annotations

import io
import logging
import zipfile
from dataclasses import dataclass
from typing import IO, Any

from gateway.core.tokens import estimate_tokens
from gateway.errors import MediaBomb, MediaUnsupported
from gateway.media.sniff import DOCX, decode_text

log = logging.getLogger(__name__)

PDF = "application/pdf"
TEXT = "text/plain"
READ = (PDF, DOCX, TEXT)
"""The document types read (Markdown and CSV are text/plain to the bytes)."""
ELEMENTS_PER_TOKEN = 50
"""The most XML elements of a DOCX read per token of its budget (at least 100,000): a real
document's budget ends far sooner, an element bomb (millions of empty paragraphs) there."""
_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_P, _TC, _TR, _T, _TAB = (f"{_W}{name}" for name in ("p", "tc", "tr", "t", "tab"))


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
        return _docx(data, unpacked, budget_tokens)
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
    seen: set[int] = set()
    for page in reader.pages:
        streams = _contents(page)
        if streams and streams <= seen:
            continue  # only content streams of pages read already: the same text again
        seen |= streams
        try:
            text = (page.extract_text() or "").strip()
        except Exception as exc:  # pypdf raises many kinds on a broken page; skip that page
            log.info("a PDF page could not be read: %s", type(exc).__name__)
            continue
        total += len(text)
        if not text:
            continue
        cost = estimate_tokens(text)
        if used + cost > budget:
            # The budget is spent: the pages after it are not read at all.
            parts.append(_clip(text, budget - used))
            return Extracted("\n\n".join(p for p in parts if p), total, pages, cut=True)
        parts.append(text)
        used += cost
    return Extracted("\n\n".join(p for p in parts if p), total, pages)


def _contents(page: Any) -> frozenset[int]:
    """The object numbers of a page's content streams (empty when they are not shared objects)."""
    from pypdf.generic import ArrayObject, IndirectObject

    raw = page.raw_get("/Contents") if "/Contents" in page else None
    items = raw.get_object() if isinstance(raw, IndirectObject) else raw
    if isinstance(items, ArrayObject):
        return frozenset(i.idnum for i in items if isinstance(i, IndirectObject))
    return frozenset((raw.idnum,)) if isinstance(raw, IndirectObject) else frozenset()


def _docx(data: bytes, unpacked: int, budget: int) -> Extracted:
    from lxml import etree

    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            size = sum(info.file_size for info in archive.infolist())
            if size > unpacked:
                raise MediaBomb(
                    f"it unpacks to {size:,} bytes, more than the {unpacked:,} allowed",
                    unit="bytes",
                    limit=unpacked,
                )
            with archive.open("word/document.xml") as part:
                return _body(part, budget)
    except KeyError as exc:
        raise MediaUnsupported("not a DOCX file: it has no word/document.xml") from exc
    except (zipfile.BadZipFile, etree.XMLSyntaxError, ValueError, OSError, EOFError) as exc:
        raise MediaUnsupported(f"not a DOCX file: {type(exc).__name__}") from exc


def _body(part: IO[bytes], budget: int) -> Extracted:
    """Paragraphs and table rows in document order, until the budget or the element bound."""
    from lxml import etree

    lines: list[str] = []
    cell: list[str] = []
    row: list[str] = []
    used = total = elements = cells = 0
    most = max(100_000, ELEMENTS_PER_TOKEN * budget)
    events = etree.iterparse(
        part, events=("start", "end"), resolve_entities=False, no_network=True, huge_tree=False
    )
    for event, element in events:
        tag = element.tag
        if event == "start":
            elements += 1
            if elements > most:
                return Extracted("\n".join(lines), total, cut=True)
            cells += tag == _TC
            continue
        line = None
        if tag == _P:
            text = (
                "".join(
                    "\t" if node.tag == _TAB else node.text or "" for node in element.iter(_T, _TAB)
                )
                if len(element)
                else ""
            )
            if cells:
                cell.append(text.strip())
            else:
                line = text
        elif tag == _TC:
            cells -= 1
            row.append(" ".join(t for t in cell if t))
            cell = []
        elif tag == _TR:
            line = " | ".join(row)
            row = []
        else:
            continue
        # Read: freed with what came before it, so the tree never holds the document.
        element.clear(keep_tail=True)
        while element.getprevious() is not None:
            del element.getparent()[0]
        if line is None or not line.strip(" |\t\n"):
            continue
        total += len(line)
        cost = estimate_tokens(line) + 1
        if used + cost > budget:
            lines.append(_clip(line, budget - used))
            return Extracted("\n".join(t for t in lines if t).strip(), total, cut=True)
        lines.append(line)
        used += cost
    return Extracted("\n".join(lines).strip(), total)


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
