"""The channel-neutral media mechanics on real bytes: sniffing, images, documents, refusals."""

from __future__ import annotations

import base64
import io
import zipfile

import pytest
from PIL import Image

from gateway.core.llm_wire import classify
from gateway.core.vision import VisionPolicy
from gateway.errors import MediaBomb, MediaUnsupported, ModelError, VisionUnsupported
from gateway.media.documents import PDF, extract
from gateway.media.images import prepare_image
from gateway.media.remote import megabytes
from gateway.media.sniff import DOCX, sniff
from tests.media_support import docx, encoded, mp3, ogg_opus, pdf, png, wav

LIMITS = {"max_pages": 50, "budget_tokens": 4000, "unpacked": 200 << 20}


def xlsx() -> bytes:
    """A zip shaped like a spreadsheet: Office files are all zips."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        archive.writestr("xl/workbook.xml", "<workbook/>")
    return out.getvalue()


def test_types_come_from_the_bytes() -> None:
    assert sniff(png()) == "image/png"
    assert sniff(wav(0.1)) == "audio/wav"
    assert sniff(ogg_opus(0.2)) == "audio/ogg"
    # MP3 frames of MPEG-1 and of MPEG-2 (16 kHz), which puremagic alone does not know.
    assert sniff(mp3(0.2)) == sniff(mp3(0.2, rate=16000)) == "audio/mpeg"
    assert sniff(encoded(0.2, "FLAC", "PCM_16", 16000)) == "audio/flac"
    assert sniff(b"\xff\xff\xff\xff" + bytes(100)) == "application/octet-stream"
    assert sniff(pdf("x")) == PDF
    assert sniff(docx("x")) == DOCX
    assert sniff(xlsx()) != DOCX  # a spreadsheet is not read as a Word file
    assert sniff("# Notes\nnaïve, 東京\n".encode()) == "text/plain"
    csv = "品名,数量\nりんご,3\nみかん,5\n東京都千代田区の店舗\n".encode("cp932")  # Excel in Japan
    assert sniff(csv) == "text/plain"
    assert extract(csv, "text/plain", **LIMITS).text.startswith("品名,数量\nりんご,3")
    assert sniff(b"\x00\x01\x02binary\xff") == "application/octet-stream"
    assert sniff(b"") == "application/octet-stream"


def test_an_image_is_resized_flattened_and_bounded() -> None:
    transparent = Image.new("RGBA", (2400, 1200), (0, 0, 0, 0))
    out = io.BytesIO()
    transparent.save(out, "PNG")
    prepared = prepare_image(out.getvalue(), max_pixels=10**8, side=800, max_bytes=1 << 20)
    assert (prepared.width, prepared.height) == (2400, 1200)
    assert (prepared.sent_width, prepared.sent_height) == (800, 400)
    sent = Image.open(io.BytesIO(base64.b64decode(prepared.data_url.split(",", 1)[1])))
    assert sent.format == "JPEG" and sent.getpixel((10, 10)) == (255, 255, 255)


def test_an_image_past_the_pixel_limit_is_refused_before_it_is_decoded() -> None:
    # 8000 x 8000 pixels of one colour compress to a few KB: a decompression bomb.
    bomb = io.BytesIO()
    Image.new("1", (8000, 8000)).save(bomb, "PNG")
    assert len(bomb.getvalue()) < 100_000
    with pytest.raises(MediaBomb, match="8000x8000 pixels"):
        prepare_image(bomb.getvalue(), max_pixels=40_000_000, side=1568, max_bytes=1 << 20)
    with pytest.raises(MediaUnsupported):
        prepare_image(b"GIF89a not really", max_pixels=10**6, side=100, max_bytes=1 << 20)


def test_documents_give_their_text_and_say_when_it_was_cut() -> None:
    found = extract(pdf("first page", "second page"), PDF, **LIMITS)
    assert (found.text, found.pages, found.cut) == ("first page\n\nsecond page", 2, False)
    long = extract(("word " * 5000).encode(), "text/plain", **{**LIMITS, "budget_tokens": 50})
    assert long.cut and long.total_chars == len(("word " * 5000).strip())
    assert 150 < len(long.text) <= 200 and long.text.endswith("word")
    with pytest.raises(MediaBomb, match="3 pages, more than the 2 allowed"):
        extract(pdf("a", "b", "c"), PDF, **{**LIMITS, "max_pages": 2})
    with pytest.raises(MediaBomb, match="unpacks to"):
        extract(docx("hello " * 100), DOCX, **{**LIMITS, "unpacked": 10_000})
    with pytest.raises(MediaUnsupported):
        extract(b"%PDF-1.7 broken", PDF, **LIMITS)
    with pytest.raises(MediaUnsupported):
        extract(png(), "image/png", **LIMITS)


def test_a_password_protected_pdf_is_refused() -> None:
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(pdf("secret"))))
    writer.encrypt("hunter2")
    out = io.BytesIO()
    writer.write(out)
    with pytest.raises(MediaUnsupported, match="password"):
        extract(out.getvalue(), PDF, **LIMITS)


@pytest.mark.parametrize(
    ("status", "message"),
    [
        (400, "Invalid content type. image_url is only supported by certain models."),
        (500, "image input is not supported - hint: you may need to provide the mmproj"),
        (400, "The model `Qwen/Qwen2.5-7B` is not a multimodal model"),
        (400, "At most 0 image(s) may be provided in one request."),
        (400, "Model does not support images. Please use a model that does."),
        (422, "messages[1]: unknown variant `image_url`, expected `text`"),
    ],
)
def test_servers_refusing_images_are_recognised(status: int, message: str) -> None:
    assert classify(status, message) is VisionUnsupported


def test_other_errors_are_not_taken_for_a_vision_refusal() -> None:
    assert classify(400, "messages: field required") is ModelError
    assert classify(400, "Invalid image_url: the image could not be decoded") is ModelError
    assert classify(429, "rate limit reached for image_url requests") is not VisionUnsupported


class Memory:
    def __init__(self) -> None:
        self.meta: dict[str, str] = {}

    async def get_meta(self, key: str) -> str | None:
        return self.meta.get(key)

    async def set_meta(self, key: str, value: str) -> None:
        self.meta[key] = value


async def test_vision_auto_remembers_a_refusal_per_model_and_on_off_do_not_learn() -> None:
    memory = Memory()
    auto = VisionPolicy("auto", memory, "llava")
    assert await auto.allowed()
    await auto.refused("not a multimodal model")
    assert not await auto.allowed()
    assert await VisionPolicy("auto", memory, "another-model").allowed()
    on = VisionPolicy("on", memory, "llava")
    await on.refused("refused")
    assert await on.allowed() and not await VisionPolicy("off", Memory(), "x").allowed()


def test_sizes_are_said_the_way_people_read_them() -> None:
    assert [megabytes(n) for n in (20 << 20, 3 << 19, 300_000)] == ["20 MB", "1.5 MB", "293 KB"]
