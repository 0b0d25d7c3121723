"""`when` of a task as a person writes it, in each language the bot speaks (en, ja, zh-TW, th).

One parser for `/remind` and the `schedule` tool, every platform alike. Most words come from
CLDR through Babel, per locale:

- the days relative to today (`tomorrow`, 明日, 明天, พรุ่งนี้; today and the day after too)
  and the weekdays (`Monday`, 月曜日, 星期一, 週一, วันจันทร์: the next one);
- the future durations (`in 10 minutes`, 10 分後, 10 分鐘後, ในอีก 10 นาที);
- the day periods with their hours (`PM`, 午後, 下午, หลังเที่ยง; 朝, 晚上, บ่าย, ...): an hour
  said with a period is the one of its two readings (h or h+12) that lies in the period's
  CLDR range, and is refused when neither or both do.

What CLDR does not have is the small table below (`_WORDS`): the repeat words (毎日, 每天,
ทุกวัน, ...), the hour and minute counters (時, 點, นาฬิกา, 分, 半, ...), a few particles
(の, に, เวลา), Chinese and Japanese numerals (九, 十, 兩) and the colloquial forms (อีก 10
นาที, あした, 月曜, 早上). Full-width and Thai digits are read as digits.

The parse is strict: a form not listed is refused (`Unclear`), and an hour that could be
morning or evening is refused rather than guessed (`Ambiguous`):

- a clock time with a colon (`9:00`, `15:30`) is the 24-hour clock;
- an hour with a counter and no period (9時, 9點, 9 โมง) is read as is when it is 0, 7 to 23,
  and refused when it is 1 to 6 (3時 is said for 15:00 as often as for 03:00);
- 12 with AM/PM (午前12時, 12 PM) is refused: English reads 12 AM as midnight, the Japanese
  convention reads 午前12時 as noon; 午後0時 is noon and 午前0時 midnight;
- `นาฬิกา` is the 24-hour clock (15 นาฬิกา is 15:00).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

from babel import Locale

LOCALES = ("en", "ja", "zh_Hant_TW", "th")
"""The CLDR locales whose words are understood: the languages the bot speaks."""

# What CLDR does not give, in one place. Keys are what a person writes (matched without case).
_WORDS: dict[str, dict[str, str]] = {
    # How a task repeats, written before its time.
    "repeat": {
        "daily": "daily",
        "every day": "daily",
        "毎日": "daily",
        "每天": "daily",
        "每日": "daily",
        "ทุกวัน": "daily",
        "weekdays": "weekdays",
        "every weekday": "weekdays",
        "平日": "weekdays",
        "毎平日": "weekdays",
        "工作日": "weekdays",
        "每個工作日": "weekdays",
        "วันธรรมดา": "weekdays",
        "ทุกวันธรรมดา": "weekdays",
        "weekly": "weekly",
        "every week": "weekly",
        "毎週": "weekly",
        "每週": "weekly",
        "每周": "weekly",
        "ทุกสัปดาห์": "weekly",
        "ทุกอาทิตย์": "weekly",
        "monthly": "monthly",
        "every month": "monthly",
        "毎月": "monthly",
        "每月": "monthly",
        "每個月": "monthly",
        "ทุกเดือน": "monthly",
    },
    # Durations CLDR does not list: English's short units and spoken forms.
    "duration": {
        "in {0}m": "minute",
        "in {0}min": "minute",
        "in {0}h": "hour",
        "in {0}d": "day",
        "อีก {0} นาที": "minute",
        "อีก {0} ชั่วโมง": "hour",
        "อีก {0} วัน": "day",
        "{0} 分钟后": "minute",
        "{0} 小时后": "hour",
        "{0} 天后": "day",
    },
    # Days relative to today that CLDR's locales spell otherwise (kana, simplified script).
    "day": {"あした": "1", "あす": "1", "きょう": "0", "あさって": "2", "后天": "2"},
    # Weekdays (0: Monday) as said beside CLDR's names: Japanese without its 日.
    "weekday": {
        "月曜": "0",
        "火曜": "1",
        "水曜": "2",
        "木曜": "3",
        "金曜": "4",
        "土曜": "5",
        "日曜": "6",
    },
    # Chinese and Japanese numerals up to 99 (九時, 十分後, 二十三點, 兩點半); 十 is ten.
    "numeral": {
        "\u3007": "0",  # ideographic zero
        "零": "0",
        "一": "1",
        "二": "2",
        "兩": "2",
        "两": "2",
        "三": "3",
        "四": "4",
        "五": "5",
        "六": "6",
        "七": "7",
        "八": "8",
        "九": "9",
    },
    # Hour counters: `hour` as said (1 to 6 refused without a period), `24h` always as is.
    "hour": {"時": "hour", "时": "hour", "點": "hour", "点": "hour", "โมง": "hour", "นาฬิกา": "24h"},
    # Minute counters; a half hour.
    "minute": {"分": "minute", "นาที": "minute", "半": "half", "ครึ่ง": "half"},
    # Parts of the day CLDR's Traditional Chinese lacks, with their minutes [from, before).
    "period_extra": {"早上": "300-720"},
    # Where a language says a day period: before the clock (午後3時), after it (3 PM).
    "period": {"en": "after", "ja": "before", "zh_Hant_TW": "before", "th": "before after"},
    # Said between the day and the time, or before the time.
    "before": {"at": "", "の": "", "的": "", "เวลา": "", "ตอน": "", "ตอนเวลา": ""},
    # Said after the time, before the text.
    "after": {"に": "", "น.": "", "、": "", ",": ""},
}


class Unclear(ValueError):
    """`when` is not one of the understood forms."""


class Ambiguous(ValueError):
    """An hour that could be morning or evening (its text in `args[0]`)."""


@dataclass(frozen=True)
class When:
    """What a `when` asks for: a first local time, or a delay; how it repeats; the rest."""

    repeat: str
    """once, daily, weekdays, weekly or monthly."""
    first: datetime | None
    """The first wall time in the user's timezone (None: `delay`)."""
    delay: float | None
    """Seconds from now (`in 10m`), for a task that does not repeat."""
    text: str
    """What follows `when`: the reminder's text."""


