"""Downloads bounded while they happen: in chunks, error bodies too, in number and in memory.

Each test reproduces a finding of the second hostile review (docs/SECURITY.md, S10).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from gateway.config import Settings
from gateway.conversation import attachments as notices
from gateway.core.settings import MB
from gateway.errors import MediaUnavailable
from gateway.media.held import Held
from tests.fakes.line_api import USER_ID
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.telegram_api import make_media_update
from tests.line_support import line_rig
from tests.media.test_media_line import sent
from tests.media.test_media_telegram import ANSWER, document
from tests.media_support import pdf
from tests.telegram_harness import telegram_gateway


async def until(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    """Wait until `condition` holds (checked as the loop turns), at most `timeout`."""
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.01)


async def test_a_telegram_file_that_streams_without_end_is_cut_at_its_cap(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    # The update and getFile say 1,000 bytes; the host streams for ever. PTB's download
    # read it all (472 MB in 30 s) before the size was checked.
    settings = {"max_document_mb": 1, "media_timeout_seconds": 20}
    async with telegram_gateway(make_settings, fake_llm, **settings) as gw:
        gw.fake.add_file("e", b"x" * 1000, file_path="documents/e.pdf", endless=True)
        doc = {"file_id": "e", "file_unique_id": "ue", "file_name": "e.pdf", "file_size": 1000}
        await gw.deliver(make_media_update(1, document=doc))
        assert gw.fake.sent_texts(1001) == [notices.TOO_BIG["document"].format(limit="1 MB")]
        # Cut off near the cap (loopback socket buffers hold a few MB more), not read on.
        assert gw.fake.endless["documents/e.pdf"] < 64 * MB


async def test_a_line_content_error_with_an_endless_body_is_not_read_whole(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with line_rig(make_settings, fake_llm, media_timeout_seconds=20) as rig:
        event = sent(rig, {"type": "file", "fileName": "a.pdf", "fileSize": 100}, None)
        rig.fake.fail_content(event["message"]["id"])
        await rig.deliver(event)
        assert rig.fake.delivered_texts(USER_ID) == [notices.UNAVAILABLE["document"]]
        assert rig.fake.endless_errors[event["message"]["id"]] < 64 * MB


async def test_downloads_at_once_are_bounded_across_chats(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with telegram_gateway(make_settings, fake_llm, max_downloads=1) as gw:
        gw.fake.downloads_open.clear()
        report = pdf("The meeting is on Tuesday.")
        for n, chat in enumerate((1001, 2002, 3003), start=1):
            doc = document(gw, f"d{n}", report, "a.pdf", "application/pdf")
            update = make_media_update(n, chat_id=chat, user_id=chat, document=doc)
            assert (await gw.post(update)).status == 200
        await until(lambda: gw.fake.downloading == 1)
        # The others have asked for their files (getFile happens in the download slot, so
        # the typing action shows they are waiting for one).
        await until(lambda: len(gw.fake.calls_of("sendChatAction")) >= 3)
        gw.fake.downloads_open.set()
        await gw.idle(20)
        assert gw.fake.most_downloading == 1
        assert [gw.fake.sent_texts(c) for c in (1001, 2002, 3003)] == [[ANSWER]] * 3


async def test_bytes_held_wait_for_room_and_are_refused_past_their_patience() -> None:
    held = Held(total_bytes=10 * MB, downloads=4)
    async with held.bytes(8 * MB, patience=1):
        with pytest.raises(MediaUnavailable):
            async with held.bytes(8 * MB, patience=0.05):
                pass  # never reached: no room while the first holds its bytes
        assert held.free_bytes == 2 * MB
        waiting = asyncio.create_task(_hold(held, 8 * MB))
        await asyncio.sleep(0)
        assert not waiting.done()
    await asyncio.wait_for(waiting, 5)  # room made: the waiting download went on
    assert held.free_bytes == 10 * MB


async def _hold(held: Held, size: int) -> None:
    async with held.bytes(size, patience=5):
        pass
