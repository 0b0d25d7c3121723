"""Telegram: voice notes, photos and documents, downloaded from the fake Bot API and read.

Real bytes throughout: a WAV from the stdlib's encoder, PNGs from Pillow, a PDF from fpdf2,
a DOCX from python-docx. The model is the fake OpenAI server, which also transcribes.
"""

from __future__ import annotations

import base64
import io
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from gateway.config import Settings
from gateway.conversation import attachments as notices
from gateway.core.vision import NO_VISION
from gateway.i18n import texts_for
from tests.channels.telegram.test_telegram_content import media_update
from tests.channels.telegram.test_telegram_feedback import last_answer, last_message, press
from tests.console_support import sign_in
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.telegram_api import make_text_update, mention_entity
from tests.media_support import docx, mp3, ogg_opus, pdf, png, prompt_text, wav
from tests.synthesis_support import answer, evidence_prompt
from tests.telegram_harness import ADMIN, Gateway, telegram_gateway

GROUP = -1002233445566
ANSWER = "Hello from the fake model."
STT = {"stt_model": "whisper-1"}


def voice(gw: Gateway, file_id: str, data: bytes, seconds: int = 1) -> dict[str, Any]:
    """A voice note (Telegram says audio/ogg whatever it holds), registered with the fake."""
    gw.fake.add_file(file_id, data, file_path=f"voice/{file_id}.oga")
    return {
        "file_id": file_id,
        "file_unique_id": f"u{file_id}",
        "duration": seconds,
        "mime_type": "audio/ogg",
        "file_size": len(data),
    }


def photo(gw: Gateway, file_id: str, data: bytes) -> list[dict[str, Any]]:
    """A photo's sizes: a thumbnail and the full picture (the one that is read)."""
    width, height = Image.open(io.BytesIO(data)).size
    gw.fake.add_file(file_id, data, file_path=f"photos/{file_id}.jpg")
    return [
        {
            "file_id": f"{file_id}-thumb",
            "file_unique_id": "t",
            "width": max(1, width // 4),
            "height": max(1, height // 4),
            "file_size": 900,
        },
        {
            "file_id": file_id,
            "file_unique_id": f"u{file_id}",
            "width": width,
            "height": height,
            "file_size": len(data),
        },
    ]


def document(gw: Gateway, file_id: str, data: bytes, name: str, mime: str) -> dict[str, Any]:
    gw.fake.add_file(file_id, data)
    return {
        "file_id": file_id,
        "file_unique_id": f"u{file_id}",
        "file_name": name,
        "mime_type": mime,
        "file_size": len(data),
    }


def images_sent(llm: FakeOpenAI, index: int = -1) -> list[Image.Image]:
    """The images of a model request, decoded."""
    urls = llm.image_parts(llm.requests[index])
    return [Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))) for url in urls]


async def attachments(gw: Gateway) -> list[dict[str, Any]]:
    rows = await gw.parts.store.run(
        lambda db: list(db.query("select * from attachments order by id"))
    )
    return [dict(r) for r in rows]


@pytest.fixture
async def gw(make_settings: Callable[..., Settings], fake_llm: FakeOpenAI) -> Any:
    async with telegram_gateway(make_settings, fake_llm, **STT) as gateway:
        yield gateway