Ranges = tuple[tuple[int, int], ...]
"""Minutes of the day [from, before) a day period covers."""


@dataclass(frozen=True)
class _Vocabulary:
    repeat: dict[str, str]
    durations: tuple[tuple[re.Pattern[str], int], ...]
    days: dict[str, int]
    weekdays: dict[str, int]
    """Weekday names (0: Monday)."""
    periods: dict[str, tuple[Ranges, bool]]
    """Each period's minutes of the day, and whether it is AM or PM."""
    pattern: re.Pattern[str]


def _alternation(words: Iterable[str]) -> str:
    """Words as one regex alternation, longest first (ทุกวันธรรมดา before ทุกวัน)."""
    return "|".join(re.escape(w) for w in sorted(set(words), key=len, reverse=True))


def _future(pattern: str) -> re.Pattern[str]:
    """A CLDR future pattern ("{0} 分後", "in {0} minutes") as a regex; spaces optional
    where CJK leaves them out."""
    head, _, tail = pattern.partition("{0}")
    part = [re.escape(piece.strip()) for piece in (head, tail)]
    return re.compile(rf"{part[0]}\s*({_NUMBER})\s*{part[1]}", re.IGNORECASE)


_UNIT_SECONDS = {"minute": 60, "hour": 3600, "day": 86400}
_NUMERALS = rf"[{''.join(_WORDS['numeral'])}十]{{1,3}}"
_NUMBER = rf"\d{{1,4}}|{_NUMERALS}"
"""A count or an hour: digits, or Chinese and Japanese numerals."""


def number(said: str) -> int:
    """Digits or Chinese/Japanese numerals (二十三, 十五, 兩) as a number; Unclear if neither."""
    if said.isdigit():
        return int(said)
    digits = _WORDS["numeral"]
    tens, ten, ones = said.partition("十")
    if not ten:
        if len(said) != 1:  # 二三 is no number
            raise Unclear(said)
        return int(digits[said])
    if (
        len(tens) > 1
        or len(ones) > 1
        or (tens and tens not in digits)
        or (ones and ones not in digits)
    ):
        raise Unclear(said)
    return (int(digits[tens]) if tens else 1) * 10 + (int(digits[ones]) if ones else 0)


