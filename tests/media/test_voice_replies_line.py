"""LINE: answers spoken back as audio messages that LINE fetches from the gateway by a
signed link that expires; the link refused without its signature or after its expiry, and
the files gone when they expire and after /forget."""

from __future__ import annotations

import io
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from urllib.parse import urlsplit

import mutagen
import pytest

from gateway.config import Settings
from gateway.conversation.voice import NOT_SPOKEN
from gateway.i18n import texts_for
from gateway.runtime.keys import LINKS, SETTINGS
from tests.fakes.line_api import USER_ID, postback_event, text_event
from tests.fakes.openai_server import FakeOpenAI
from tests.line_support import LineRig, line_rig, quick_reply_data
from tests.media.test_media_line import sent
from tests.media_support import wav

ANSWER = "Hello from the fake model."
PUBLIC = "https://bot.example.com"
EN = texts_for("en")


class Clock:
    """Now, moved by the test."""

    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def rig(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI, clock: Clock
) -> AsyncIterator[LineRig]:
    async with line_rig(
        make_settings,
        fake_llm,
        clock=clock,
        stt_model="whisper-1",
        tts_model="tts-1",
        public_url=PUBLIC,
        media_link_minutes=10,
    ) as started:
        yield started


async def voice_note(rig: LineRig) -> None:
    rig.llm.transcripts.append("Where is the station?")
    await rig.deliver(sent(rig, {"type": "audio", "duration": 1000}, wav(1.0)))


def local(url: str) -> str:
    """The path and query of a link under the public URL, as the test client asks for it."""
    assert url.startswith(PUBLIC + "/media/")
    parts = urlsplit(url)
    return f"{parts.path}?{parts.query}"


def kept_files(rig: LineRig) -> list[Path]:
    """Every file under the data dir's links folder."""
    links_dir = rig.http.app[SETTINGS].data_dir / "links"
    return sorted(p for p in links_dir.rglob("*") if p.is_file()) if links_dir.exists() else []


async def test_a_voice_note_is_answered_with_an_audio_message_by_signed_link(
    rig: LineRig, clock: Clock
) -> None:
    await voice_note(rig)
    [text, audio] = rig.fake.delivered_messages(USER_ID)
    assert text == {"type": "text", "text": ANSWER}
    [request] = rig.llm.speeches
    assert (request["response_format"], request["voice"]) == ("mp3", "alloy")
    assert audio["type"] == "audio" and audio["originalContentUrl"].startswith("https://")
    assert quick_reply_data(audio)[0].startswith("rate:")  # 👍/👎 under the audio
    # LINE fetches the link: the MP3, whose length is the duration said, in ms.
    got = await rig.http.get(local(audio["originalContentUrl"]))
    assert got.status == 200 and got.content_type == "audio/mpeg"
    body = await got.read()
    length = mutagen.File(io.BytesIO(body)).info.length
    assert audio["duration"] == round(length * 1000)
    # No user id in the link or on disk.
    assert USER_ID not in audio["originalContentUrl"]
    [kept] = kept_files(rig)
    assert USER_ID not in str(kept) and kept.read_bytes() == body


async def test_a_link_without_its_signature_or_after_it_expired_is_refused(
    rig: LineRig, clock: Clock
) -> None:
    await voice_note(rig)
    url = local(rig.fake.delivered_messages(USER_ID)[-1]["originalContentUrl"])
    path, _, query = url.partition("?")
    good = query.removeprefix("sig=")
    bad = ("0" if good[0] != "0" else "1") + good[1:]
    assert (await rig.http.get(path)).status == 403
    assert (await rig.http.get(f"{path}?sig={bad}")).status == 403
    # Another name under the same signature (a later expiry) is not signed by it.
    owner, name = path.rsplit("/", 2)[-2:]
    expires, rest = name.split("-", 1)
    later = f"/media/{owner}/{int(expires) + 3600}-{rest}"
    assert (await rig.http.get(f"{later}?sig={good}")).status == 403
    assert (await rig.http.get(url)).status == 200
    # Ten minutes on, the link is refused and the sweep deletes the file.
    clock.now += 10 * 60 + 2
    assert (await rig.http.get(url)).status == 403
    assert kept_files(rig)
    links = rig.http.app[LINKS]
    assert links is not None
    await links.sweep_now()
    assert kept_files(rig) == []


async def test_forget_deletes_the_users_spoken_files(rig: LineRig) -> None:
    await voice_note(rig)
    url = local(rig.fake.delivered_messages(USER_ID)[-1]["originalContentUrl"])
    assert kept_files(rig)
    await rig.deliver(text_event("/forget", reply_token=rig.token()))
    await rig.deliver(postback_event("forget:yes", reply_token=rig.token()))
    assert kept_files(rig) == []
    assert (await rig.http.get(url)).status == 404  # signed and in time, but gone


async def test_without_an_https_public_url_line_answers_in_text(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with line_rig(
        make_settings,
        fake_llm,
        stt_model="whisper-1",
        tts_model="tts-1",
        public_url="http://bot.example.com",
    ) as rig:
        await voice_note(rig)
        assert rig.fake.delivered_texts(USER_ID) == [ANSWER]
        assert rig.llm.speeches == []


async def test_a_failed_speech_on_line_leaves_the_text_and_says_so(rig: LineRig) -> None:
    rig.llm.speech_status = 500
    await voice_note(rig)
    assert rig.fake.delivered_texts(USER_ID) == [ANSWER, EN(NOT_SPOKEN)]
    assert kept_files(rig) == []
