"""Real media bytes for the tests, made with the encoders that make them in the wild."""

from __future__ import annotations

import io
import math
import struct
import wave
import zipfile
from typing import Any

import numpy as np
import soundfile
from docx import Document
from fpdf import FPDF
from PIL import Image


def wav(seconds: float = 1.0, rate: int = 16000) -> bytes:
    """A mono 16-bit WAV of a 440 Hz tone (the stdlib's wave writer)."""
    frames = b"".join(
        struct.pack("<h", int(8000 * math.sin(2 * math.pi * 440 * n / rate)))
        for n in range(int(seconds * rate))
    )
    out = io.BytesIO()
    with wave.open(out, "wb") as writer:
        writer.setnchannels(1)
        writer.setsampwidth(2)
        writer.setframerate(rate)
        writer.writeframes(frames)
    return out.getvalue()


def encoded(seconds: float, fmt: str, subtype: str, rate: int = 48000) -> bytes:
    """A 440 Hz tone through libsndfile's encoder (soundfile): OGG/Opus, MP3, FLAC..."""
    t = np.arange(int(seconds * rate)) / rate
    out = io.BytesIO()
    soundfile.write(
        out,
        (0.3 * np.sin(2 * np.pi * 440 * t)).astype("float32"),
        rate,
        format=fmt,
        subtype=subtype,
    )
    return out.getvalue()


def ogg_opus(seconds: float = 1.0) -> bytes:
    """What a Telegram voice note is: Opus in an Ogg container."""
    return encoded(seconds, "OGG", "OPUS")


def mp3(seconds: float = 1.0, rate: int = 44100) -> bytes:
    return encoded(seconds, "MP3", "MPEG_LAYER_III", rate)


def png(width: int = 64, height: int = 48, color: str = "teal") -> bytes:
    """A PNG made with Pillow: a colored field with a white square in its middle."""
    image = Image.new("RGB", (width, height), color)
    image.paste("white", (width // 4, height // 4, width * 3 // 4, height * 3 // 4))
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()


def pdf(*pages: str) -> bytes:
    """A real PDF (fpdf2), one page per text."""
    document = FPDF()
    document.set_font("helvetica", size=12)
    for text in pages:
        document.add_page()
        document.multi_cell(0, 8, text)
    return bytes(document.output())


def docx(*paragraphs: str) -> bytes:
    """A Word document (python-docx)."""
    document = Document()
    for text in paragraphs:
        document.add_paragraph(text)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def prompt_text(body: dict[str, Any]) -> str:
    """The text of the last (user) message of a model request, parts joined."""
    content = body["messages"][-1]["content"]
    if isinstance(content, str):
        return content
    return "\n".join(p["text"] for p in content if p.get("type") == "text")


def docx_of(body_xml: bytes) -> bytes:
    """A Word document whose body is `body_xml` (a python-docx file with its XML replaced)."""
    source = zipfile.ZipFile(io.BytesIO(docx("x")))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            data = source.read(info)
            if info.filename == "word/document.xml":
                head, _, _ = data.partition(b"<w:body>")
                data = head + b"<w:body>" + body_xml + b"</w:body></w:document>"
            target.writestr(info.filename, data)
    return out.getvalue()


def shared_stream_pdf(pages: int, text_ops: int, *, first: str | None = None) -> bytes:
    """A PDF whose `pages` pages all show one FlateDecode stream of `text_ops` words, as a
    hostile file shares one heavy stream (pypdf); with `first`, a page of that text before."""
    from pypdf import PdfWriter
    from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject

    writer = PdfWriter()
    font = writer._add_object(
        DictionaryObject(
            {
                NameObject("/Type"): NameObject("/Font"),
                NameObject("/Subtype"): NameObject("/Type1"),
                NameObject("/BaseFont"): NameObject("/Helvetica"),
            }
        )
    )
    resources = DictionaryObject({NameObject("/Font"): DictionaryObject({NameObject("/F1"): font})})

    def stream(ops: bytes) -> Any:
        content = DecodedStreamObject()
        content.set_data(b"BT /F1 12 Tf 72 720 Td " + ops + b" ET")
        return writer._add_object(content.flate_encode())

    shared = stream(b"(word ) Tj " * text_ops)
    contents = [stream(f"({first}) Tj".encode())] if first is not None else []
    contents += [shared] * pages
    for ref in contents:
        page = writer.add_blank_page(612, 792)
        page[NameObject("/Contents")] = ref
        page[NameObject("/Resources")] = resources
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def pdf_pypdf_cannot_decrypt() -> bytes:
    """A PDF encrypted with a handler pypdf does not implement (it raises NotImplementedError)."""
    from pypdf import PdfWriter

    writer = PdfWriter()
    writer.add_blank_page(100, 100)
    writer.encrypt("", algorithm="RC4-40")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue().replace(b"/Filter /Standard", b"/Filter /Adobe.PubSec", 1)
