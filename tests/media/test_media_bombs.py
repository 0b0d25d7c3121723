"""Hostile files: read only within the budget, decoded in a child bounded in memory and time.

Each test reproduces a finding of the second hostile review (docs/SECURITY.md, S7-S9) with
small limits set for the test, not huge files.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from gateway.config import Settings
from gateway.conversation import attachments as notices
from gateway.core.settings import MB
from gateway.errors import MediaBomb
from gateway.media.worker import decode
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.telegram_api import make_media_update
from tests.media.test_media_telegram import ANSWER, document, photo
from tests.media_support import (
    docx_of,
    pdf_pypdf_cannot_decrypt,
    png,
    prompt_text,
    shared_stream_pdf,
)
from tests.telegram_harness import telegram_gateway

WORD = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
PDF = "application/pdf"
HEAVY = 100_000
"""Text operators in one stream: pypdf takes seconds over one page of them."""
TOO_HEAVY = 400_000
"""Four times as many: pypdf's time grows faster than the stream (about 2 s for HEAVY and
15 s for this on an idle machine here), so a 2 s bound stops it on any machine, idle or busy."""


async def test_a_docx_of_empty_paragraphs_is_read_within_a_small_memory_bound(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    # A few KB unpacking to megabytes of empty paragraphs: python-docx built a tree of them
    # all (+396 MiB for 6 MB); the streamed read stops at its element bound.
    bomb = docx_of(b"<w:p/>" * 300_000 + b"<w:p><w:r><w:t>hidden at the end</w:t></w:r></w:p>")
    assert len(bomb) < 64 * 1024
    async with telegram_gateway(make_settings, fake_llm, decode_memory_mb=160) as gw:
        await gw.deliver(make_media_update(1, document=document(gw, "d", bomb, "a.docx", WORD)))
        assert gw.fake.sent_texts(1001) == [notices.EMPTY_DOCUMENT]
        assert fake_llm.requests == []


async def test_a_docx_is_read_only_up_to_the_document_budget(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    paragraph = b"<w:p><w:r><w:t>All work and no play makes a dull day.</w:t></w:r></w:p>"
    long = docx_of(paragraph * 60_000 + b"<w:p><w:r><w:t>never read</w:t></w:r></w:p>")
    settings = {"decode_memory_mb": 160, "document_tokens": 100}
    async with telegram_gateway(make_settings, fake_llm, **settings) as gw:
        await gw.deliver(make_media_update(1, document=document(gw, "d", long, "a.docx", WORD)))
        assert gw.fake.sent_texts(1001) == [ANSWER]
        text = prompt_text(fake_llm.requests[-1])
        assert "All work and no play" in text and "[cut to fit: " in text
        assert "never read" not in text and len(text) < 800


async def test_pdf_pages_sharing_one_stream_are_read_once(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    shared = shared_stream_pdf(3, 200)
    async with telegram_gateway(make_settings, fake_llm) as gw:
        await gw.deliver(make_media_update(1, document=document(gw, "p", shared, "a.pdf", PDF)))
        assert prompt_text(fake_llm.requests[-1]).count("word") == 200


async def test_the_pages_after_the_budget_are_not_read(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    # The heavy page after the first would take far longer than the decoding may.
    heavy = shared_stream_pdf(1, HEAVY, first="Quarterly revenue grew again. " * 40)
    settings = {"document_tokens": 100, "decode_seconds": 3}
    async with telegram_gateway(make_settings, fake_llm, **settings) as gw:
        await gw.deliver(make_media_update(1, document=document(gw, "p", heavy, "a.pdf", PDF)))
        assert gw.fake.sent_texts(1001) == [ANSWER]
        assert "Quarterly revenue grew again." in prompt_text(fake_llm.requests[-1])


async def test_a_file_that_takes_too_long_is_refused_and_holds_up_no_other_user(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    heavy = shared_stream_pdf(1, TOO_HEAVY)
    async with telegram_gateway(make_settings, fake_llm, decode_seconds=2) as gw:
        # One user sends two heavy files at once, another a photo right after.
        for n in (1, 2):
            doc = document(gw, f"p{n}", heavy, f"{n}.pdf", PDF)
            assert (await gw.post(make_media_update(n, document=doc))).status == 200
        await asyncio.sleep(0)
        other = make_media_update(3, chat_id=2002, user_id=2002, photo=photo(gw, "ph", png()))
        assert (await gw.post(other)).status == 200
        await gw.idle(30)
        assert gw.fake.sent_texts(1001) == [notices.BOMB["work"]] * 2
        assert gw.fake.sent_texts(2002) == [ANSWER]
        # The photo did not wait for the heavy files: its answer went out before theirs.
        order = [c.params.get("chat_id") for c in gw.fake.calls_of("sendMessage")]
        assert order.index(2002) < order.index(1001)


async def test_decoding_past_its_memory_bound_is_refused_not_the_gateways_memory() -> None:
    big = png(6000, 6000)  # within the pixel limit, about 108 MB decoded
    with pytest.raises(MediaBomb) as refused:
        await decode(
            "image",
            big,
            memory=128 * MB,
            seconds=20,
            max_pixels=40_000_000,
            side=1568,
            max_bytes=MB,
        )
    assert refused.value.unit == "work"
    small = await decode(
        "image", png(), memory=128 * MB, seconds=20, max_pixels=40_000_000, side=64, max_bytes=MB
    )
    assert (small.width, small.height) == (64, 48)


async def test_a_library_error_on_a_hostile_file_is_a_notice_not_five_retries(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    # pypdf raises NotImplementedError for this encryption handler: it escaped the media
    # layer, the update was retried five times, and the user got no answer.
    odd = pdf_pypdf_cannot_decrypt()
    async with telegram_gateway(make_settings, fake_llm) as gw:
        await gw.deliver(make_media_update(1, document=document(gw, "p", odd, "a.pdf", PDF)))
        assert gw.fake.sent_texts(1001) == [notices.UNSUPPORTED_FILE]
        rows = await gw.parts.store.run(
            lambda db: [dict(r) for r in db.query("select attempts, last_error from inbox")]
        )
        assert rows == [{"attempts": 1, "last_error": None}]