async def test_a_voice_note_is_transcribed_and_answered_as_its_words(gw: Gateway) -> None:
    audio = ogg_opus(1.0)  # what Telegram's voice notes are
    gw.llm.transcripts.append("What is the capital of Japan?")
    await gw.deliver(media_update(1, voice=voice(gw, "v1", audio)))
    [upload] = gw.llm.transcriptions
    assert upload["model"] == "whisper-1"
    assert upload["data"] == audio
    assert (upload["content_type"], upload["filename"]) == ("audio/ogg", "voice.ogg")
    text = prompt_text(gw.llm.requests[-1])
    assert text == "[voice message, 0:01, transcribed]\n\nWhat is the capital of Japan?"
    assert gw.fake.sent_texts(1001) == [ANSWER]
    [row] = await attachments(gw)
    assert (row["kind"], row["source"], row["mime"], row["size"]) == (
        "voice",
        "voice",
        "audio/ogg",
        len(audio),
    )
    assert (row["duration"], row["sent_as"], row["text_chars"]) == (1.0, "transcript", 29)
    # The transcript is the user's message: the console shows it, marked as a voice message.
    await sign_in(gw.client, "admin-secret-token")
    [session] = await gw.parts.store.run(lambda db: list(db.query("select id from sessions")))
    html = await (await gw.client.get(f"/admin/conversations/{session['id']}")).text()
    assert "What is the capital of Japan?" in html
    assert "🎤 voice message, 0:01, transcribed" in html and "audio/ogg" in html
    # An audio file is sniffed too: an MP3 declared as anything goes as audio/mpeg.
    song = mp3(0.5)
    gw.fake.add_file("a1", song)
    audio_file = {"file_id": "a1", "file_unique_id": "ua1", "duration": 1, "mime_type": "x/y"}
    await gw.deliver(media_update(2, audio=audio_file))
    assert gw.llm.transcriptions[-1]["content_type"] == "audio/mpeg"
    assert prompt_text(gw.llm.requests[-1]).startswith("[audio file, 0:01, transcribed]")


async def test_a_photo_goes_to_the_model_as_an_image_with_its_caption(gw: Gateway) -> None:
    big = png(3000, 2000)
    await gw.deliver(media_update(1, photo=photo(gw, "p1", big), caption="What is this?"))
    request = gw.llm.requests[-1]
    assert prompt_text(request) == "[photo]\n\nWhat is this?"
    [image] = images_sent(gw.llm)
    assert image.format == "JPEG" and max(image.size) == 1568  # resized before sending
    assert gw.fake.downloads == ["photos/p1.jpg"]  # the full picture, not the thumbnail
    # Without a caption the image alone is the question.
    await gw.deliver(media_update(2, photo=photo(gw, "p2", png(40, 30))))
    assert prompt_text(gw.llm.requests[-1]) == "[photo]"
    assert [im.size for im in images_sent(gw.llm)] == [(40, 30)]
    assert gw.fake.sent_texts(1001) == [ANSWER, ANSWER]
    rows = await attachments(gw)
    assert [(r["mime"], r["width"], r["height"], r["sent_as"]) for r in rows] == [
        ("image/png", 3000, 2000, "image"),
        ("image/png", 40, 30, "image"),
    ]
    # Later turns name the photo but do not send it again.
    await gw.deliver(make_text_update(3, "and the colours?"))
    assert gw.llm.image_parts(gw.llm.requests[-1]) == []
    history = [m["content"] for m in gw.llm.requests[-1]["messages"][1:]]
    assert history[0] == "[photo]\n\nWhat is this?"


async def test_a_pdf_and_a_word_document_are_read_with_the_question(gw: Gateway) -> None:
    report = pdf("Quarterly revenue grew 12 percent.", "Costs fell by 3 percent.")
    doc = document(gw, "d1", report, "report.pdf", "application/pdf")
    await gw.deliver(media_update(1, document=doc, caption="Summarize this"))
    text = prompt_text(gw.llm.requests[-1])
    assert text.startswith("[document report.pdf, 2 pages]\nQuarterly revenue grew 12 percent.")
    assert "Costs fell by 3 percent." in text and text.endswith(
        "[end of document]\n\nSummarize this"
    )
    memo = docx("Meeting moved to Friday.", "Bring the slides.")
    word = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
    await gw.deliver(media_update(2, document=document(gw, "d2", memo, "memo.docx", word)))
    assert "Meeting moved to Friday.\nBring the slides." in prompt_text(gw.llm.requests[-1])
    notes = b"# Plan\n\n- buy milk\n"
    await gw.deliver(
        media_update(3, document=document(gw, "d3", notes, "plan.md", "text/markdown"))
    )
    assert "# Plan\n\n- buy milk" in prompt_text(gw.llm.requests[-1])
    rows = await attachments(gw)
    assert [(r["mime"], r["pages"], r["name"]) for r in rows] == [
        ("application/pdf", 2, "report.pdf"),
        (word, None, "memo.docx"),
        ("text/plain", None, "plan.md"),
    ]
    assert gw.fake.sent_texts(1001) == [ANSWER] * 3


