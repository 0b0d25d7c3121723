"""LINE: what real webhook events get, through the signed webhook against the fake API.

The fixtures follow the shapes in LINE's reference and the SDKs' test bodies: text without
`quoteToken` (before 2023), bodies from 2016 without `webhookEventId` or `mode`, image sets,
video, audio, files, locations, stickers with keywords, edits and unsend.
"""

from __future__ import annotations

import copy
import logging
from typing import Any

import pytest

from gateway.channels.line.dialect import ASK_IN_GROUP, LINE, TEXT_ONLY, THANKS_FOR_COMMENT
from gateway.conversation.attachments import NO_STT
from tests.console_support import sign_in
from tests.fakes.line_api import USER_ID, postback_event, text_event
from tests.line_support import GROUP_ID, REPLY, LineRig, quick_reply_data

ANSWER = "Hello from the fake model."


def media_event(
    line: LineRig, message: dict[str, Any], *, group: bool = False, **fields: Any
) -> dict[str, Any]:
    """A message event carrying `message` (no text), from the default user."""
    to = GROUP_ID if group else USER_ID
    event = text_event("", group_id=GROUP_ID if group else None, reply_token=line.token(to))
    event["message"] = {"id": message.pop("id", "468789577898262530"), **message}
    event.update(fields)
    return event


def image(set_id: str | None = None, index: int = 1) -> dict[str, Any]:
    content: dict[str, Any] = {"type": "image", "contentProvider": {"type": "line"}}
    content["quoteToken"] = "q3Plxr4AgKd"
    if set_id is not None:
        content["imageSet"] = {"id": set_id, "index": index, "total": 2}
    return content


def prompts(line: LineRig) -> list[str]:
    return [str(r["messages"][-1]["content"]) for r in line.llm.requests]


async def unreadable_count(line: LineRig) -> float:
    text = await (await line.http.get("/metrics")).text()
    for row in text.splitlines():
        if row.startswith('skillgate_updates_unreadable_total{channel="line"}'):
            return float(row.split()[-1])
    return 0.0


async def test_events_the_sdk_refuses_are_still_answered(line: LineRig) -> None:
    # A 2023 capture: text without quoteToken.
    captured = text_event("hello from 2023", reply_token=line.token())
    del captured["message"]["quoteToken"]
    # A 2016 body: no webhookEventId, no deliveryContext, no mode.
    legacy = text_event("hello from 2016", reply_token=line.token())
    for key in ("webhookEventId", "deliveryContext", "mode"):
        del legacy[key]
    await line.deliver(captured, legacy)
    assert prompts(line) == ["hello from 2023", "hello from 2016"]
    # Redelivered, the legacy event is known by its content and not answered twice.
    await line.deliver(copy.deepcopy(legacy))
    assert len(line.llm.requests) == 2
    assert await unreadable_count(line) == 0


