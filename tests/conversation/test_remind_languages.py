"""`when` in the four languages the bot speaks, on a clock and in a timezone the test holds:
each documented form in English, Japanese, Traditional Chinese and Thai gives its time,
an hour that could be morning or evening is refused rather than guessed, anything else is
refused with the forms, and a Japanese and a Thai /remind work through the real app on
Telegram and LINE, answered in the user's language."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from gateway.config import Settings
from gateway.conversation.tasks import AMBIGUOUS, PASSED, USAGE, BadWhen, plan
from gateway.core.task_when import normalise
from tests.channels.drivers import DRIVERS, running
from tests.fakes.openai_server import FakeOpenAI

TOKYO = ZoneInfo("Asia/Tokyo")
NOW = datetime(2026, 12, 7, 14, 30, tzinfo=TOKYO).timestamp()
"""A Monday, 14:30 in Tokyo."""


def at(text: str, tz: ZoneInfo = TOKYO) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=tz).timestamp()


TODAY_15 = at("2026-12-07 15:00")
TOMORROW_9 = at("2026-12-08 09:00")
TOMORROW_8 = at("2026-12-08 08:00")

FORMS = [
    # English, as before, and what CLDR adds (today, AM/PM, noon, spelled-out durations)
    ("en", "in 10m tea", "once", NOW + 600),
    ("en", "in 10 minutes tea", "once", NOW + 600),
    ("en", "in 2 hours tea", "once", NOW + 7200),
    ("en", "tomorrow at 09:00 tea", "once", TOMORROW_9),
    ("en", "today 15:00 tea", "once", TODAY_15),
    ("en", "3pm tea", "once", TODAY_15),
    ("en", "tomorrow 9 AM tea", "once", TOMORROW_9),
    ("en", "tomorrow noon tea", "once", at("2026-12-08 12:00")),
    ("en", "weekdays 08:00 tea", "weekdays", TOMORROW_8),
    ("en", "Friday 9 AM tea", "once", at("2026-12-11 09:00")),
    ("en", "Mon 15:00 tea", "once", TODAY_15),
    # Japanese
    ("ja", "明日 9:00 tea", "once", TOMORROW_9),
    ("ja", "明日9時tea", "once", TOMORROW_9),
    ("ja", "明日の9時に tea", "once", TOMORROW_9),
    ("ja", "あした 9:00 tea", "once", TOMORROW_9),
    ("ja", "明後日 9時30分 tea", "once", at("2026-12-09 09:30")),
    ("ja", "10分後 tea", "once", NOW + 600),
    ("ja", "2時間後 tea", "once", NOW + 7200),
    ("ja", "3日後 tea", "once", NOW + 3 * 86400),
    ("ja", "午後3時 tea", "once", TODAY_15),
    ("ja", "午後3時半 tea", "once", at("2026-12-07 15:30")),
    ("ja", "15時 tea", "once", TODAY_15),
    ("ja", "12時 tea", "once", at("2026-12-08 12:00")),  # noon, passed today
    ("ja", "午前0時 tea", "once", at("2026-12-08 00:00")),
    ("ja", "午後0時 tea", "once", at("2026-12-08 12:00")),  # noon
    ("ja", "正午 tea", "once", at("2026-12-08 12:00")),
    ("ja", "夜8時 tea", "once", at("2026-12-07 20:00")),
    ("ja", "月曜 9:00 tea", "once", at("2026-12-14 09:00")),
    ("ja", "水曜日の午後3時 tea", "once", at("2026-12-09 15:00")),
    ("ja", "12月24日 18時 tea", "once", at("2026-12-24 18:00")),
    ("ja", "2027年1月5日 9:00 tea", "once", at("2027-01-05 09:00")),
    ("ja", "12月1日 9:00 tea", "once", at("2027-12-01 09:00")),  # passed: next year's
    ("ja", "毎日 8:00 tea", "daily", TOMORROW_8),
    ("ja", "毎日8時tea", "daily", TOMORROW_8),
    ("ja", "平日 8:00 tea", "weekdays", TOMORROW_8),
    ("ja", "毎週 明日 8:00 tea", "weekly", TOMORROW_8),
    ("ja", "毎月 12月31日 9:00 tea", "monthly", at("2026-12-31 09:00")),
    ("ja", "九時半 tea", "once", at("2026-12-08 09:30")),  # numerals
    ("ja", "午後三時 tea", "once", TODAY_15),
    ("ja", "二十三時 tea", "once", at("2026-12-07 23:00")),
    ("ja", "十分後 tea", "once", NOW + 600),
    ("ja", "一時間後 tea", "once", NOW + 3600),
    ("ja", "９:００ tea", "once", TOMORROW_9),  # full-width digits
    ("ja", "１０分後 tea", "once", NOW + 600),
    # Traditional Chinese
    ("zh", "明天 上午9點 tea", "once", TOMORROW_9),
    ("zh", "明天9點 tea", "once", TOMORROW_9),
    ("zh", "明天 09:00 tea", "once", TOMORROW_9),
    ("zh", "下午3點 tea", "once", TODAY_15),
    ("zh", "下午3點半 tea", "once", at("2026-12-07 15:30")),
    ("zh", "晚上8點15分 tea", "once", at("2026-12-07 20:15")),
    ("zh", "中午12點 tea", "once", at("2026-12-08 12:00")),
    ("zh", "後天 10點 tea", "once", at("2026-12-09 10:00")),
    ("zh", "星期五 下午3點 tea", "once", at("2026-12-11 15:00")),
    ("zh", "週二 09:00 tea", "once", at("2026-12-08 09:00")),
    ("zh", "10分鐘後 tea", "once", NOW + 600),
    ("zh", "明天九點 tea", "once", TOMORROW_9),
    ("zh", "明天早上九點 tea", "once", TOMORROW_9),
    ("zh", "下午兩點半 tea", "once", at("2026-12-08 14:30")),  # 14:30 now: tomorrow's
    ("zh", "二十分鐘後 tea", "once", NOW + 1200),
    ("zh", "2小時後 tea", "once", NOW + 7200),
    ("zh", "3天後 09:00 tea", "once", at("2026-12-10 09:00")),
    ("zh", "每天 08:00 tea", "daily", TOMORROW_8),
    ("zh", "工作日 08:00 tea", "weekdays", TOMORROW_8),
    ("zh", "每週 明天 8點 tea", "weekly", TOMORROW_8),
    ("zh", "每月 2026年12月31日 09:00 tea", "monthly", at("2026-12-31 09:00")),
    # Thai (Thai digits too)
    ("th", "พรุ่งนี้ 9:00 tea", "once", TOMORROW_9),
    ("th", "พรุ่งนี้ เวลา 09.00 น. tea", "once", TOMORROW_9),
    ("th", "พรุ่งนี้ 9 โมง tea", "once", TOMORROW_9),
    ("th", "พรุ่งนี้ 9 โมงเช้า tea", "once", TOMORROW_9),
    ("th", "บ่าย 3 โมง tea", "once", TODAY_15),
    ("th", "4 โมงเย็น tea", "once", at("2026-12-07 16:00")),
    ("th", "15 นาฬิกา tea", "once", TODAY_15),
    ("th", "วันศุกร์ 9:00 tea", "once", at("2026-12-11 09:00")),
    ("th", "อีก 10 นาที tea", "once", NOW + 600),
    ("th", "ในอีก 2 ชั่วโมง tea", "once", NOW + 7200),
    ("th", "ทุกวัน 08:00 tea", "daily", TOMORROW_8),
    ("th", "ทุกวันธรรมดา 08:00 tea", "weekdays", TOMORROW_8),
    ("th", "ทุกสัปดาห์ พรุ่งนี้ 08:00 tea", "weekly", TOMORROW_8),
    ("th", "ทุกเดือน 2026-12-31 09:00 tea", "monthly", at("2026-12-31 09:00")),
    ("th", "พรุ่งนี้ ๙:๐๐ tea", "once", TOMORROW_9),
]


@pytest.mark.parametrize(("language", "asked", "repeat", "due"), FORMS)
def test_each_form_in_each_language_gives_its_time(
    language: str, asked: str, repeat: str, due: float
) -> None:
    planned = plan(asked, "Asia/Tokyo", NOW)
    assert (planned.next_at, planned.repeat, planned.text) == (due, repeat, "tea"), language


@pytest.mark.parametrize(
    ("asked", "cron", "due"),
    [
        ("weekly monday 09:00 tea", "0 9 * * 1", at("2026-12-14 09:00")),  # today's passed
        ("weekly Monday 15:00 tea", "0 15 * * 1", TODAY_15),  # today's still to come
        ("毎週月曜 9:00 tea", "0 9 * * 1", at("2026-12-14 09:00")),
        ("毎週日曜 9:00 tea", "0 9 * * 0", at("2026-12-13 09:00")),
        ("毎週 金曜日の午後3時 tea", "0 15 * * 5", at("2026-12-11 15:00")),
        ("每週一 08:00 tea", "0 8 * * 1", at("2026-12-14 08:00")),
        ("每週日 08:00 tea", "0 8 * * 0", at("2026-12-13 08:00")),
        ("每週 星期三 上午9點 tea", "0 9 * * 3", at("2026-12-09 09:00")),
        ("ทุกสัปดาห์ วันจันทร์ 9:00 tea", "0 9 * * 1", at("2026-12-14 09:00")),
        ("ทุกอาทิตย์ วันศุกร์ บ่าย 3 โมง tea", "0 15 * * 5", at("2026-12-11 15:00")),
    ],
)
def test_a_weekday_named_in_each_language_is_the_next_one(
    asked: str, cron: str, due: float
) -> None:
    planned = plan(asked, "Asia/Tokyo", NOW)
    assert (planned.cron, planned.next_at, planned.text) == (cron, due, "tea")


def test_repeats_said_in_each_language_make_the_same_rules() -> None:
    for daily in ("daily 08:00 x", "毎日 8:00 x", "每天 08:00 x", "ทุกวัน 08:00 x"):
        assert plan(daily, "Asia/Tokyo", NOW).cron == "0 8 * * *"
    for weekdays in ("weekdays 08:00 x", "平日 8時 x", "工作日 8點 x", "วันธรรมดา 08:00 x"):
        assert plan(weekdays, "Asia/Tokyo", NOW).cron == "0 8 * * 1-5"
    for weekly in ("weekly tomorrow 07:30 x", "毎週 明日 7:30 x", "每週 明天 07:30 x"):
        assert plan(weekly, "Asia/Tokyo", NOW).cron == "30 7 * * 2"


@pytest.mark.parametrize(
    "asked",
    [
        "3時 x",  # 03:00 or 15:00
        "明日 5時 x",
        "3點半 x",
        "三時 x",
        "兩點 x",
        "早上3點 x",
        "พรุ่งนี้ 3 โมง x",
        "午前12時 x",  # noon by the Japanese convention, midnight in English
        "午後12時 x",
        "12 PM x",
        "12 AM x",
        "上午12點 x",
        "午前15時 x",  # contradicts itself
        "晚上3點 x",
        "6 โมงเย็น x",  # outside CLDR's Thai evening (16:00-18:00): not guessed
    ],
)
def test_an_hour_that_could_be_two_is_refused_not_guessed(asked: str) -> None:
    with pytest.raises(BadWhen) as refused:
        plan(asked, "Asia/Tokyo", NOW)
    assert refused.value.template == AMBIGUOUS


@pytest.mark.parametrize(
    "asked",
    [
        "明日 水やり",  # no time
        "毎日 水やり",
        "毎日 10分後 x",  # a repeat needs a clock time
        "10分 x",
        "9.30 x",  # 9.30 alone could be a price
        "9 x",  # a number alone is no time
        "明日 25時 x",
        "明日 9時75分 x",
        "2026年2月30日 9:00 x",
        "2569-12-24 09:00 x",  # a Thai Buddhist-era year: too far ahead
        "2月29日 9:00 x",  # no 29 February in 2027
        "10分後",  # no text
        "かつて 9:00 x",
        "10分後 9:00 x",
        "in 10m 9:00 x",
        "อีก 10 วินาที x",
        "二三時 x",  # no number
        "十十時 x",
    ],
)
def test_anything_else_is_refused_with_the_forms(asked: str) -> None:
    with pytest.raises(BadWhen) as refused:
        plan(asked, "Asia/Tokyo", NOW)
    assert refused.value.template == USAGE


def test_a_past_day_in_any_language_is_refused_as_past() -> None:
    for asked in ("2026-12-01 10:00 x", "2026年12月1日 10時 x", "今日 9:00 x", "วันนี้ 09:00 x"):
        with pytest.raises(BadWhen) as refused:
            plan(asked, "Asia/Tokyo", NOW)
        assert refused.value.template == PASSED


def test_the_text_is_kept_as_written() -> None:
    assert plan("9時 十分に休む", "Asia/Tokyo", NOW).text == "十分に休む"  # 十分: enough
    assert plan("明日 九時十五分 tea", "Asia/Tokyo", NOW).next_at == at("2026-12-08 09:15")
    assert plan("明日 9:00 ＡＢＣを買う", "Asia/Tokyo", NOW).text == "ＡＢＣを買う"
    assert normalise("９:３０ ๑๒") == "9:30 12"


def test_daylight_saving_edges_are_unchanged_in_every_language() -> None:
    york = ZoneInfo("America/New_York")
    before = datetime(2026, 3, 7, 12, 0, tzinfo=york).timestamp()  # 8 March: 02:30 is skipped
    for asked in ("tomorrow 02:30 x", "明日 2:30 x", "明天 02:30 x", "พรุ่งนี้ 02:30 x"):
        planned = plan(asked, "America/New_York", before)
        assert datetime.fromtimestamp(planned.next_at, york).strftime("%H:%M") == "03:30"
    autumn = datetime(2026, 10, 31, 12, 0, tzinfo=york).timestamp()  # 1 November: 01:30 twice
    daily = plan("毎日 1:30 x", "America/New_York", autumn)
    assert daily.next_at == datetime(2026, 11, 1, 1, 30, tzinfo=york).timestamp()  # the first


@pytest.mark.parametrize("name", DRIVERS)
async def test_japanese_and_thai_reminders_through_the_app(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI, name: str
) -> None:
    async with running(
        name, make_settings, fake_llm, clock=lambda: NOW, default_timezone="Asia/Tokyo"
    ) as chat:
        await chat.say("/timezone Asia/Tokyo")
        await chat.say("/language ja")
        await chat.say("/remind 明日の午後3時に 水やり")
        assert chat.texts()[-1] == "⏰ 2026-12-08 15:00 Asia/Tokyo にお知らせします: 水やり"
        await chat.say("/remind 毎日 8:00 体操")
        assert chat.texts()[-1].startswith("⏰ 毎日お知らせします。最初は 2026-12-08 08:00")
        await chat.say("/remind 3時 おやつ")
        assert "24時間" in chat.texts()[-1]
        await chat.say("/remind いつか おやつ")
        assert "/remind 明日 9:00 水やり" in chat.texts()[-1]

        await chat.say("/timezone Asia/Bangkok", user=chat.other)
        await chat.say("/language th", user=chat.other)
        await chat.say("/remind อีก 10 นาที ดื่มน้ำ", user=chat.other)
        assert "2026-12-07 12:40 Asia/Bangkok" in chat.texts(chat.other)[-1]
        assert "ดื่มน้ำ" in chat.texts(chat.other)[-1]
        await chat.say("/remind พรุ่งนี้ 9 โมง ประชุม", user=chat.other)
        assert "2026-12-08 09:00 Asia/Bangkok" in chat.texts(chat.other)[-1]

        mine = await chat.parts.store.tasks_of(chat.name, chat.user, chat.user)
        assert [(t.text, t.repeat, t.next_at) for t in mine] == [
            ("体操", "daily", at("2026-12-08 08:00")),
            ("水やり", "once", at("2026-12-08 15:00")),
        ]
        bangkok = ZoneInfo("Asia/Bangkok")
        theirs = await chat.parts.store.tasks_of(chat.name, chat.other, chat.other)
        assert [(t.text, t.next_at) for t in theirs] == [
            ("ดื่มน้ำ", NOW + 600),
            ("ประชุม", at("2026-12-08 09:00", bangkok)),
        ]
