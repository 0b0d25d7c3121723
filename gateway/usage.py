"""Usage and cost: tokens per answer and per synthesis run, summed, priced and reported.

`LLM_PRICES` gives each model's price per million tokens, input then output:
`gpt-4o-mini=0.15/0.60,llama3=0/0`, with `*` for every model not named. Answers whose
server reported no token counts are counted apart (`unknown`), never as zero tokens.
One report feeds the console page, the admin API, the `/usage` chat command and
`skillgate usage`. Tool calls are counted per day and tool (the store's `tool_usage`);
a call that errs, times out or finds its server down is a failure. Media is priced apart
(`MediaPrices`: speech transcribed and spoken by the minute, pictures each) and its cost is
in the report's total.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any, Protocol

from gateway.core.models import ChatRef
from gateway.core.records import AnswerUsage, RunUsage
from gateway.core.tools import TOOL_FAILURES
from gateway.core.turn import QuotaSpend
from gateway.i18n import ENGLISH, N_, Np_, Texts

Prices = Mapping[str, tuple[float, float]]
ANY_MODEL = "*"
TOP = 10
"""Users and chats a report lists."""


def parse_prices(value: str) -> dict[str, tuple[float, float]]:
    """`model=in/out,...` as {model: (input, output)} per million tokens.

    ValueError names the entry that is not of that form.
    """
    prices: dict[str, tuple[float, float]] = {}
    for position, entry in enumerate((e.strip() for e in value.split(",")), start=1):
        if not entry:
            continue
        model, sep, pair = entry.rpartition("=")
        given, slash, taken = pair.partition("/")
        model = model.strip()
        try:
            price = (float(given), float(taken))
        except ValueError:
            price = (-1.0, -1.0)
        if not sep or not model or not slash or min(price) < 0 or price[0] != price[0]:
            raise ValueError(
                f"entry {position} is not model=input/output (prices per million tokens)"
            )
        if model in prices:
            raise ValueError(f"model {model} is priced twice")
        prices[model] = price
    return prices


@dataclass(frozen=True)
class MediaPrices:
    """What media costs besides tokens: STT_PRICE_PER_MINUTE, TTS_PRICE_PER_MINUTE, IMAGE_PRICE."""

    transcribed_per_minute: float = 0.0
    spoken_per_minute: float = 0.0
    per_image: float = 0.0


def price_of(prices: Prices, model: str | None) -> tuple[float, float] | None:
    """The model's price per million tokens (input, output), `*`'s, or None."""
    if model is not None and model in prices:
        return prices[model]
    return prices.get(ANY_MODEL)


def cost_of(prices: Prices, model: str | None, prompt: int, completion: int) -> float | None:
    """What these tokens cost, or None when the model has no price."""
    price = price_of(prices, model)
    if price is None:
        return None
    return (prompt * price[0] + completion * price[1]) / 1_000_000


def utc_day(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).date().isoformat()


def day_start(day: date) -> float:
    return datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp()


def next_reset(now: float) -> float:
    """The next UTC midnight: when the daily counts start again."""
    today = datetime.fromtimestamp(now, UTC).date()
    return day_start(today + timedelta(days=1))


@dataclass
class Totals:
    """Answers (or runs) and their tokens; `unknown` had no reported counts."""

    answers: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    unknown: int = 0
    cost: float = 0.0
    unpriced_tokens: int = 0
    """Tokens of models without a price: not in `cost`."""

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def add(
        self, model: str | None, prompt: int, completion: int, known: bool, prices: Prices
    ) -> None:
        self.answers += 1
        if not known:
            self.unknown += 1
        self.prompt_tokens += prompt
        self.completion_tokens += completion
        cost = cost_of(prices, model, prompt, completion)
        if cost is None:
            self.unpriced_tokens += prompt + completion
        else:
            self.cost += cost

    def as_json(self) -> dict[str, Any]:
        return {
            "answers": self.answers,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "tokens": self.tokens,
            "unknown_tokens_answers": self.unknown,
            "cost": round(self.cost, 6),
            "unpriced_tokens": self.unpriced_tokens,
        }


@dataclass
class ToolTotals:
    """Tool calls, and how many of them failed."""

    calls: int = 0
    failed: int = 0

    def add(self, status: str, calls: int) -> None:
        self.calls += calls
        if status in TOOL_FAILURES:
            self.failed += calls

    def as_json(self) -> dict[str, int]:
        return {"calls": self.calls, "failed": self.failed}


ToolDay = tuple[str, str, str, int]
"""(day, tool, status, calls): one row of the store's tool usage."""