async def test_a_long_document_is_cut_to_the_budget_with_a_note(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with telegram_gateway(make_settings, fake_llm, document_tokens=100) as gw:
        long = ("All work and no play makes a dull day. " * 200).encode()
        await gw.deliver(media_update(1, document=document(gw, "d", long, "a.txt", "text/plain")))
        text = prompt_text(gw.llm.requests[-1])
        assert "[cut to fit: " in text and f"of {len(long.strip()):,} characters shown]" in text
        assert len(text) < 600


async def test_a_document_stays_for_follow_ups_until_the_history_budget_names_it_only(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with telegram_gateway(make_settings, fake_llm, history_tokens=300) as gw:
        first = ("The first report says sales rose in spring. " * 18).encode()
        await gw.deliver(
            media_update(1, document=document(gw, "f1", first, "one.txt", "text/plain"))
        )
        await gw.deliver(make_text_update(2, "and in summer?"))
        history = [m["content"] for m in gw.llm.requests[-1]["messages"][1:]]
        assert "sales rose in spring" in history[0] and history[-1] == "and in summer?"
        second = ("The second report says costs fell in autumn. " * 18).encode()
        await gw.deliver(
            media_update(3, document=document(gw, "f2", second, "two.txt", "text/plain"))
        )
        history = [m["content"] for m in gw.llm.requests[-1]["messages"][1:]]
        assert "costs fell in autumn" in history[-1]
        assert history[0].startswith("[document one.txt: its text is no longer in")
        assert "sales rose" not in " ".join(history)


async def test_in_a_group_media_is_read_only_when_it_is_for_the_bot(gw: Gateway) -> None:
    caption = "@skillgate_test_bot what is on this photo?"
    entity = mention_entity(caption, "skillgate_test_bot")
    pic = photo(gw, "g1", png())
    await gw.deliver(
        media_update(1, "supergroup", photo=pic, caption=caption, caption_entities=[entity])
    )
    assert prompt_text(gw.llm.requests[-1]) == "[photo]\n\nwhat is on this photo?"
    assert len(gw.llm.image_parts(gw.llm.requests[-1])) == 1
    answer = last_message(gw.fake, GROUP)
    # A voice note replying to the bot is for the bot: transcribed and answered.
    note = voice(gw, "gv", wav(0.5))
    await gw.deliver(media_update(2, "supergroup", voice=note, reply_to_message=answer))
    assert prompt_text(gw.llm.requests[-1]).endswith("Transcribed words.")
    # Media for the others in the group is not even downloaded.
    await gw.deliver(media_update(3, "supergroup", voice=voice(gw, "gx", wav(0.5))))
    await gw.deliver(media_update(4, "supergroup", photo=photo(gw, "gy", png())))
    assert [c.params["file_id"] for c in gw.fake.calls_of("getFile")] == ["g1", "gv"]
    assert len(gw.fake.sent_texts(GROUP)) == 2


async def test_a_voice_note_in_an_update_the_sdk_refuses_is_still_read(gw: Gateway) -> None:
    # The Bot API guide's own example: no `is_bot`, which python-telegram-bot requires.
    update = media_update(1, voice=voice(gw, "AwADBAADbXXX", wav(0.3), seconds=5))
    del update["message"]["from"]["is_bot"]
    gw.llm.transcripts.append("read me anyway")
    await gw.deliver(update)
    assert prompt_text(gw.llm.requests[-1]).endswith("read me anyway")
    assert gw.fake.sent_texts(1001) == [ANSWER]


async def test_words_replying_to_a_photo_or_document_ask_about_it(gw: Gateway) -> None:
    # Someone in the group posted a photo; another user asks the bot about it by replying.
    posted = media_update(1, "supergroup", photo=photo(gw, "q1", png()))
    text = "@skillgate_test_bot what is this?"
    question = make_text_update(
        2,
        text,
        chat_id=GROUP,
        chat_type="supergroup",
        user_id=1002,
        entities=[mention_entity(text, "skillgate_test_bot")],
        reply_to_message=posted["message"],
    )
    await gw.deliver(question)
    assert prompt_text(gw.llm.requests[-1]) == "[photo]\n\nwhat is this?"
    assert len(gw.llm.image_parts(gw.llm.requests[-1])) == 1
    # A reply to one of the bot's own files reads nothing.
    sent = {**posted["message"], "from": gw.fake.bot_user}
    await gw.deliver(make_text_update(3, "thanks", reply_to_message=sent))
    assert gw.llm.image_parts(gw.llm.requests[-1]) == []
    assert [c.params["file_id"] for c in gw.fake.calls_of("getFile")] == ["q1"]


async def test_an_album_is_answered_once_from_its_first_item(gw: Gateway) -> None:
    first = media_update(1, photo=photo(gw, "a1", png()), caption="Which is nicer?")
    first["message"]["media_group_id"] = "13573"
    await gw.deliver(first)
    for update_id in (2, 3):
        item = media_update(update_id, photo=photo(gw, f"a{update_id}", png()))
        item["message"]["media_group_id"] = "13573"
        await gw.deliver(item)
    assert len(gw.llm.requests) == 1
    assert gw.fake.sent_texts(1001) == [ANSWER]


async def test_an_album_item_whose_answer_failed_to_send_is_read_again_not_dropped(
    gw: Gateway,
) -> None:
    gw.fake.fail_next("sendMessage", 500, "Internal Server Error", times=2)
    first = media_update(1, photo=photo(gw, "c1", png()), caption="Which one?")
    first["message"]["media_group_id"] = "777"
    await gw.deliver(first)  # the inbox retries the update until the answer is sent
    assert gw.fake.sent_texts(1001) == [ANSWER]
    second = media_update(2, photo=photo(gw, "c2", png()))
    second["message"]["media_group_id"] = "777"
    await gw.deliver(second)
    assert gw.fake.sent_texts(1001) == [ANSWER]


# ---- refusals: each one says why ------------------------------------------------------


async def test_voice_without_speech_to_text_says_so_and_downloads_nothing(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with telegram_gateway(make_settings, fake_llm) as gw:
        await gw.deliver(media_update(1, voice=voice(gw, "v", wav(0.2))))
        assert gw.fake.sent_texts(1001) == [notices.NO_STT]
        assert gw.fake.calls_of("getFile") == [] and fake_llm.requests == []


async def test_a_notice_is_in_the_users_language(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with telegram_gateway(make_settings, fake_llm, max_image_mb=0.01) as gw:
        update = media_update(1, voice=voice(gw, "j", ogg_opus(0.2)))
        update["message"]["from"]["language_code"] = "ja"
        await gw.deliver(update)
        big = media_update(2, photo=photo(gw, "jb", png(400, 400)))
        big["message"]["photo"][-1]["file_size"] = 50_000
        big["message"]["from"]["language_code"] = "ja"
        await gw.deliver(big)
        ja = texts_for("ja")
        assert gw.fake.sent_texts(1001) == [
            ja(notices.NO_STT),
            ja(notices.TOO_BIG["image"], limit="10 KB"),
        ]
        assert ja(notices.NO_STT) != notices.NO_STT


async def test_a_file_too_big_is_refused_by_its_declared_size_and_by_its_bytes(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with telegram_gateway(make_settings, fake_llm, max_document_mb=1) as gw:
        declared = {"file_id": "big", "file_unique_id": "ub", "file_name": "big.pdf"}
        await gw.deliver(media_update(1, document={**declared, "file_size": 5 * 1024 * 1024}))
        assert gw.fake.calls_of("getFile") == []  # refused before any download
        # Sizes are not always declared: the bytes are counted too.
        unsized = document(gw, "u", b"x" * (2 * 1024 * 1024), "notes.txt", "text/plain")
        del unsized["file_size"]
        await gw.deliver(media_update(2, document=unsized))
        too_big = notices.TOO_BIG["document"].format(limit="1 MB")
        assert gw.fake.sent_texts(1001) == [too_big, too_big]
    async with telegram_gateway(make_settings, fake_llm, max_document_mb=50) as gw:
        # Past 20 MB the Bot API itself refuses: the notice names its limit.
        huge = document(gw, "h", bytes(21 * 1024 * 1024), "huge.txt", "text/plain")
        del huge["file_size"]
        await gw.deliver(media_update(3, document=huge))
        assert gw.fake.sent_texts(1001) == [notices.TOO_BIG["document"].format(limit="20 MB")]
    assert fake_llm.requests == []


async def test_files_the_gateway_cannot_read_get_a_notice_whatever_they_claim(gw: Gateway) -> None:
    # A program renamed to look like a PDF: the bytes decide, not the name or the type.
    fake_pdf = document(gw, "x", b"MZ\x90\x00" + bytes(200), "invoice.pdf", "application/pdf")
    await gw.deliver(media_update(1, document=fake_pdf))
    # A voice note that is no audio.
    await gw.deliver(media_update(2, voice=voice(gw, "nv", png())))
    # An image Pillow cannot open (a HEIC from a phone: its header, and nothing Pillow reads).
    heic = b"\x00\x00\x00\x18ftypheic\x00\x00\x00\x00mif1heic" + bytes(64)
    await gw.deliver(media_update(3, document=document(gw, "h", heic, "IMG_1.HEIC", "image/heic")))
    assert gw.fake.sent_texts(1001) == [
        notices.UNSUPPORTED_FILE,
        notices.UNSUPPORTED_AUDIO,
        notices.UNSUPPORTED_IMAGE,
    ]
    assert gw.llm.requests == [] and gw.llm.transcriptions == []


async def test_decompression_bombs_are_refused(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    settings = {"max_image_pixels": 1_000_000, "max_pdf_pages": 2}
    async with telegram_gateway(make_settings, fake_llm, **settings) as gw:
        await gw.deliver(media_update(1, photo=photo(gw, "b", png(1200, 1000))))
        pages = pdf("one", "two", "three")
        await gw.deliver(media_update(2, document=document(gw, "p", pages, "a.pdf", "x/y")))
        assert gw.fake.sent_texts(1001) == [
            notices.BOMB["pixels"].format(limit="1,000,000"),
            notices.BOMB["pages"].format(limit="2"),
        ]
        assert fake_llm.requests == []


async def test_a_transcription_failure_or_silence_gets_its_notice(gw: Gateway) -> None:
    gw.llm.transcription_status = 503
    await gw.deliver(media_update(1, voice=voice(gw, "f", wav(0.2))))
    gw.llm.transcription_status = 200
    gw.llm.transcripts.append("  ")
    await gw.deliver(media_update(2, voice=voice(gw, "s", wav(0.2))))
    assert gw.fake.sent_texts(1001) == [notices.STT_FAILED, notices.NO_SPEECH]
    assert gw.llm.requests == []


async def test_a_file_path_the_platform_names_is_never_read_from_disk(
    gw: Gateway, tmp_path: Path
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("the server's own file")
    gw.fake.add_file("local", b"", file_path=str(secret))
    doc = {"file_id": "local", "file_unique_id": "ul", "file_name": "a.txt"}
    await gw.deliver(media_update(1, document=doc))
    assert gw.fake.sent_texts(1001) == [notices.UNAVAILABLE["document"]]
    assert gw.llm.requests == []


async def test_vision_auto_learns_from_the_first_refusal_and_remembers_it_after_a_restart(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    fake_llm.see_images = False
    async with telegram_gateway(make_settings, fake_llm) as gw:
        await gw.deliver(media_update(1, photo=photo(gw, "r1", png()), caption="What is it?"))
        # Refused with the image, then answered from the caption alone.
        assert [len(fake_llm.image_parts(r)) for r in fake_llm.requests] == [1, 0]
        assert (
            prompt_text(fake_llm.requests[-1]) == "[photo, not shown to the model]\n\nWhat is it?"
        )
        assert gw.fake.sent_texts(1001) == [ANSWER]
        [row] = await attachments(gw)
        assert (row["sent_as"], row["note"]) == ("caption", "the model refuses images")
    async with telegram_gateway(make_settings, fake_llm) as gw:
        # After a restart no image is sent: a caption is answered, a bare photo gets a notice.
        await gw.deliver(media_update(2, photo=photo(gw, "r2", png()), caption="And this?"))
        await gw.deliver(media_update(3, photo=photo(gw, "r3", png())))
        assert [len(fake_llm.image_parts(r)) for r in fake_llm.requests] == [1, 0, 0]
        assert gw.fake.sent_texts(1001) == [ANSWER, NO_VISION]
        assert gw.fake.calls_of("getFile") == []  # not worth downloading


async def test_vision_off_answers_the_caption_or_says_the_model_cannot_see(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with telegram_gateway(make_settings, fake_llm, llm_vision="off") as gw:
        await gw.deliver(media_update(1, photo=photo(gw, "o1", png()), caption="Nice, right?"))
        await gw.deliver(media_update(2, photo=photo(gw, "o2", png())))
        assert gw.fake.sent_texts(1001) == [ANSWER, NO_VISION]
        assert [fake_llm.image_parts(r) for r in fake_llm.requests] == [[]]


async def test_a_refusal_without_a_caption_is_an_error_placeholder_never_fed_back(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    fake_llm.see_images = False
    async with telegram_gateway(make_settings, fake_llm) as gw:
        await gw.deliver(media_update(1, photo=photo(gw, "n", png())))
        assert gw.fake.sent_texts(1001) == [NO_VISION]
        await gw.deliver(make_text_update(2, "hello"))
        history = [m["content"] for m in fake_llm.requests[-1]["messages"][1:]]
        assert NO_VISION not in history


async def test_kept_media_stays_inside_the_data_dir_under_its_own_name(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI, tmp_path: Path
) -> None:
    async with telegram_gateway(make_settings, fake_llm, keep_media=True) as gw:
        doc = document(gw, "k", b"plain words\n", "../../etc/passwd", "text/plain")
        await gw.deliver(media_update(1, document=doc))
        [row] = await attachments(gw)
        kept = tmp_path / "data" / "media" / row["kept"]
        assert kept.read_bytes() == b"plain words\n" and kept.suffix == ".txt"
        assert "passwd" not in row["kept"] and row["name"] == "passwd"


async def test_synthesis_reads_transcripts_and_captions_fenced_never_media_or_document_text(
    gw: Gateway,
) -> None:
    gw.llm.transcripts.append("Please book a table for two")
    await gw.deliver(media_update(1, voice=voice(gw, "sv", wav(0.5))))
    await gw.deliver(press(2, last_answer(gw.fake), 1))
    secret_plan = pdf("The launch is on the ninth of May.")
    doc = document(gw, "sd", secret_plan, "plan.pdf", "application/pdf")
    await gw.deliver(media_update(3, document=doc, caption="Is this date right?"))
    await gw.deliver(media_update(4, photo=photo(gw, "sp", png()), caption="And this one?"))
    await gw.deliver(make_text_update(5, "/new"))
    gw.llm.default = lambda body: answer()
    resp = await gw.client.post("/admin/api/synthesize", headers=ADMIN)
    assert resp.status == 200, await resp.text()
    prompt = evidence_prompt(gw.llm.requests[-1])
    fenced = re.search(r"<untrusted-chat-[0-9a-f]{12} session=.*?</untrusted-chat", prompt, re.S)
    assert fenced is not None
    body = fenced.group(0)
    assert "[user, voice message, 0:01, transcribed] Please book a table for two" in body
    assert "[user, document plan.pdf, 1 page] Is this date right?" in body
    assert "[user, photo] And this one?" in body
    assert "ninth of May" not in prompt and "base64" not in prompt