async def test_an_event_no_chat_can_be_found_for_is_counted_and_logged_by_id(
    line: LineRig, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    lost = text_event("private words")
    del lost["source"]
    await line.deliver(lost)
    assert await unreadable_count(line) == 1
    assert lost["webhookEventId"] in caplog.text
    assert "private words" not in caplog.text
    assert line.fake.calls_to(REPLY) == []


async def test_media_the_gateway_does_not_read_gets_a_notice_in_a_1on1_chat(
    line: LineRig,
) -> None:
    video = {"type": "video", "duration": 60000, "contentProvider": {"type": "line"}}
    audio = {"type": "audio", "duration": 60000, "contentProvider": {"type": "line"}}
    # Content another provider holds is at a URL the sender chose: never fetched.
    external = {
        **image(),
        "contentProvider": {"type": "external", "originalContentUrl": "https://example.com/a"},
    }
    for content in (video, audio, external):
        await line.deliver(media_event(line, content))
    # No speech-to-text is set up here, so the audio says that.
    assert line.fake.delivered_texts() == [TEXT_ONLY, NO_STT, TEXT_ONLY]
    assert line.llm.requests == [] and line.fake.content_requests == []


async def test_media_in_a_group_gets_silence(line: LineRig) -> None:
    await line.deliver(media_event(line, image(), group=True))
    sticker = {"type": "sticker", "packageId": "446", "stickerId": "1988"}
    await line.deliver(media_event(line, {**sticker, "keywords": ["happy"]}, group=True))
    assert line.fake.delivered_texts(GROUP_ID) == []
    assert line.llm.requests == [] and line.fake.content_requests == []


async def test_places_and_stickers_are_passed_on_as_text(line: LineRig) -> None:
    place = {
        "type": "location",
        "title": "my location",
        "address": "1-3 Kioicho, Chiyoda-ku, Tokyo",
        "latitude": 35.67966,
        "longitude": 139.73669,
    }
    await line.deliver(media_event(line, place))
    sticker = {
        "type": "sticker",
        "packageId": "446",
        "stickerId": "1988",
        "stickerResourceType": "ANIMATION",
        "keywords": ["Happy", "Sweet"],
    }
    await line.deliver(media_event(line, sticker))
    with_text = {**sticker, "stickerResourceType": "MESSAGE", "text": "Let's hug!"}
    await line.deliver(media_event(line, with_text))
    bare = {"type": "sticker", "packageId": "1", "stickerId": "2"}  # no words: a notice
    await line.deliver(media_event(line, bare))
    assert prompts(line) == [
        "[Shared a place: my location, 1-3 Kioicho, Chiyoda-ku, Tokyo]",
        "[Sent a sticker: Happy, Sweet]",
        "[Sent a sticker: Let's hug!]",
    ]
    assert line.fake.delivered_texts()[-1] == TEXT_ONLY


async def test_an_edited_message_is_not_answered_again(line: LineRig) -> None:
    asked = text_event("what is tea?", reply_token=line.token())
    await line.deliver(asked)
    edited = text_event("what is green tea?", reply_token=line.token())
    edited["type"] = "messageEdited"
    edited["message"]["id"] = asked["message"]["id"]
    await line.deliver(edited)
    assert prompts(line) == ["what is tea?"]


async def test_an_unsent_message_leaves_the_history_evidence_and_console(
    line: LineRig,
) -> None:
    secret = text_event("my card number is 4111", reply_token=line.token())
    await line.deliver(secret)
    unsend = text_event("", reply_token=None)
    del unsend["message"], unsend["replyToken"]
    unsend.update(type="unsend", unsend={"messageId": secret["message"]["id"]})
    await line.deliver(unsend)
    await line.deliver(text_event("what did I say?", reply_token=line.token()))
    history = " ".join(str(m["content"]) for m in line.llm.requests[-1]["messages"])
    assert "4111" not in history
    assert ANSWER not in history  # the answer to the unsent message goes with it
    [session] = await line.store.run(lambda db: list(db.query("select id from sessions")))
    [evidence] = await line.store.session_evidence([session["id"]])
    assert [t.text for t in evidence.turns] == ["what did I say?", ANSWER]
    await sign_in(line.http, "admin-secret-token")
    html = await (await line.http.get(f"/admin/conversations/{session['id']}")).text()
    assert "4111" not in html
    assert "The user unsent this message" in html
    assert line.fake.delivered_texts() == [ANSWER, ANSWER]  # unsend itself gets no answer


async def test_in_a_group_only_a_message_to_the_bot_from_the_user_asked_is_the_comment(
    line: LineRig,
) -> None:
    await line.deliver(
        text_event("@FakeBot help", group_id=GROUP_ID, mention_self=True, reply_token=line.token())
    )
    answer = line.fake.calls_to(REPLY)[-1].body["messages"][-1]
    _up, down = quick_reply_data(answer)
    await line.deliver(postback_event(down, group_id=GROUP_ID, reply_token=line.token(GROUP_ID)))
    assert line.fake.delivered_texts(GROUP_ID)[-1] == ASK_IN_GROUP
    # The group talks on: nothing is taken as the comment, and no thanks goes to the group.
    await line.deliver(text_event("see you at noon", group_id=GROUP_ID))
    await line.deliver(text_event("me too", group_id=GROUP_ID, user_id="U" + "9" * 32))
    assert [row["comment"] for row in await line.feedback()] == [None]
    assert THANKS_FOR_COMMENT not in line.fake.delivered_texts(GROUP_ID)
    await line.deliver(
        text_event(
            "@FakeBot Too vague.",
            group_id=GROUP_ID,
            mention_self=True,
            reply_token=line.token(GROUP_ID),
        )
    )
    assert [row["comment"] for row in await line.feedback()] == ["Too vague."]
    assert line.fake.delivered_texts(GROUP_ID)[-1] == THANKS_FOR_COMMENT
    assert len(line.llm.requests) == 1


async def test_a_second_thumbs_down_after_a_comment_does_not_ask_again(line: LineRig) -> None:
    await line.deliver(text_event("help", reply_token=line.token()))
    up, down = quick_reply_data(line.fake.calls_to(REPLY)[-1].body["messages"][-1])
    await line.deliver(postback_event(down, reply_token=line.token()))
    await line.deliver(text_event("Too vague.", reply_token=line.token()))
    await line.deliver(postback_event(up, reply_token=line.token()))
    await line.deliver(postback_event(down, reply_token=line.token()))
    asked = [t for t in line.fake.delivered_texts() if t.startswith("What went wrong?")]
    assert len(asked) == 1
    assert [(r["rating"], r["comment"]) for r in await line.feedback()] == [(-1, "Too vague.")]


async def test_an_unsent_comment_is_forgotten(line: LineRig) -> None:
    await line.deliver(text_event("help", reply_token=line.token()))
    _up, down = quick_reply_data(line.fake.calls_to(REPLY)[-1].body["messages"][-1])
    await line.deliver(postback_event(down, reply_token=line.token()))
    comment = text_event("the answer was about my neighbour Ann", reply_token=line.token())
    await line.deliver(comment)
    assert [r["comment"] for r in await line.feedback()] == [
        "the answer was about my neighbour Ann"
    ]
    unsend = text_event("", reply_token=None)
    del unsend["message"], unsend["replyToken"]
    unsend.update(type="unsend", unsend={"messageId": comment["message"]["id"]})
    await line.deliver(unsend)
    assert [(r["rating"], r["comment"]) for r in await line.feedback()] == [(-1, None)]


async def test_a_bare_mention_in_a_group_gets_the_help(line: LineRig) -> None:
    event = text_event(
        "@FakeBot", group_id=GROUP_ID, mention_self=True, reply_token=line.token(GROUP_ID)
    )
    await line.deliver(event)
    assert line.fake.delivered_texts(GROUP_ID) == [LINE.help]
    assert line.llm.requests == []