@functools.cache
def vocabulary() -> _Vocabulary:
    """The words of the four locales (CLDR) and the table, read once."""
    durations: dict[str, int] = {}
    days: dict[str, int] = {}
    weekdays: dict[str, int] = {}
    periods: dict[str, set[tuple[int, int]]] = {}
    am_pm: set[str] = set()
    before_clock: set[str] = set()
    after_clock: set[str] = set()
    for code in LOCALES:
        locale = Locale.parse(code)
        fields = locale._data["date_fields"]  # CLDR's date fields: Babel has no public getter
        for unit, seconds in _UNIT_SECONDS.items():
            for form in fields[unit]["future"].values():
                durations[form] = seconds
        for offset, word in fields["day"]["relative"].items():
            if offset in (0, 1, 2):
                days[word.lower()] = offset
        for context in ("format", "stand-alone"):
            for width in ("wide", "abbreviated"):
                for weekday, name in locale.days[context][width].items():
                    if len(name) > 1:  # 月 is also a month
                        weekdays[name.lower()] = weekday
        rules = locale.day_period_rules[None]
        for context in ("format", "stand-alone"):
            for width in ("abbreviated", "wide", "narrow"):
                names = locale.day_periods.get(context, {}).get(width, {})
                for period, name in names.items():
                    if width == "narrow" and len(name) <= 2 and name.isascii():
                        continue  # "a", "p", "mi": too short to trust
                    periods.setdefault(name.lower(), set()).update(_ranges(period, rules))
                    if period in ("am", "pm"):
                        am_pm.add(name.lower())
                    sides = _WORDS["period"][code]
                    if "before" in sides:
                        before_clock.add(name.lower())
                    if "after" in sides:
                        after_clock.add(name.lower())
    for name, span in _WORDS["period_extra"].items():
        start, end = span.split("-")
        periods.setdefault(name, set()).add((int(start), int(end)))
        before_clock.add(name)
    for form, unit in _WORDS["duration"].items():
        durations[form] = _UNIT_SECONDS[unit]
    for word, offset in _WORDS["day"].items():
        days[word] = int(offset)
    for word, weekday in _WORDS["weekday"].items():
        weekdays[word] = int(weekday)
    hour_words = _alternation(_WORDS["hour"])
    minute_words = _alternation(w for w, kind in _WORDS["minute"].items() if kind == "minute")
    half_words = _alternation(w for w, kind in _WORDS["minute"].items() if kind == "half")
    clock = (
        # 9時30分, 九時半, 9點半, 9 โมง; 9:00, 09.00 น. (Thai); 9 (with a period only)
        rf"(?:(?P<hw>{_NUMBER})\s*(?P<word>{hour_words})"
        # minutes in numerals follow at once: in "9時 十分に休む", 十分 is "enough"
        rf"(?:(?:\s*(?P<m2>\d{{1,2}})|(?P<m2k>{_NUMERALS}))\s*(?P<mword>{minute_words})"
        rf"|\s*(?P<half>{half_words}))?"
        rf"|(?P<h>\d{{1,2}})\s*(?P<sep>[:.])\s*(?P<m>\d{{2}})"
        rf"|(?P<bare>\d{{1,2}}))"
    )
    date_part = (
        r"(?P<iso>\d{4}[-/]\d{1,2}[-/]\d{1,2})"
        r"|(?:(?P<y>\d{4})\s*年\s*)?(?P<mo>\d{1,2})\s*月\s*(?P<d>\d{1,2})\s*[日号號]"
        rf"|(?P<day>{_alternation(days)})"
        rf"|(?P<weekday>{_alternation(weekdays)})"
    )
    before = _alternation(_WORDS["before"])
    after = _alternation(_WORDS["after"])
    pattern = re.compile(
        rf"(?:(?:{date_part})\s*(?:(?:{before})\s*)?)?"
        rf"(?:(?:{before})\s*)?"
        rf"(?:(?P<p1>{_alternation(before_clock)})\s*)?"
        rf"(?:{clock})?"
        rf"(?:\s*(?P<p2>{_alternation(after_clock)}))?"
        rf"(?:\s*(?:{after}))?"
        # not ended inside a word: "09:00 amazing" is 09:00 and "amazing"
        r"(?:(?<![A-Za-z0-9])|(?![A-Za-z0-9]))",
        re.IGNORECASE,
    )
    return _Vocabulary(
        repeat=_WORDS["repeat"],
        durations=tuple(
            (_future(form), seconds)
            for form, seconds in sorted(durations.items(), key=lambda f: -len(f[0]))
        ),
        days=days,
        weekdays=weekdays,
        periods={name: (tuple(sorted(spans)), name in am_pm) for name, spans in periods.items()},
        pattern=pattern,
    )


