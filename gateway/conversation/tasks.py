"""/timezone, /remind and /tasks: a user's reminders made, listed and cancelled in chat.

Decided here once for every platform. `/remind <when> <what>` understands these forms of
`when` (times are the user's wall clock in their /timezone, the default
SKILLGATE_DEFAULT_TIMEZONE):

- `in 10m`, `in 2h`, `in 3d`: that long from now;
- `at 09:00` (or `09:00`): the next 09:00, today or tomorrow;
- `tomorrow 09:00`;
- `2026-12-24 18:00`;
- `daily`, `weekdays`, `weekly` or `monthly` before one of the three forms with a clock
  time: repeated from there (weekly: on that day of the week; monthly: on that day of the
  month, and a month without that day is skipped);
- the same in Japanese, Chinese and Thai (明日 9:00, 10分後, 毎日 8:00, 午後3時, 明天 上午9點,
  พรุ่งนี้ 9:00, อีก 10 นาที, ...): `gateway.core.task_when` reads them all, strictly.

The model's `schedule` tool (`gateway.tools.schedule`) makes tasks through `from_tool`
with the same forms; the user is shown each task made with its next time and a Cancel
button.

The answer names the next time in the user's timezone. `/tasks` lists the user's active
tasks in this chat, each with a Cancel button whose data, "tk:<task id>:<signature>", is
signed with the channel's key; a press cancels the task only when the presser created it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import hmac
import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from gateway.conversation.models import Press, Profile
from gateway.conversation.ports import Alerts, Replies, TaskCommandStore
from gateway.core import task_when
from gateway.core.models import Button, ChatRef
from gateway.core.push_quota import (
    CachedQuota,
    PushQuotaReader,
    Shortfall,
    month_last_day,
    month_of,
    pushes_this_month,
    shortfall,
)
from gateway.core.scheduled import NewTask, ScheduledTask
from gateway.core.task_times import BadSchedule, cron_for, next_due, too_often, zone
from gateway.core.tools import Schedule
from gateway.i18n import N_, Texts

log = logging.getLogger(__name__)

TIMEZONE_COMMAND = ("timezone", N_("Show or set your timezone for reminders"))
REMIND_COMMAND = ("remind", N_("Set a reminder, for example: /remind in 10m tea"))
TASKS_COMMAND = ("tasks", N_("List your reminders, with a button to cancel each"))

ACTION = "tk"
_DATA = re.compile(ACTION + r":(\d{1,18}):([\w-]{1,32})", re.ASCII)
SHOWN_TASKS = 10
"""The most tasks /tasks shows with a button (LINE shows at most 13 buttons)."""

TIMEZONE_IS = N_(
    "Your timezone is {timezone}. To change it, send /timezone with a name such as Asia/Tokyo."
)
TIMEZONE_SET = N_("Your timezone is now {timezone}.")
TIMEZONE_BAD = N_(
    "I don't know the timezone {timezone}. Use a name such as Asia/Tokyo or Europe/Paris."
)
USAGE = N_(
    "Tell me when and what, for example:\n"
    "/remind in 10m tea\n"
    "/remind at 09:00 call the bank\n"
    "/remind tomorrow 09:00 stand-up\n"
    "/remind 2026-12-24 18:00 dinner\n"
    "/remind daily 08:00 stretch (also weekdays, weekly or monthly)"
)
PASSED = N_("That time has already passed.")
AMBIGUOUS = N_(
    "“{said}” could mean two different hours. Write the time on the 24-hour clock (15:00;"
    " 12:00 is noon, 00:00 midnight), or say AM or PM with an hour from 1 to 11."
)
SET_ONCE = N_("⏰ I'll remind you at {time}: {text}")
SET_REPEAT = N_("⏰ I'll remind you {repeat}, first at {time}: {text}")
REPEATS = {
    "daily": N_("every day"),
    "weekdays": N_("every weekday"),
    "weekly": N_("every week"),
    "monthly": N_("every month"),
}
AGENT_ONCE = N_("🗓 I'll answer this at {time}: {text}")
AGENT_REPEAT = N_("🗓 I'll answer this {repeat}, first at {time}: {text}")
CANCEL = N_("✖ Cancel")
ASK_TIMEZONE = N_(
    "Times are in {timezone}. If you live in another timezone, send /timezone with its name,"
    " for example /timezone Asia/Tokyo."
)
GROUP_ADMINS = N_("In groups, only the bot's admins may set reminders and tasks.")
GROUP_OFF = N_("Reminders and tasks are not set in groups here.")
TOO_MANY = N_(
    "You already have {count} reminders and tasks, the most one person may have here."
    " Cancel one with /tasks first."
)
TOO_OFTEN = N_(
    "This would repeat too often: here a reminder or task repeats at most once every"
    " {minutes} minutes."
)
TOOL_CHARS = 2000
"""The longest text or request the `schedule` tool sets."""
_ISO = re.compile(r"(\d{4}-\d{2}-\d{2})[T ](\d{1,2}:\d{2})(?::\d{2}(?:\.\d+)?)?")
PUSHES_RUN_OUT = N_(
    "This can't be scheduled: the bot's messages for this month would run out. {left} are"
    " left, the tasks already set need {needed} and this one would need {more}. Cancel a"
    " task with /tasks, or set it for next month."
)
PUSH_QUOTA_NEAR = N_(
    "⚠️ {platform} has used {used} of its {limit} push messages this month ({percent}%)."
    " When none are left, reminders and scheduled answers are not delivered until the month"
    " ends, and new tasks that would not fit are refused."
)
NONE = N_("You have no reminders here. Set one with /remind.")
LISTED = N_("Your reminders (press one to cancel it):")
MORE = N_("…and {count} more.")
CANCELLED = N_("Cancelled: {text}")
GONE = N_("This reminder is not yours, or it was already cancelled.")
INVALID = N_("This button is not valid.")
NOT_ALLOWED = N_("Sorry, you can't use this.")


@dataclass(frozen=True)
class Plan:
    """When a /remind fires first, how it repeats, and what it says."""

    next_at: float
    repeat: str
    cron: str | None
    text: str


class BadWhen(ValueError):
    """A /remind that cannot be used; `template` (with `values`) says why."""

    def __init__(self, template: str, **values: str) -> None:
        super().__init__(template)
        self.template = template
        self.values = values


def plan(
    argument: str, timezone: str, now: float, text: str | None = None, repeat: str = "once"
) -> Plan:
    """The reminder `argument` ("in 10m tea", "明日 9:00 水やり") asks for, in `timezone`;
    BadWhen if none (the forms: `gateway.core.task_when`). With `text`, `argument` is the
    time alone (the `schedule` tool's `when`) and `text` what is said; `repeat` is the
    tool's, which a repeat said in `when` may restate but not contradict."""
    try:
        asked = task_when.parse(argument, zone(timezone), now)
    except task_when.Ambiguous as exc:
        raise BadWhen(AMBIGUOUS, said=str(exc)[:40]) from exc
    except task_when.Unclear as exc:
        raise BadWhen(USAGE) from exc
    if repeat != "once":
        if asked.repeat not in ("once", repeat) or asked.delay is not None:
            raise BadWhen(USAGE)
        asked = dataclasses.replace(asked, repeat=repeat)
    if text is None:
        text = asked.text
    elif asked.text:
        raise BadWhen(USAGE)  # more than a time in `when`
    if not text:
        raise BadWhen(USAGE)
    if asked.delay is not None:
        return Plan(now + asked.delay, "once", None, text)
    assert asked.first is not None
    first = asked.first
    if first.timestamp() <= now:
        raise BadWhen(PASSED)
    cron = cron_for(asked.repeat, first)
    if cron is None:
        return Plan(first.timestamp(), "once", None, text)
    # The first due time the repeat has from the asked time on (weekdays: not a Saturday).
    due = next_due(cron, timezone, first.timestamp() - 1)
    assert due is not None  # a daily, weekday or weekly rule always has a next time
    return Plan(due, asked.repeat, cron, text)


def shown(at: float, timezone: str) -> str:
    """A due time as the user reads it: "2026-12-24 18:00 Asia/Tokyo"."""
    return f"{datetime.fromtimestamp(at, zone(timezone)):%Y-%m-%d %H:%M} {timezone}"


def is_task_data(data: str | None) -> bool:
    return data is not None and data.startswith(f"{ACTION}:")


class TaskCommands:
    """One channel's /timezone, /remind, /tasks and the Cancel presses."""

    def __init__(
        self,
        profile: Profile,
        store: TaskCommandStore,
        *,
        default_timezone: str,
        max_tasks: int = 0,
        min_repeat_minutes: int = 60,
        group_tasks: str = "everyone",
        push_quota: PushQuotaReader | None = None,
        alerts: Alerts | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.profile = profile
        self.store = store
        self.quota = None if push_quota is None else CachedQuota(push_quota, clock=clock)
        """The platform's monthly push quota (LINE's), read at most once a minute; None:
        the platform has none."""
        self.alerts = alerts
        self.default_timezone = default_timezone
        self.max_tasks = max_tasks
        """The most active or paused tasks a user may hold here (0: no limit)."""
        self.min_repeat_minutes = min_repeat_minutes
        """The shortest time between two runs of a repeating task."""
        self.group_tasks = group_tasks
        """Who may set a task in a group: everyone, admins or off."""
        self.clock = clock

    def group_refusal(self, chat: ChatRef) -> str | None:
        """Why this user may not set a task in this chat (a group's rule), or None."""
        if not chat.is_group or self.group_tasks == "everyone":
            return None
        if self.group_tasks == "admins" and self.profile.audience.is_admin(chat.user_id):
            return None
        return GROUP_ADMINS if self.group_tasks == "admins" else GROUP_OFF

    async def zone_known(self, chat: ChatRef) -> tuple[str, bool]:
        """The user's timezone, and whether they chose it (else it is the default)."""
        if chat.user_id is None:
            return self.default_timezone, True
        chosen = await self.store.user_timezone(chat.channel, chat.user_id)
        return chosen or self.default_timezone, chosen is not None

    async def pushes_short(self, task: NewTask, now: float) -> Shortfall | None:
        """Whether the month's push quota cannot cover `task` beside the channel's active
        tasks. A quota that cannot be read (logged) or has no limit never refuses."""
        if self.quota is None or pushes_this_month(task, now) == 0:
            return None
        short = await shortfall(
            task,
            await self.quota.get(),
            functools.partial(self.store.tasks_due_before, task.channel),
            now,
        )
        if short is not None:
            log.info(
                "%s: a task refused: %d pushes left this month, %d needed by active tasks, %d more",
                self.profile.who,
                short.left,
                short.needed,
                short.more,
            )
        return short

    async def pushed(self) -> None:
        """A task's delivery pushed in this channel: past `NEAR_END` of the month's quota,
        the admins are told, once a month."""
        if self.quota is None:
            return
        self.quota.spent()
        quota = await self.quota.get()
        if quota is not None and quota.near_end:  # the estimate says so: LINE's word now
            quota = await self.quota.get(fresh=True)
        if quota is None or quota.limit is None or not quota.near_end:
            return
        now = self.clock()
        month = month_of(now)
        if not await self.store.quota_first(month_last_day(now), f"push-quota:{self.channel}"):
            return
        log.warning(
            "%s: %d of the month's %d pushes are used", self.profile.who, quota.used, quota.limit
        )
        if self.alerts is None:
            return
        try:
            await self.alerts(
                PUSH_QUOTA_NEAR,
                f"push-quota:{self.channel}:{month}",
                platform=self.profile.who,
                used=quota.used,
                limit=quota.limit,
                percent=round(100 * quota.used / quota.limit) if quota.limit else 100,
            )
        except Exception:
            log.exception("telling the admins about the push quota failed")

    @property
    def channel(self) -> str:
        return self.profile.channel

    async def too_often(self, cron: str, now: float) -> str | None:
        """Why `cron` repeats sooner than allowed (None: it does not). Off the event loop, as
        `plan` is: a year of a rule's times, and CLDR's words read on a process's first task,
        take milliseconds to a quarter of a second."""
        return await asyncio.to_thread(too_often, cron, now, self.min_repeat_minutes)

    async def _make(self, task: NewTask, known: bool, now: float) -> ScheduledTask | None:
        """Store `task` within the user's limit (None: they hold the most already). A user
        whose timezone was not known keeps the default as theirs: they are asked once."""
        assert task.user_id is not None
        if self.max_tasks:
            made = await self.store.task_add_held(task, self.max_tasks, now=now)
        else:
            made = await self.store.task_add(task, now=now)
        if made is not None and not known:
            await self.store.set_user_timezone(task.channel, task.user_id, task.timezone, now=now)
        return made

    async def timezone_of(self, chat: ChatRef) -> str:
        """The user's chosen timezone, else the default."""
        if chat.user_id is None:
            return self.default_timezone
        chosen = await self.store.user_timezone(chat.channel, chat.user_id)
        return chosen or self.default_timezone

    async def timezone(self, chat: ChatRef, argument: str, texts: Texts) -> str:
        """/timezone shows the user's timezone; /timezone NAME sets it."""
        name = argument.strip()
        if not name or chat.user_id is None:
            return texts(TIMEZONE_IS, timezone=await self.timezone_of(chat))
        try:
            zone(name)
        except BadSchedule:
            return texts(TIMEZONE_BAD, timezone=name[:64])
        await self.store.set_user_timezone(chat.channel, chat.user_id, name, now=self.clock())
        return texts(TIMEZONE_SET, timezone=name)

    async def remind(self, chat: ChatRef, argument: str, texts: Texts) -> str:
        """/remind WHEN WHAT: the task stored, said with its next time."""
        if chat.user_id is None:
            return texts(USAGE)
        if (refused := self.group_refusal(chat)) is not None:
            return texts(refused)
        timezone, known = await self.zone_known(chat)
        now = self.clock()
        try:
            asked = await asyncio.to_thread(plan, argument, timezone, now)
        except BadWhen as bad:
            return texts(bad.template, **bad.values)
        if asked.cron is not None and await self.too_often(asked.cron, now):
            return texts(TOO_OFTEN, minutes=self.min_repeat_minutes)
        new = NewTask(
            channel=chat.channel,
            chat_id=chat.chat_id,
            user_id=chat.user_id,
            kind="reminder",
            text=asked.text,
            repeat=asked.repeat,
            cron=asked.cron,
            timezone=timezone,
            next_at=asked.next_at,
        )
        if (short := await self.pushes_short(new, now)) is not None:
            return texts(PUSHES_RUN_OUT, left=short.left, needed=short.needed, more=short.more)
        task = await self._make(new, known, now)
        if task is None:
            return texts(TOO_MANY, count=self.max_tasks)
        log.info("%s: task %d set in chat by its user", self.profile.who, task.id)
        when = shown(asked.next_at, timezone)
        if asked.repeat == "once":
            said = texts(SET_ONCE, time=when, text=asked.text)
        else:
            repeat = texts(REPEATS[asked.repeat])
            said = texts(SET_REPEAT, repeat=repeat, time=when, text=asked.text)
        return said if known else f"{said}\n\n{texts(ASK_TIMEZONE, timezone=timezone)}"

    def scheduler(self, chat: ChatRef, out: Replies) -> Schedule:
        """The `schedule` tool's calls of a turn in `chat`, told in it through `out`."""
        return functools.partial(self.from_tool, chat, out)

    async def from_tool(
        self, chat: ChatRef, out: Replies, arguments: dict[str, Any]
    ) -> tuple[str, bool]:
        """A `schedule` call: the task made and shown to the user with a Cancel button.

        Returns what the model is told and whether the call was refused (a time not
        understood or past, a text missing or too long)."""
        if chat.user_id is None:
            return "a task is scheduled only for a person who wrote", True
        if self.group_refusal(chat) is not None:
            why = "only the bot's admins" if self.group_tasks == "admins" else "nobody"
            return f"in a group, {why} may set tasks here (SKILLGATE_GROUP_TASKS)", True
        what = str(arguments.get("what") or "").strip()
        when = str(arguments.get("when") or "").strip()
        repeat = str(arguments.get("repeat") or "once").strip().lower()
        kind = str(arguments.get("kind") or "reminder").strip().lower()
        if kind not in ("reminder", "agent"):
            return "kind is 'reminder' or 'agent'", True
        if repeat != "once" and repeat not in REPEATS:
            return f"repeat is one of once, {', '.join(REPEATS)}", True
        if not what or len(what) > TOOL_CHARS:
            return f"`what` must be 1 to {TOOL_CHARS} characters", True
        timezone, known = await self.zone_known(chat)
        now = self.clock()
        asked = _ISO.sub(r"\1 \2", when)
        try:
            first = await asyncio.to_thread(plan, asked, timezone, now, what, repeat)
        except BadWhen as bad:
            local = f"{datetime.fromtimestamp(now, zone(timezone)):%Y-%m-%d %H:%M}"
            if bad.template == PASSED:
                why = "that time has already passed"
            elif bad.template == AMBIGUOUS:
                why = (
                    f"the hour {bad.values['said']!r} could be morning or evening; ask the"
                    " person, then give it on the 24-hour clock ('HH:MM')"
                )
            else:
                why = (
                    "`when` is not understood (use 'YYYY-MM-DD HH:MM', 'tomorrow HH:MM', 'HH:MM'"
                    " or 'in 10m', 'in 2h', 'in 3d', or the person's own words in Japanese,"
                    " Chinese or Thai such as '明日 9:00', '明天 下午3點', 'พรุ่งนี้ 9:00';"
                    " a repeat needs a clock time)"
                )
            return f"{why}; it is now {local} in the person's timezone {timezone}", True
        often = None if first.cron is None else await self.too_often(first.cron, now)
        if often is not None:
            return f"{often}; offer a longer repeat", True
        new = NewTask(
            channel=chat.channel,
            chat_id=chat.chat_id,
            user_id=chat.user_id,
            kind="agent" if kind == "agent" else "reminder",
            text=what,
            repeat=first.repeat,
            cron=first.cron,
            timezone=timezone,
            next_at=first.next_at,
        )
        if (short := await self.pushes_short(new, now)) is not None:
            left, needed, more = short.left, short.needed, short.more
            await out.notice(out.texts(PUSHES_RUN_OUT, left=left, needed=needed, more=more))
            return (
                f"the channel's monthly push quota would run out ({left} left, {needed} needed"
                f" by the tasks already set, {more} by this one); the person was told. Offer"
                " a one-time task or fewer repeats this month"
            ), True
        task = await self._make(new, known, now)
        if task is None:
            why = f"the person holds {self.max_tasks} tasks already, the most one may hold"
            return f"{why} (SKILLGATE_USER_MAX_TASKS): they can cancel one with /tasks", True
        log.info("%s: task %d (%s) set by the model for its user", self.profile.who, task.id, kind)
        texts = out.texts
        when_shown = shown(first.next_at, timezone)
        if first.repeat == "once":
            template = AGENT_ONCE if kind == "agent" else SET_ONCE
            said = texts(template, time=when_shown, text=what)
        else:
            template = AGENT_REPEAT if kind == "agent" else SET_REPEAT
            said = texts(template, repeat=texts(REPEATS[first.repeat]), time=when_shown, text=what)
        if not known:
            said = f"{said}\n\n{texts(ASK_TIMEZONE, timezone=timezone)}"
        await out.notice(said, buttons=(self._button(texts(CANCEL), task.id),))
        return (
            f"task {task.id} scheduled ({kind}, {first.repeat}), first at {when_shown}; the"
            " person was shown it with a button to cancel it"
        ), False

    async def tasks(self, chat: ChatRef, texts: Texts) -> tuple[str, tuple[Button, ...]]:
        """/tasks: the user's active tasks in this chat, each with a Cancel button."""
        if chat.user_id is None:
            return texts(NONE), ()
        found = await self.store.tasks_of(chat.channel, chat.chat_id, chat.user_id)
        if not found:
            return texts(NONE), ()
        lines = [texts(LISTED)]
        buttons: list[Button] = []
        for number, task in enumerate(found[:SHOWN_TASKS], 1):
            when = shown(task.next_at, task.timezone) if task.next_at is not None else "-"
            repeat = f" ({texts(REPEATS[task.repeat])})" if task.repeat in REPEATS else ""
            mark = ("🗓 " if task.kind == "agent" else "") + (
                "⏸ " if task.status == "paused" else ""
            )
            lines.append(f"{number}. {when}{repeat}: {mark}{task.text}")
            buttons.append(self._button(f"✖ {number}", task.id))
        if len(found) > SHOWN_TASKS:
            lines.append(texts(MORE, count=len(found) - SHOWN_TASKS))
        return "\n".join(lines), tuple(buttons)

    def _button(self, label: str, task_id: int) -> Button:
        signature = self.profile.signer.sign(f"{ACTION}:{task_id}")
        return Button(label=label, action=ACTION, value=f"{task_id}:{signature}")

    def verify(self, data: str | None) -> int | None:
        """The task id of a Cancel button this channel signed."""
        match = _DATA.fullmatch(data or "")
        if match is None:
            return None
        raw_id, signature = match.groups()
        if not hmac.compare_digest(signature, self.profile.signer.sign(f"{ACTION}:{raw_id}")):
            return None
        return int(raw_id)

    async def on_press(self, press: Press, out: Replies) -> None:
        """A Cancel press: the presser's own active task is cancelled, nothing else."""
        task_id = self.verify(press.data)
        if task_id is None:
            log.warning("%s: a task cancel press with bad data", self.profile.who)
            await out.acknowledge(out.texts(INVALID))
            return
        user = press.chat.user_id
        if user is None or not self.profile.audience.allowed(user):
            await out.acknowledge(out.texts(NOT_ALLOWED), courtesy=True)
            return
        text = await self.store.task_cancel_own(task_id, press.chat.channel, user)
        if text is None:
            await out.acknowledge(out.texts(GONE))
            return
        await out.acknowledge("", courtesy=True)  # the button stops spinning; the notice says it
        await out.notice(out.texts(CANCELLED, text=text))