@dataclass
class UsageReport:
    """Usage over whole UTC days, from `start` to `end` inclusive."""

    start: date
    end: date
    total: Totals = field(default_factory=Totals)
    synthesis: Totals = field(default_factory=Totals)
    days: dict[str, Totals] = field(default_factory=dict)
    synthesis_days: dict[str, Totals] = field(default_factory=dict)
    users: dict[str, Totals] = field(default_factory=dict)
    chats: dict[str, Totals] = field(default_factory=dict)
    channels: dict[str, Totals] = field(default_factory=dict)
    models: dict[str, Totals] = field(default_factory=dict)
    priced: bool = False
    speech_seconds: float = 0.0
    """Speech transcribed (speech-to-text is paid for by the second or minute)."""
    spoken_seconds: float = 0.0
    """Answers spoken (text-to-speech, paid for by the minute or character)."""
    images: int = 0
    """Pictures made (`generate_image`, paid for each)."""
    media_prices: MediaPrices = field(default_factory=MediaPrices)
    tool_calls: ToolTotals = field(default_factory=ToolTotals)
    tool_days: dict[str, ToolTotals] = field(default_factory=dict)
    tools: dict[str, ToolTotals] = field(default_factory=dict)

    def count_tools(self, rows: Iterable[ToolDay]) -> None:
        """Add the tool calls of the period's days (rows of other days are left out)."""
        first, last = self.start.isoformat(), self.end.isoformat()
        for day, tool, status, calls in rows:
            if first <= day <= last:
                for t in (
                    self.tool_calls,
                    self.tool_days.setdefault(day, ToolTotals()),
                    self.tools.setdefault(tool, ToolTotals()),
                ):
                    t.add(status, calls)

    def tool_list(self) -> list[tuple[str, ToolTotals]]:
        """Each tool called in the period, the most called first."""
        return sorted(self.tools.items(), key=lambda kv: (-kv[1].calls, kv[0]))

    @property
    def synthesis_share(self) -> float | None:
        """The share of all tokens that synthesis spent; None when nothing was spent."""
        spent = self.total.tokens + self.synthesis.tokens
        return self.synthesis.tokens / spent if spent else None

    @property
    def media_cost(self) -> float:
        """What the period's speech, spoken answers and pictures cost (MediaPrices)."""
        p = self.media_prices
        return (
            self.speech_seconds / 60 * p.transcribed_per_minute
            + self.spoken_seconds / 60 * p.spoken_per_minute
            + self.images * p.per_image
        )

    @property
    def cost(self) -> float:
        """The period's whole cost: answers', learning's and media's."""
        return self.total.cost + self.synthesis.cost + self.media_cost

    def top(self, which: Mapping[str, Totals], n: int = TOP) -> list[tuple[str, Totals]]:
        return sorted(which.items(), key=lambda kv: (-kv[1].tokens, -kv[1].answers, kv[0]))[:n]

    def day_list(self) -> list[tuple[str, Totals, Totals]]:
        """Every day of the period, oldest first: answers' and synthesis' totals."""
        out = []
        d = self.start
        while d <= self.end:
            key = d.isoformat()
            out.append((key, self.days.get(key, Totals()), self.synthesis_days.get(key, Totals())))
            d += timedelta(days=1)
        return out

    def learning_days(self) -> list[tuple[str, Totals]]:
        """The days learning spent tokens on (synthesis and its judge), newest first."""
        return sorted(
            ((d, t) for d, t in self.synthesis_days.items() if t.answers),
            reverse=True,
        )

    def as_json(self) -> dict[str, Any]:
        def table(which: Mapping[str, Totals], name: str, n: int | None = None) -> list[Any]:
            rows = self.top(which, n or len(which))
            return [{name: key, **t.as_json()} for key, t in rows]

        return {
            "from": self.start.isoformat(),
            "to": self.end.isoformat(),
            "priced": self.priced,
            "answers": self.total.as_json(),
            "synthesis": self.synthesis.as_json(),
            "synthesis_share": self.synthesis_share,
            "speech_seconds": round(self.speech_seconds, 1),
            "spoken_seconds": round(self.spoken_seconds, 1),
            "images": self.images,
            "media_cost": round(self.media_cost, 6),
            "cost": round(self.cost, 6),
            "tool_calls": self.tool_calls.as_json(),
            "days": [
                {
                    "day": d,
                    "answers": a.as_json(),
                    "synthesis": s.as_json(),
                    "tool_calls": self.tool_days.get(d, ToolTotals()).as_json(),
                }
                for d, a, s in self.day_list()
            ],
            "learning_days": [{"day": d, **t.as_json()} for d, t in self.learning_days()],
            "tools": [{"tool": k, **t.as_json()} for k, t in self.tool_list()],
            "channels": table(self.channels, "channel"),
            "models": table(self.models, "model"),
            "users": table(self.users, "user", TOP),
            "chats": table(self.chats, "chat", TOP),
        }


