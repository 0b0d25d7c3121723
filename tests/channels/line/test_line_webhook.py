"""LINE webhook: signatures, dedupe, robustness, and who gets an answer."""

from __future__ import annotations

from collections.abc import Callable

from gateway.channels.line.dialect import TEXT_ONLY
from gateway.config import Settings
from tests.fakes.line_api import (
    USER_ID,
    follow_event,
    new_event_id,
    sign,
    text_event,
    unknown_event,
    webhook_body,
)
from tests.fakes.openai_server import FakeOpenAI
from tests.line_support import (
    GROUP_ID,
    LOADING,
    PUSH,
    REPLY,
    SECRET,
    LineRig,
    dumps,
    line_rig,
    quick_reply_data,
)


async def test_a_signed_message_is_answered_by_reply_with_rating_quick_replies(
    line: LineRig,
) -> None:
    line.llm.reply("Paris is the capital of France.")
    await line.deliver(text_event("What is the capital of France?", reply_token=line.token()))

    assert line.last_prompt() == "What is the capital of France?"
    [call] = line.fake.calls_to(REPLY)
    assert call.status == 200
    [message] = call.body["messages"]
    assert message["text"] == "Paris is the capital of France."
    data = quick_reply_data(message)
    assert len(data) == 2 and data[0].endswith(":+1") and data[1].endswith(":-1")
    labels = [i["action"]["displayText"] for i in message["quickReply"]["items"]]
    assert labels == ["👍", "👎"]
    assert all(len(d) <= 300 for d in data)
    assert line.fake.calls_to(PUSH) == []
    [loading] = line.fake.calls_to(LOADING)  # 1:1 chat: the typing animation while it works
    assert loading.body["chatId"] == USER_ID and loading.body["loadingSeconds"] % 5 == 0
    assert loading.at < call.at


async def test_a_bad_or_missing_signature_is_401_and_nothing_is_sent(line: LineRig) -> None:
    body = webhook_body(text_event("hello", reply_token=line.token()))
    tampered = body.replace(b"hello", b"HELLO")
    cases = [(body, sign("wrong-secret", body)), (body, ""), (tampered, sign(SECRET, body))]
    for raw, signature in cases:
        resp = await line.post(body=raw, signature=signature)
        assert resp.status == 401
    await line.idle()
    assert line.fake.calls == []
    assert line.llm.requests == []
    assert await line.store.inbox_pending_count() == 0


async def test_the_same_event_delivered_twice_is_answered_once(line: LineRig) -> None:
    event = text_event("hello", reply_token=line.token())
    first = await line.post(event)
    again = {**event, "deliveryContext": {"isRedelivery": True}}
    second = await line.post(again)
    assert (first.status, second.status) == (200, 200)
    await line.idle()
    assert len(line.llm.requests) == 1
    assert line.fake.delivered_texts() == ["Hello from the fake model."]


async def test_the_console_verification_request_gets_200(line: LineRig) -> None:
    resp = await line.post(body=dumps({"destination": "U" + "0" * 32, "events": []}))
    assert resp.status == 200
    assert await line.store.inbox_pending_count() == 0


async def test_malformed_and_oversized_bodies_are_refused_without_a_500(line: LineRig) -> None:
    for raw in (b"{not json", b'{"destination": "x"}', b'{"events": {}}', b"\xff\xfe"):
        resp = await line.post(body=raw)
        assert resp.status == 400, raw
    huge = dumps({"events": [], "pad": "x" * (1024 * 1024)})
    assert (await line.post(body=huge)).status == 413
    assert line.fake.calls == []