def _ranges(period: str, rules: dict[str, list[dict[str, int]]]) -> set[tuple[int, int]]:
    """Minutes of the day a CLDR period covers; AM and PM are before and after noon."""
    if period == "am":
        return {(0, 720)}
    if period == "pm":
        return {(720, 1440)}
    spans: set[tuple[int, int]] = set()
    for rule in rules.get(period, []):
        if "at" in rule:
            spans.add((rule["at"] // 60, rule["at"] // 60 + 1))
        elif rule["from"] < rule["before"]:
            spans.add((rule["from"] // 60, rule["before"] // 60))
        else:  # across midnight (夜中: 23:00 to 04:00)
            spans.update({(rule["from"] // 60, 1440), (0, rule["before"] // 60)})
    return spans


def normalise(text: str) -> str:
    """Full-width forms as ASCII (a full-width 9:00 is 9:00), every script's digits as 0-9; one
    character for one, so a place in it is the same place in `text`."""
    out = []
    for c in text:
        if c.isdecimal() and not c.isascii():
            out.append(str(unicodedata.decimal(c)))
            continue
        folded = unicodedata.normalize("NFKC", c)
        out.append(folded if len(folded) == 1 else c)
    return "".join(out)


def parse(argument: str, tz: ZoneInfo, now: float) -> When:
    """`argument` ("明日 9:00 水やり") read as its `when` and its text, in `tz` at `now`.

    Unclear: no understood form; Ambiguous: an hour that could be morning or evening.
    The text is returned as written (full-width letters kept)."""
    written = argument.strip()
    words = normalise(written)
    found = vocabulary()
    repeat, at = _repeat(words, found)
    local = datetime.fromtimestamp(now, tz)
    days_later: int | None = None
    for duration, seconds in found.durations:
        later = duration.match(words, at)
        if later is None or not _ends(words, later.end()):
            continue
        # "3天後 09:00": in three days at 09:00; "in 10m 09:00" is refused.
        then = _skip_spaces(words, later.end())
        timed = found.pattern.match(words, then)
        if timed is not None and timed.end() > then and _ends(words, timed.end()):
            if seconds != _UNIT_SECONDS["day"] or _day(timed, found, local.date()) is not None:
                raise Unclear(argument)
            days_later, at = number(later[1]), then
            break
        if repeat != "once":
            raise Unclear("a repeat needs a clock time")
        return When("once", None, number(later[1]) * seconds, written[later.end() :].strip())
    match = found.pattern.match(words, at)
    if match is None or match.end() == at or not _ends(words, match.end()):
        raise Unclear(argument)
    clock = _clock(match, found)
    if clock is None:
        raise Unclear(argument)
    hour, minute = clock
    day = _day(match, found, local.date())
    if days_later is not None:
        day = local.date() + timedelta(days=days_later)
    if day is None:
        first = datetime(local.year, local.month, local.day, hour, minute, tzinfo=tz)
        if first.timestamp() <= now:
            tomorrow = local.date() + timedelta(days=1)
            first = datetime(tomorrow.year, tomorrow.month, tomorrow.day, hour, minute, tzinfo=tz)
    else:
        first = datetime(day.year, day.month, day.day, hour, minute, tzinfo=tz)
        if match["weekday"] is not None and first.timestamp() <= now:  # today's has passed
            day += timedelta(days=7)
            first = datetime(day.year, day.month, day.day, hour, minute, tzinfo=tz)
    return When(repeat, first, None, written[match.end() :].strip())


def _repeat(words: str, found: _Vocabulary) -> tuple[str, int]:
    """The repeat `words` start with, and where the rest begins."""
    lowered = words.lower()
    for word in sorted(found.repeat, key=len, reverse=True):
        if lowered.startswith(word) and _ends(words, len(word)):
            rest = len(word)
            # 每週一: the repeat 每週 and the weekday 週一 share a character.
            named = [name for name in found.weekdays if lowered.startswith(name, rest - 1)]
            if named and not any(lowered.startswith(name, rest) for name in found.weekdays):
                rest -= 1
            return found.repeat[word], _skip_spaces(words, rest)
    return "once", 0


def _skip_spaces(words: str, at: int) -> int:
    while at < len(words) and words[at].isspace():
        at += 1
    return at


def _ends(words: str, at: int) -> bool:
    """Whether `when` may end at `at`: not inside a word of Latin letters or digits."""
    if at == 0:
        return False
    if at >= len(words):
        return True
    left, right = words[at - 1], words[at]
    return not (left.isascii() and left.isalnum() and right.isascii() and right.isalnum())


def _clock(match: re.Match[str], found: _Vocabulary) -> tuple[int, int] | None:
    """The hour and minute a match says, or None (no time in it)."""
    p1, p2 = match["p1"], match["p2"]
    if p1 and p2:
        raise Unclear("two day periods")
    period = found.periods.get((p1 or p2 or "").lower())
    said = match.group(0).strip()
    if match["h"] is None and match["hw"] is None and match["bare"] is None:
        # A period alone is a time only when CLDR gives it one instant (noon, midnight).
        if period is not None and len(period[0]) == 1 and period[0][0][1] - period[0][0][0] == 1:
            return divmod(period[0][0][0], 60)
        return None
    hour = number(match["h"] or match["hw"] or match["bare"])
    minute = 0
    if match["m"] is not None:
        if match["sep"] == "." and not said.endswith("น."):
            return None  # 9.30 alone could be a price; Thai writes 09.30 น.
        minute = int(match["m"])
    elif match["m2"] is not None or match["m2k"] is not None:
        minute = number(match["m2"] or match["m2k"])
    elif match["half"] is not None:
        minute = 30
    elif match["word"] is None and period is None:
        return None  # a number alone is no time
    if hour > 23 or minute > 59:
        return None
    if period is None:
        kind = _WORDS["hour"].get((match["word"] or "").lower(), "24h")
        if kind == "hour" and 1 <= hour <= 6:
            raise Ambiguous(said)
        return hour, minute
    spans, am_pm = period
    if hour == 12 and am_pm:
        raise Ambiguous(said)
    readings = {hour} if hour > 12 else {hour % 12, hour % 12 + 12}
    fits = {h for h in readings if any(lo <= h * 60 + minute < hi for lo, hi in spans)}
    if len(fits) != 1:
        raise Ambiguous(said)
    return fits.pop(), minute


def _day(match: re.Match[str], found: _Vocabulary, today: date) -> date | None:
    """The day a match names (None: the next time of the clock, today or tomorrow)."""
    if match["iso"] is not None:
        year, month, day = (int(p) for p in re.split(r"[-/]", match["iso"]))
        return _date(year, month, day, today)
    if match["mo"] is not None:
        month, day = int(match["mo"]), int(match["d"])
        if match["y"] is not None:
            return _date(int(match["y"]), month, day, today)
        this_year = _date(today.year, month, day, today)
        return this_year if this_year >= today else _date(today.year + 1, month, day, today)
    if match["day"] is not None:
        return today + timedelta(days=found.days[match["day"].lower()])
    if match["weekday"] is not None:  # the next one, today's included
        return today + timedelta(
            days=(found.weekdays[match["weekday"].lower()] - today.weekday()) % 7
        )
    return None


YEARS_AHEAD = 10
"""The furthest year a date may name, from this one: further is a mistake, such as a Thai
Buddhist-era year (2569 is 2026)."""


def _date(year: int, month: int, day: int, today: date) -> date:
    if year > today.year + YEARS_AHEAD:
        raise Unclear(f"the year {year} is too far ahead")
    try:
        return date(year, month, day)
    except ValueError as exc:
        raise Unclear(f"no such day {year}-{month}-{day}") from exc
