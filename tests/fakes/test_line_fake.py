"""The LINE fake, driven by the real line-bot-sdk async client and webhook parser."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from linebot.v3.messaging import (
    ApiException,
    AsyncApiClient,
    AsyncMessagingApi,
    Configuration,
    PushMessageRequest,
    ReplyMessageRequest,
    ShowLoadingAnimationRequest,
    TextMessage,
)
from linebot.v3.models.events import UnknownEvent
from linebot.v3.webhook import WebhookParser
from linebot.v3.webhooks import (
    FollowEvent,
    GroupSource,
    MessageEvent,
    PostbackEvent,
    TextMessageContent,
    UserMentionee,
    UserSource,
)

from .line_api import (
    FakeLineAPI,
    follow_event,
    postback_event,
    sign,
    text_event,
    unknown_event,
    webhook_body,
)

os.environ.setdefault("NO_PROXY", "127.0.0.1,localhost")

USER = "U" + "2" * 32
PUSH = "/v2/bot/message/push"
REPLY = "/v2/bot/message/reply"


@pytest_asyncio.fixture
async def fake() -> AsyncIterator[FakeLineAPI]:
    async with FakeLineAPI() as server:
        yield server


@pytest_asyncio.fixture
async def api(fake: FakeLineAPI) -> AsyncIterator[AsyncMessagingApi]:
    config = Configuration(access_token=fake.access_token, host=fake.base_url)
    async with AsyncApiClient(config) as client:
        yield AsyncMessagingApi(client)


def _message(exc: ApiException) -> str:
    return str(json.loads(exc.body)["message"])


@pytest.mark.asyncio
async def test_reply_token_is_single_use(fake: FakeLineAPI, api: AsyncMessagingApi) -> None:
    token = fake.issue_reply_token(to=USER)
    request = ReplyMessageRequest(reply_token=token, messages=[TextMessage(text="hi 👋")])

    response = await api.reply_message(request)
    assert len(response.sent_messages) == 1
    assert fake.delivered_texts(to=USER) == ["hi 👋"]

    with pytest.raises(ApiException) as err:
        await api.reply_message(request)
    assert err.value.status == 400
    assert _message(err.value) == "Invalid reply token"
    assert [c.status for c in fake.calls_to(REPLY)] == [200, 400]
    assert fake.calls_to(REPLY)[0].headers["Authorization"] == f"Bearer {fake.access_token}"


@pytest.mark.asyncio
async def test_push_retry_key_is_deduplicated(fake: FakeLineAPI, api: AsyncMessagingApi) -> None:
    key = str(uuid.uuid4())
    request = PushMessageRequest(to=USER, messages=[TextMessage(text="once")])
    fake.fail_next(PUSH, 500, "Internal server error")

    with pytest.raises(ApiException) as failed:
        await api.push_message(request, x_line_retry_key=key)
    assert failed.value.status == 500

    first = await api.push_message_with_http_info(request, x_line_retry_key=key)
    assert first.status_code == 200
    with pytest.raises(ApiException) as dup:
        await api.push_message(request, x_line_retry_key=key)
    assert dup.value.status == 409
    assert _message(dup.value) == "The retry key is already accepted"
    assert dup.value.headers["x-line-accepted-request-id"] == first.headers["x-line-request-id"]

    calls = await fake.wait_for(PUSH, count=3)
    assert [c.headers["X-Line-Retry-Key"] for c in calls] == [key] * 3
    assert fake.delivered_texts(to=USER) == ["once"]


@pytest.mark.asyncio
async def test_text_longer_than_5000_utf16_units_is_refused(
    fake: FakeLineAPI, api: AsyncMessagingApi
) -> None:
    for text in ("x" * 6000, "😀" * 2501):
        with pytest.raises(ApiException) as err:
            await api.push_message(PushMessageRequest(to=USER, messages=[TextMessage(text=text)]))
        assert err.value.status == 400
        body = json.loads(err.value.body)
        assert body["message"] == "The request body has 1 error(s)"
        assert body["details"] == [
            {"message": "Length must be between 0 and 5000", "property": "messages[0].text"}
        ]
    await api.push_message(PushMessageRequest(to=USER, messages=[TextMessage(text="😀" * 2500)]))
    assert fake.delivered_texts() == ["😀" * 2500]


@pytest.mark.asyncio
async def test_loading_animation_is_accepted(fake: FakeLineAPI, api: AsyncMessagingApi) -> None:
    request = ShowLoadingAnimationRequest(chat_id=USER, loading_seconds=20)
    response = await api.show_loading_animation_with_http_info(request)
    assert response.status_code == 202

    with pytest.raises(ApiException) as err:
        await api.show_loading_animation(ShowLoadingAnimationRequest(chat_id="C" + "1" * 32))
    assert err.value.status == 400
    assert fake.calls_to("/v2/bot/chat/loading/start")[0].body == {
        "chatId": USER,
        "loadingSeconds": 20,
    }


@pytest.mark.asyncio
async def test_exhausted_quota_refuses_push(fake: FakeLineAPI, api: AsyncMessagingApi) -> None:
    fake.quota_exhausted = True
    with pytest.raises(ApiException) as err:
        await api.push_message(PushMessageRequest(to=USER, messages=[TextMessage(text="no")]))
    assert err.value.status == 429
    assert _message(err.value) == "You have reached your monthly limit."
    assert fake.delivered_texts() == []
    assert (await api.get_message_quota_consumption()).total_usage == 0


@pytest.mark.asyncio
async def test_wrong_token_and_unknown_path(fake: FakeLineAPI) -> None:
    config = Configuration(access_token="wrong", host=fake.base_url)
    async with AsyncApiClient(config) as client:
        with pytest.raises(ApiException) as err:
            await AsyncMessagingApi(client).get_bot_info()
    assert err.value.status == 401
    assert _message(err.value).startswith("Authentication failed.")

    async with AsyncApiClient(
        Configuration(access_token=fake.access_token, host=fake.base_url)
    ) as c:
        api = AsyncMessagingApi(c)
        info = await api.get_bot_info()
        assert info.user_id == fake.bot_user_id
        with pytest.raises(ApiException) as missing:
            await api.get_group_summary("C" + "1" * 32)
    assert missing.value.status == 404
    assert [c.path for c in fake.unknown_calls] == [f"/v2/bot/group/C{'1' * 32}/summary"]

    with pytest.raises(AssertionError, match="/v2/bot/info"):
        await fake.wait_for(PUSH, timeout=0.05)


@pytest.mark.asyncio
async def test_webhook_builders_parse_with_the_sdk() -> None:
    secret = "channel-secret"
    body = webhook_body(
        text_event("@FakeBot hello", group_id="C" + "3" * 32, mention_self=True),
        postback_event("action=rate&value=5"),
        follow_event(),
        unknown_event(),
    )
    events = WebhookParser(secret).parse(body.decode(), sign(secret, body))

    text, postback, follow, unknown = events
    assert isinstance(text, MessageEvent)
    assert isinstance(text.message, TextMessageContent)
    assert isinstance(text.source, GroupSource)
    assert text.message.text == "@FakeBot hello"
    mentionee = text.message.mention.mentionees[0]
    assert isinstance(mentionee, UserMentionee)
    assert (mentionee.index, mentionee.length, mentionee.is_self) == (0, 8, True)
    assert isinstance(postback, PostbackEvent)
    assert postback.postback.data == "action=rate&value=5"
    assert isinstance(postback.source, UserSource)
    assert isinstance(follow, FollowEvent)
    assert type(unknown) is UnknownEvent
    assert unknown.type == "futureEvent"
    ids = {e.webhook_event_id for e in events}
    assert len(ids) == 4
    assert all(len(i) == 26 for i in ids)
