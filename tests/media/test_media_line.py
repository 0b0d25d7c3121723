"""LINE: audio, images, image sets and files, downloaded from the fake's data host and read."""

from __future__ import annotations

import base64
import io
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from PIL import Image

from gateway.config import Settings
from gateway.conversation import attachments as notices
from tests.fakes.line_api import USER_ID, text_event
from tests.fakes.openai_server import FakeOpenAI
from tests.line_support import GROUP_ID, LineRig, line_rig
from tests.media_support import pdf, png, prompt_text, wav

ANSWER = "Hello from the fake model."


@pytest.fixture
async def rig(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> AsyncIterator[LineRig]:
    async with line_rig(make_settings, fake_llm, stt_model="whisper-1") as started:
        yield started


def sent(
    rig: LineRig, content: dict[str, Any], data: bytes | None, *, group: bool = False
) -> dict[str, Any]:
    """A message event with `content` (no text); its bytes wait on the data host."""
    to = GROUP_ID if group else USER_ID
    event = text_event("", group_id=GROUP_ID if group else None, reply_token=rig.token(to))
    message_id = event["message"]["id"]
    event["message"] = {"id": message_id, "contentProvider": {"type": "line"}, **content}
    if data is not None:
        rig.fake.add_content(message_id, data)
    return event


async def test_an_audio_message_is_transcribed_and_answered(rig: LineRig) -> None:
    audio = wav(2.0)
    rig.llm.transcripts.append("Where is the nearest station?")
    event = sent(rig, {"type": "audio", "duration": 2000}, audio)
    await rig.deliver(event)
    assert rig.fake.content_requests == [event["message"]["id"]]
    [upload] = rig.llm.transcriptions
    assert upload["data"] == audio and upload["content_type"] == "audio/wav"
    assert prompt_text(rig.llm.requests[-1]) == (
        "[voice message, 0:02, transcribed]\n\nWhere is the nearest station?"
    )
    assert rig.fake.delivered_texts(USER_ID) == [ANSWER]


async def test_an_image_goes_to_the_model_and_an_image_set_is_answered_once(
    rig: LineRig,
) -> None:
    await rig.deliver(sent(rig, {"type": "image"}, png(120, 80)))
    [url] = rig.llm.image_parts(rig.llm.requests[-1])
    picture = Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1])))
    assert picture.size == (120, 80)
    assert prompt_text(rig.llm.requests[-1]) == "[photo]"
    items = [
        sent(rig, {"type": "image", "imageSet": {"id": "E005D4", "index": i, "total": 2}}, png())
        for i in (1, 2)
    ]
    await rig.deliver(*items)
    assert len(rig.llm.requests) == 2
    assert rig.fake.delivered_texts(USER_ID) == [ANSWER, ANSWER]


async def test_a_pdf_file_is_read(rig: LineRig) -> None:
    report = pdf("The meeting is on Tuesday at 10.")
    await rig.deliver(
        sent(rig, {"type": "file", "fileName": "notes.pdf", "fileSize": len(report)}, report)
    )
    text = prompt_text(rig.llm.requests[-1])
    assert text.startswith("[document notes.pdf, 1 page]\nThe meeting is on Tuesday at 10.")
    # A recording sent as a file is transcribed.
    recording = wav(0.5)
    await rig.deliver(
        sent(rig, {"type": "file", "fileName": "memo.wav", "fileSize": len(recording)}, recording)
    )
    assert [t["data"] for t in rig.llm.transcriptions] == [recording]
    assert rig.fake.delivered_texts(USER_ID) == [ANSWER, ANSWER]


async def test_media_in_a_group_is_never_downloaded(rig: LineRig) -> None:
    # LINE has no way to mention the bot on media: in a group it is someone else's.
    await rig.deliver(sent(rig, {"type": "image"}, png(), group=True))
    await rig.deliver(sent(rig, {"type": "audio", "duration": 1000}, wav(0.2), group=True))
    assert rig.fake.content_requests == [] and rig.llm.requests == []
    assert rig.fake.delivered_texts(GROUP_ID) == []


async def test_refusals_in_line_each_get_their_notice(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with line_rig(make_settings, fake_llm, max_document_mb=1) as rig:
        # Too big by LINE's declared size: not downloaded.
        await rig.deliver(
            sent(rig, {"type": "file", "fileName": "a.zip", "fileSize": 9 << 20}, None)
        )
        # A file of a type the gateway does not read.
        zipped = b"PK\x03\x04" + bytes(100)
        await rig.deliver(sent(rig, {"type": "file", "fileName": "a.pdf", "fileSize": 104}, zipped))
        # Content LINE no longer has (404 on the data host).
        await rig.deliver(sent(rig, {"type": "image"}, None))
        # Audio without speech-to-text set up.
        await rig.deliver(sent(rig, {"type": "audio", "duration": 1000}, wav(0.1)))
        assert rig.fake.delivered_texts(USER_ID) == [
            notices.TOO_BIG["document"].format(limit="1 MB"),
            notices.UNSUPPORTED_FILE,
            notices.UNAVAILABLE["image"],
            notices.NO_STT,
        ]
        assert len(rig.fake.content_requests) == 2 and fake_llm.requests == []


async def test_in_a_group_quoting_a_photo_or_file_with_a_mention_asks_about_it(
    rig: LineRig,
) -> None:
    posted = sent(rig, {"type": "image"}, png(50, 40), group=True)
    other = sent(rig, {"type": "file", "fileName": "menu.pdf", "fileSize": 900}, None, group=True)
    await rig.deliver(posted, other)
    assert rig.fake.content_requests == [] and rig.llm.requests == []
    ask = text_event(
        "@FakeBot what is on it?",
        group_id=GROUP_ID,
        mention_self=True,
        reply_token=rig.token(GROUP_ID),
    )
    ask["message"]["quotedMessageId"] = posted["message"]["id"]
    await rig.deliver(ask)
    assert rig.fake.content_requests == [posted["message"]["id"]]
    assert prompt_text(rig.llm.requests[-1]) == "[photo]\n\nwhat is on it?"
    assert len(rig.llm.image_parts(rig.llm.requests[-1])) == 1
    # Quoting a plain text message is just a question.
    plain = text_event(
        "@FakeBot and you?", group_id=GROUP_ID, mention_self=True, reply_token=rig.token(GROUP_ID)
    )
    plain["message"]["quotedMessageId"] = "468789532432007169"
    await rig.deliver(plain)
    assert prompt_text(rig.llm.requests[-1]) == "and you?"
    assert rig.fake.delivered_texts(GROUP_ID) == [ANSWER, ANSWER]