def build_report(
    answers: Iterable[AnswerUsage],
    runs: Iterable[RunUsage],
    prices: Prices,
    start: date,
    end: date,
) -> UsageReport:
    """Sum answers per day, user, chat, channel and model, and synthesis runs per day."""
    report = UsageReport(start, end, priced=bool(prices))
    for a in answers:
        sums = [
            report.total,
            report.days.setdefault(utc_day(a.at), Totals()),
            report.channels.setdefault(a.channel, Totals()),
            report.models.setdefault(a.model or "unknown", Totals()),
            report.chats.setdefault(f"{a.channel}:{a.chat_id}", Totals()),
        ]
        if a.user_id is not None:
            sums.append(report.users.setdefault(f"{a.channel}:{a.user_id}", Totals()))
        for t in sums:
            t.add(a.model, a.prompt_tokens, a.completion_tokens, a.tokens_known, prices)
    for r in runs:
        for t in (report.synthesis, report.synthesis_days.setdefault(utc_day(r.at), Totals())):
            t.add(r.model, r.prompt_tokens, r.completion_tokens, True, prices)
    return report


class UsageSource(Protocol):
    async def answer_usage(self, since: float, until: float) -> list[AnswerUsage]: ...

    async def run_usage(self, since: float, until: float) -> list[RunUsage]: ...

    async def speech_seconds(self, since: float, until: float) -> float: ...

    async def spoken_seconds(self, since: float, until: float) -> float: ...

    async def images_made(self, since: float, until: float) -> int: ...

    async def tool_usage(self, since_day: str) -> list[ToolDay]: ...


async def usage_report(
    store: UsageSource,
    prices: Prices,
    days: int,
    now: float | None = None,
    media: MediaPrices | None = None,
) -> UsageReport:
    """The last `days` UTC days, today included (media priced with `media`)."""
    at = time.time() if now is None else now
    end = datetime.fromtimestamp(at, UTC).date()
    start = end - timedelta(days=max(days, 1) - 1)
    since, until = day_start(start), day_start(end + timedelta(days=1))
    report = build_report(
        await store.answer_usage(since, until),
        await store.run_usage(since, until),
        prices,
        start,
        end,
    )
    report.speech_seconds = await store.speech_seconds(since, until)
    report.spoken_seconds = await store.spoken_seconds(since, until)
    report.images = await store.images_made(since, until)
    if media is not None:
        report.media_prices = media
    report.count_tools(await store.tool_usage(start.isoformat()))
    return report


def money(value: float) -> str:
    return f"{value:.4f}" if value < 1 else f"{value:,.2f}"


# The report's words, translated for the admin reading /usage (`skillgate usage` is English).
PERIOD = Np_(
    "Usage {start} to {end} (UTC, {n} day)",
    "Usage {start} to {end} (UTC, {n} days)",
)
ANSWERS = N_("Answers")
RUNS = N_("Synthesis runs")
TOTALS = N_("{label}: {count} · {tokens} tokens ({prompt} in, {completion} out)")
UNKNOWN = Np_(", {n} without token counts", ", {n} without token counts")
COST = N_(", cost {cost}")
SHARE = N_("Synthesis share of tokens: {share}")
TOTAL_COST = N_("Total cost: {cost}")
NO_PRICES = N_("No prices set (LLM_PRICES): costs are not shown.")
SPEECH = N_("Speech-to-text: {minutes} min transcribed")
SPOKEN = N_("Text-to-speech: {minutes} min spoken")
PICTURES = Np_("Pictures: {n} made", "Pictures: {n} made")
MEDIA_COST = N_("Speech and pictures cost: {cost}")
TOOL_CALLS = N_("Tool calls: {calls}, {failed} failed")
TOOLS = N_("Tool calls per day:")
LEARNING_DAYS = N_("Learning tokens per day (synthesis and judging, apart from chats):")
LEARNING_ROW = N_("  {day}: {tokens} tokens")
TOOL_ROW = Np_("  {key}: {n} call, {failed} failed", "  {key}: {n} calls, {failed} failed")
SECTIONS = (N_("Channels:"), N_("Models:"), N_("Top users:"), N_("Top chats:"))
ROW = Np_("  {key}: {n} answer, {tokens} tokens", "  {key}: {n} answers, {tokens} tokens")


