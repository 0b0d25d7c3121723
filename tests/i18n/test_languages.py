"""Which language the bot's own texts are in: the rules, on both platforms, end to end."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from gateway.channels.line.dialect import GREETING
from gateway.channels.line.dialect import HELP as LINE_HELP
from gateway.channels.telegram.dialect import HELP, START, UNKNOWN
from gateway.channels.telegram.responder import ASK_COMMENT, COMMENT_PLACEHOLDER
from gateway.config import Settings
from gateway.conversation.feedback import THANKS_DOWN
from gateway.conversation.language import CHOICES, CHOSEN, CURRENT, FOLLOWING, UNKNOWN_LANGUAGE
from gateway.core.agent import APOLOGY
from gateway.i18n import language_of, texts_for
from gateway.store import Store
from tests.channels.telegram.test_telegram_feedback import last_answer, last_message, press
from tests.fakes.line_api import follow_event, postback_event, text_event
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.telegram_api import make_callback_update, make_text_update, mention_entity
from tests.line_support import line_rig, quick_reply_data
from tests.telegram_harness import telegram_gateway

PROFILE = "/v2/bot/profile/"
DAY = 24 * 3600.0


def from_app_in(update: dict[str, Any], language: str | None) -> dict[str, Any]:
    """The update as sent by a Telegram app set to `language` (None: no language_code)."""
    sender = update["message"]["from"]
    if language is None:
        sender.pop("language_code", None)
    else:
        sender["language_code"] = language
    return update


@pytest.mark.parametrize(
    ("tag", "language"),
    [
        ("ja", "ja"),
        ("ja-JP", "ja"),
        ("zh-TW", "zh_TW"),
        ("zh-hant", "zh_TW"),
        ("zh-Hant-HK", "zh_TW"),
        ("zh-hans", "zh_TW"),
        ("zh_TW", "zh_TW"),
        ("th", "th"),
        ("th-TH", "th"),
        ("en-GB", "en"),
        ("de", None),
        ("pt-br", None),
        ("klingon", None),
        ("", None),
        (None, None),
    ],
)
def test_a_platform_language_tag_means_one_catalog_or_none(
    tag: str | None, language: str | None
) -> None:
    assert language_of(tag) == language


@pytest.mark.parametrize(
    ("code", "language", "greeting"),
    [
        ("ja", "ja", "こんにちは、Aliceさん"),
        ("zh-hant", "zh_TW", "嗨，Alice"),
        ("th", "th", "สวัสดี Alice"),
    ],
)
async def test_a_telegram_user_gets_every_fixed_text_in_their_apps_language(
    make_settings: Callable[..., Settings],
    fake_llm: FakeOpenAI,
    code: str,
    language: str,
    greeting: str,
) -> None:
    texts = texts_for(language)
    async with telegram_gateway(make_settings, fake_llm) as gw:
        await gw.deliver(from_app_in(make_text_update(1, "/start"), code))
        await gw.deliver(from_app_in(make_text_update(2, "/help"), code))
        await gw.deliver(from_app_in(make_text_update(3, "/weather"), code))
        sent = gw.fake.sent_texts()
        assert sent[0].startswith(greeting) and sent[0] == texts(START, name="Alice")
        assert sent[1] == texts(HELP)
        assert sent[2] == texts(UNKNOWN, command="weather")

        await gw.deliver(from_app_in(make_text_update(4, "hello"), code))
        answer = last_answer(gw.fake)
        thumbs_down = press(5, answer, 1)
        thumbs_down["callback_query"]["from"]["language_code"] = code
        await gw.deliver(thumbs_down)
        [ack] = gw.fake.calls_of("answerCallbackQuery")
        assert ack.params["text"] == texts(THANKS_DOWN)
        prompt = last_message(gw.fake)
        assert prompt["text"] == texts(ASK_COMMENT) != ASK_COMMENT
        markup = gw.fake.calls_of("sendMessage")[-1].params["reply_markup"]
        assert markup["input_field_placeholder"] == texts(COMMENT_PLACEHOLDER)


async def test_an_unknown_language_gets_english_or_the_configured_default(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with telegram_gateway(make_settings, fake_llm) as gw:
        await gw.deliver(from_app_in(make_text_update(1, "/help"), "de"))
        await gw.deliver(from_app_in(make_text_update(2, "/help", chat_id=7, user_id=7), None))
        assert gw.fake.sent_texts(1001) == [HELP]
        assert gw.fake.sent_texts(7) == [HELP]
    async with telegram_gateway(make_settings, fake_llm, default_language="th") as gw:
        await gw.deliver(from_app_in(make_text_update(3, "/help"), "de"))
        await gw.deliver(from_app_in(make_text_update(4, "/help", chat_id=7, user_id=7), "ja"))
        assert gw.fake.sent_texts(1001) == [texts_for("th")(HELP)]
        assert gw.fake.sent_texts(7) == [texts_for("ja")(HELP)]  # a known language wins


async def test_language_command_chooses_shows_and_resets_the_chats_language(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    ja = texts_for("ja")
    async with telegram_gateway(make_settings, fake_llm) as gw:
        await gw.deliver(from_app_in(make_text_update(1, "/language"), "en"))
        await gw.deliver(from_app_in(make_text_update(2, "/language ja"), "en"))
        await gw.deliver(from_app_in(make_text_update(3, "/help"), "en"))
        await gw.deliver(from_app_in(make_text_update(4, "/language"), "en"))
        await gw.deliver(from_app_in(make_text_update(5, "/language elvish"), "en"))
        await gw.deliver(from_app_in(make_text_update(6, "/language auto"), "en"))
        await gw.deliver(from_app_in(make_text_update(7, "/help"), "en"))
        sent = gw.fake.sent_texts()
        assert sent[0].startswith(CURRENT.format(name="English"))
        assert "zh-TW (繁體中文)" in sent[0] and "th (ไทย)" in sent[0]
        assert sent[1] == ja(CHOSEN, name="日本語")
        assert sent[2] == ja(HELP)  # the choice outlasts the app's English
        assert sent[3].startswith(ja(CURRENT, name="日本語"))
        assert sent[4].startswith(ja(UNKNOWN_LANGUAGE, word="elvish"))
        assert ja(CHOICES, choices="").split("{")[0][:6] in sent[4]
        assert sent[5] == FOLLOWING
        assert sent[6] == HELP
        # The model never saw a /language command.
        assert fake_llm.requests == []


async def test_a_failed_answer_apologises_in_the_users_language(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    fake_llm.error(500, times=10)
    async with telegram_gateway(make_settings, fake_llm, llm_max_retries=0) as gw:
        await gw.deliver(from_app_in(make_text_update(1, "hello"), "ja"))
        assert gw.fake.sent_texts() == [texts_for("ja")(APOLOGY)]


async def test_line_looks_the_language_up_once_keeps_it_and_refreshes_it_rarely(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with line_rig(make_settings, fake_llm) as line:
        user = "U" + "5" * 32
        line.fake.profiles[user] = {"displayName": "Yuki", "language": "ja"}
        await line.deliver(follow_event(user_id=user, reply_token=line.token(user)))
        await line.deliver(text_event("/help", user_id=user, reply_token=line.token(user)))
        ja = texts_for("ja")
        assert line.fake.delivered_texts(to=user) == [
            ja(GREETING, help=ja(LINE_HELP)),
            ja(LINE_HELP),
        ]
        assert len(line.fake.calls_to(PROFILE + user)) == 1  # kept in the database

        # The user switched LINE to Thai; after 30 days the profile is read again.
        line.fake.profiles[user] = {"displayName": "Yuki", "language": "th"}
        line.conversation.languages.clock = lambda: time.time() + 31 * DAY
        await line.deliver(text_event("/help", user_id=user, reply_token=line.token(user)))
        assert line.fake.delivered_texts(to=user)[-1] == texts_for("th")(LINE_HELP)
        assert len(line.fake.calls_to(PROFILE + user)) == 2


async def test_a_failed_profile_lookup_answers_anyway_and_retries_later(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with line_rig(make_settings, fake_llm, default_language="zh-TW") as line:
        user = "U" + "6" * 32
        line.fake.profiles[user] = {"displayName": "Mei", "language": "th"}
        line.fake.fail_next(PROFILE + user, 500, "Internal error")
        await line.deliver(text_event("/help", user_id=user, reply_token=line.token(user)))
        await line.deliver(text_event("/help", user_id=user, reply_token=line.token(user)))
        zh = texts_for("zh_TW")
        assert line.fake.delivered_texts(to=user) == [zh(LINE_HELP), zh(LINE_HELP)]
        assert len(line.fake.calls_to(PROFILE + user)) == 1  # not again at once

        line.conversation.languages.clock = lambda: time.time() + 2 * 3600
        await line.deliver(text_event("/help", user_id=user, reply_token=line.token(user)))
        assert line.fake.delivered_texts(to=user)[-1] == texts_for("th")(LINE_HELP)
        assert len(line.fake.calls_to(PROFILE + user)) == 2


async def test_a_chats_choice_and_a_users_language_are_kept_on_either_database(
    any_store: Store,
) -> None:
    empty = await any_store.language_state("line", "C1", "U1")
    assert (empty.chosen, empty.tag, empty.checked_at) == (None, None, None)
    await any_store.user_language_seen("line", "U1", "ja", ok=True, now=100.0)
    await any_store.choose_language("line", "C1", "th", "U1", now=101.0)
    state = await any_store.language_state("line", "C1", "U1")
    assert (state.chosen, state.tag, state.ok, state.checked_at) == ("th", "ja", True, 100.0)
    # A failed lookup keeps the language known before; a reset forgets the choice.
    await any_store.user_language_seen("line", "U1", None, ok=False, now=200.0)
    await any_store.choose_language("line", "C1", None)
    state = await any_store.language_state("line", "C1", "U1")
    assert (state.chosen, state.tag, state.ok, state.checked_at) == (None, "ja", False, 200.0)
    assert (await any_store.language_state("line", "C2", "U1")).tag == "ja"
    assert (await any_store.language_state("telegram", "C1", "U1")).tag is None


async def test_in_a_group_the_translated_prompt_still_mentions_the_user_in_valid_html(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    group = -1009
    async with telegram_gateway(make_settings, fake_llm) as gw:
        text = f"@{gw.fake.bot_username} hello"
        entities = [mention_entity(text, gw.fake.bot_username)]
        update = make_text_update(1, text, chat_id=group, chat_type="supergroup", entities=entities)
        await gw.deliver(update)
        down = press(2, last_answer(gw.fake, group), 1, user_id=555)
        down["callback_query"]["from"]["language_code"] = "ja"
        await gw.deliver(down)
        prompt = gw.fake.calls_of("sendMessage")[-1]
        assert prompt.status == 200  # the fake parses the HTML as Telegram does
        assert prompt.params["text"].startswith('<a href="tg://user?id=555">Alice</a>さん、')


async def test_on_line_the_language_is_a_tap_away(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with line_rig(make_settings, fake_llm) as line:
        user = "U" + "7" * 32
        await line.deliver(text_event("/language", user_id=user, reply_token=line.token(user)))
        (shown,) = line.fake.delivered_messages(user)
        labels = [i["action"]["label"] for i in shown["quickReply"]["items"]]
        assert labels == ["English", "日本語", "繁體中文", "ไทย", "Follow my app"]
        data = quick_reply_data(shown)
        assert data[3] == "lang:th"

        await line.deliver(postback_event(data[3], user_id=user, reply_token=line.token(user)))
        await line.deliver(text_event("/help", user_id=user, reply_token=line.token(user)))
        th = texts_for("th")
        assert line.fake.delivered_texts(to=user)[-2:] == [
            th(CHOSEN, name="ไทย"),
            th(LINE_HELP),
        ]
        await line.deliver(postback_event(data[4], user_id=user, reply_token=line.token(user)))
        assert line.fake.delivered_texts(to=user)[-1] == FOLLOWING  # the profile says English


async def test_on_telegram_a_language_button_chooses_and_stops_spinning(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with telegram_gateway(make_settings, fake_llm) as gw:
        await gw.deliver(from_app_in(make_text_update(1, "/language"), "en"))
        message = last_message(gw.fake)
        row = gw.fake.calls_of("sendMessage")[-1].params["reply_markup"]["inline_keyboard"][0]
        assert [b["callback_data"] for b in row] == [
            "lang:en",
            "lang:ja",
            "lang:zh-TW",
            "lang:th",
            "lang:auto",
        ]
        choose = make_callback_update(
            2, "lang:zh-TW", message_id=message["message_id"], message_text=message["text"]
        )
        await gw.deliver(choose)
        assert len(gw.fake.calls_of("answerCallbackQuery")) == 1
        zh = texts_for("zh_TW")
        assert gw.fake.sent_texts()[-1] == zh(CHOSEN, name="繁體中文")