async def test_unknown_and_incomplete_events_are_skipped_while_messages_are_answered(
    line: LineRig,
) -> None:
    no_quote = text_event("no quote token")
    del no_quote["message"]["quoteToken"]  # the SDK's model refuses this; LINE sent it so
    no_source = text_event("nobody")
    del no_source["source"]
    no_id = text_event("unidentified")
    del no_id["webhookEventId"]
    sticker = text_event("")
    sticker["message"] = {"type": "sticker", "id": "1", "packageId": "1", "stickerId": "2"}
    future_message = text_event("")
    future_message["message"] = {"type": "hologram", "id": "2"}
    bare_common = {"type": "message", "webhookEventId": new_event_id()}  # no mode, timestamp...
    no_token = text_event("no reply token")  # optional: answered by push instead
    del no_token["replyToken"]
    good = text_event("still here", reply_token=line.token())
    resp = await line.post(
        unknown_event(),
        unknown_event("memberJoined", group_id=GROUP_ID),
        no_quote,
        no_source,
        no_id,
        sticker,
        future_message,
        bare_common,
        "not an event",  # type: ignore[arg-type]
        no_token,
        good,
    )
    assert resp.status == 200
    await line.idle()
    prompts = [r["messages"][-1]["content"] for r in line.llm.requests]
    assert prompts == ["no quote token", "unidentified", "no reply token", "still here"]
    # A sticker LINE gives no words for, and a message type newer than the gateway: a notice.
    assert line.fake.delivered_texts() == [
        "Hello from the fake model.",
        "Hello from the fake model.",
        TEXT_ONLY,
        TEXT_ONLY,
        "Hello from the fake model.",
        "Hello from the fake model.",
    ]
    assert await line.store.inbox_pending_count() == 0
    assert await line.inbox_errors() == []


async def test_a_group_message_is_answered_only_when_the_bot_is_mentioned_or_commanded(
    line: LineRig,
) -> None:
    joined = unknown_event("join", group_id=GROUP_ID, extra={"replyToken": line.token(GROUP_ID)})
    await line.deliver(joined)
    assert line.fake.delivered_texts(to=GROUP_ID)[-1].startswith("Hi everyone")

    await line.deliver(text_event("just chatting", group_id=GROUP_ID, reply_token=line.token()))
    assert line.llm.requests == [] and len(line.fake.calls) == 1

    token = line.token(to=GROUP_ID)
    await line.deliver(
        text_event("what time is it?", group_id=GROUP_ID, mention_self=True, reply_token=token)
    )
    assert line.last_prompt() == "what time is it?"  # the @mention is not part of the question
    assert line.fake.delivered_texts(to=GROUP_ID)[-1] == "Hello from the fake model."
    assert line.fake.calls_to(LOADING) == []  # groups get no loading animation

    await line.deliver(text_event("/help", group_id=GROUP_ID, reply_token=line.token(GROUP_ID)))
    assert "/new" in line.fake.delivered_texts(to=GROUP_ID)[-1]
    assert len(line.llm.requests) == 1


async def test_follow_gets_a_greeting_and_commands_work(line: LineRig) -> None:
    await line.deliver(follow_event(reply_token=line.token()))
    assert line.fake.delivered_texts()[-1].startswith("Hi, thanks for adding me")
    await line.deliver(follow_event(reply_token=line.token(), unblocked=True))
    assert line.fake.delivered_texts()[-1].startswith("Welcome back")

    line.llm.default = lambda body: f"{len(body['messages'])} messages"
    await line.deliver(text_event("first", reply_token=line.token()))
    await line.deliver(text_event("second", reply_token=line.token()))
    await line.deliver(text_event("/new", reply_token=line.token()))
    assert "start over" in line.fake.delivered_texts()[-1]
    await line.deliver(text_event("third", reply_token=line.token()))
    # system + question only: the earlier exchange was left behind by /new
    assert [len(r["messages"]) for r in line.llm.requests] == [2, 4, 2]
    await line.deliver(text_event("\uff0fHELP", reply_token=line.token()))  # full-width slash
    assert "/help" in line.fake.delivered_texts()[-1]
    assert len(line.llm.requests) == 3


async def test_only_allowed_users_are_answered_when_an_allowlist_is_set(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    friend = "U" + "a" * 32
    async with line_rig(make_settings, fake_llm, line_allowed_user_ids=friend) as line:
        await line.deliver(text_event("hi", reply_token=line.token()))
        assert line.llm.requests == []
        assert "private" in line.fake.delivered_texts()[-1]

        await line.deliver(text_event("hi", user_id=friend, reply_token=line.token(friend)))
        assert len(line.llm.requests) == 1
        assert line.fake.delivered_texts(to=friend) == ["Hello from the fake model."]