def _line(label: str, t: Totals, priced: bool, texts: Texts) -> str:
    line = texts(
        TOTALS,
        label=label,
        count=t.answers,
        tokens=f"{t.tokens:,}",
        prompt=f"{t.prompt_tokens:,}",
        completion=f"{t.completion_tokens:,}",
    )
    if t.unknown:
        line += texts.plural(UNKNOWN, t.unknown)
    if priced:
        line += texts(COST, cost=money(t.cost))
    return line


def usage_text(report: UsageReport, top: int = 5, texts: Texts = ENGLISH) -> str:
    """The report as a short plain text (the /usage command, `skillgate usage`)."""
    days = (report.end - report.start).days + 1
    lines = [texts.plural(PERIOD, days, start=report.start, end=report.end)]
    lines.append(_line(texts(ANSWERS), report.total, report.priced, texts))
    lines.append(_line(texts(RUNS), report.synthesis, report.priced, texts))
    if report.speech_seconds:
        lines.append(texts(SPEECH, minutes=f"{report.speech_seconds / 60:,.1f}"))
    if report.spoken_seconds:
        lines.append(texts(SPOKEN, minutes=f"{report.spoken_seconds / 60:,.1f}"))
    if report.images:
        lines.append(texts.plural(PICTURES, report.images))
    if report.media_cost:
        lines.append(texts(MEDIA_COST, cost=money(report.media_cost)))
    if report.tool_calls.calls:
        lines.append(
            texts(TOOL_CALLS, calls=report.tool_calls.calls, failed=report.tool_calls.failed)
        )
    share = report.synthesis_share
    if share is not None:
        lines.append(texts(SHARE, share=f"{share:.0%}"))
    if report.priced:
        lines.append(texts(TOTAL_COST, cost=money(report.cost)))
    else:
        lines.append(texts(NO_PRICES))
    tables = (report.channels, report.models, report.users, report.chats)
    for title, which in zip(SECTIONS, tables, strict=True):
        rows = report.top(which, top)
        if rows:
            lines.append(texts(title))
            lines.extend(
                texts.plural(ROW, t.answers, key=key, tokens=f"{t.tokens:,}")
                + (texts(COST, cost=money(t.cost)) if report.priced else "")
                for key, t in rows
            )
    if learning := report.learning_days():
        lines.append(texts(LEARNING_DAYS))
        lines.extend(
            texts(LEARNING_ROW, day=day, tokens=f"{t.tokens:,}")
            + (texts(COST, cost=money(t.cost)) if report.priced else "")
            for day, t in learning[:top]
        )
    if report.tool_days:
        lines.append(texts(TOOLS))
        lines.extend(
            texts.plural(TOOL_ROW, t.calls, key=day, failed=t.failed)
            for day, t in sorted(report.tool_days.items(), reverse=True)[:top]
        )
    return "\n".join(lines)


def subjects(
    channel: str, chat_id: str, user_id: str | None, is_group: bool
) -> Sequence[tuple[str, str]]:
    """The quota counts one answer falls under: its user, its group chat, the gateway."""
    out: list[tuple[str, str]] = []
    if user_id is not None:
        out.append(("user", f"{channel}:{user_id}"))
    if is_group:
        out.append(("chat", f"{channel}:{chat_id}"))
    out.append(("gateway", ""))
    return out


def media_spend(chat: ChatRef, day: str, cost: float) -> QuotaSpend | None:
    """Media paid for beside an answer (spoken seconds, pictures) in the day's counts: its
    cost under every scope the answer falls under, no answer added; None when free."""
    if not cost:
        return None
    scopes = subjects(chat.channel, chat.chat_id, chat.user_id, chat.is_group)
    return QuotaSpend(day, tuple((scope, subject, 0) for scope, subject in scopes), 0, cost)
