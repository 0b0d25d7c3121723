"""What an incoming message, button press or greeting means, for every channel alike.

In order: an edit is not answered again; an answer to a question the bot asked (a
rejection's reason, a comment after 👎), from the user it asked, in that chat, and in a
group only when said to the bot; then, in a group, only what is addressed to the bot (the
rest is kept for the next question where group context is on, `context`);
then /forget (anyone may delete their data, `privacy`); then the allowlist; then commands
(admin commands go to the review chat); then a voice note, photo or document, read into the
turn (or a notice, `attachments`; an album is answered once); then media without words (a
notice, `content`); the rest is a turn for the agent, unless a daily limit refuses it first
(`quota`). The turn is the one place where an answer is delivered and counted. A message
the inbox gave up on only gets a notice saying so.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence

from gateway.config import ConversationSettings
from gateway.conversation.attachments import Read, readable
from gateway.conversation.confirm import Confirmations, is_confirm_data
from gateway.conversation.content import album_key, words
from gateway.conversation.context import GroupContext
from gateway.conversation.feedback import (
    COMMENT_PURPOSE,
    PRIVATE,
    STALE,
    Feedback,
    parse_rating,
)
from gateway.conversation.language import pressed
from gateway.conversation.memory import (
    MEMORY_COMMAND,
    REMEMBER_COMMAND,
    MemoryCommands,
    remembered_text,
)
from gateway.conversation.models import Greeting, Message, Press, Profile
from gateway.conversation.persona import PERSONA_COMMAND, Personas
from gateway.conversation.pictures import IMAGE_LIMIT, IMAGE_NOT_SENT, Pictures
from gateway.conversation.ports import (
    Answers,
    ConversationPorts,
    Replies,
    Responder,
)
from gateway.conversation.privacy import FORGET_COMMAND, Privacy, is_forget_press
from gateway.conversation.questions import Questions
from gateway.conversation.quota import Quotas, Refusal
from gateway.conversation.reminders import late_text, task_chat
from gateway.conversation.repeats import RepeatPresses
from gateway.conversation.review import (
    ADMIN_COMMAND_NAMES,
    ADMIN_HELP,
    REASON_PURPOSE,
    ReviewChat,
    command_args,
)
from gateway.conversation.tasks import (
    REMIND_COMMAND,
    TASKS_COMMAND,
    TIMEZONE_COMMAND,
    TaskCommands,
    is_task_data,
)
from gateway.conversation.voice import (
    NOT_SPOKEN,
    SPOKEN_LIMIT,
    VOICE_COMMAND,
    Voices,
    over_flag,
)
from gateway.core.models import Button, ChatRef, IncomingMessage, Reply
from gateway.core.records import Awaiting, OpenedTurn
from gateway.core.scheduled import Occurrence
from gateway.core.tools import ToolAccess
from gateway.core.turn import Admission
from gateway.i18n import N_
from gateway.review.buttons import is_card_data
from gateway.review.repeats import is_repeat_data
from gateway.usage import utc_day

log = logging.getLogger(__name__)

COMMANDS = (
    ("start", N_("Say hello and see what I can do")),
    ("help", N_("How to talk to me and rate my answers")),
    ("new", N_("Start a new conversation")),
    ("language", N_("Choose the language I write in")),
    REMEMBER_COMMAND,
    MEMORY_COMMAND,
    PERSONA_COMMAND,
    VOICE_COMMAND,
    REMIND_COMMAND,
    TASKS_COMMAND,
    TIMEZONE_COMMAND,
    FORGET_COMMAND,
)
"""Commands everyone may use (with the description a command menu shows); admins also have
ADMIN_COMMANDS. A platform without /start (LINE greets on follow) leaves it to the model."""
KNOWN_COMMANDS = frozenset(name for name, _ in COMMANDS) | frozenset(ADMIN_COMMAND_NAMES)
VOICE_NOTES = frozenset({"voice"})
"""The media an answer is spoken back to under /voice auto."""
GAVE_UP = N_(
    "Sorry, something went wrong every time I tried to handle that message, so I have set it"
    " aside. Please send it again in another form, or ask me something else."
)
"""Said once when the inbox gives up on a message (its attempts failed or stopped the process)."""


def argument(text: str | None) -> str:
    """What follows the command word ("/language ja" gives "ja")."""
    parts = (text or "").split(maxsplit=1)
    return parts[1] if len(parts) > 1 else ""


class Conversation:
    """One channel's conversation policy over the shared agent, store and review."""

    def __init__(
        self,
        profile: Profile,
        ports: ConversationPorts,
        settings: ConversationSettings,
        *,
        secrets: Sequence[str] = (),
        default_timezone: str = "UTC",
        max_tasks: int = 0,
        min_repeat_minutes: int = 60,
        group_tasks: str = "everyone",
    ) -> None:
        """`secrets`: the gateway's configured secret values, refused in a chat's persona;
        `default_timezone`: a user's until they choose one with /timezone; `max_tasks`: the
        most tasks one user may hold (0: no limit); `min_repeat_minutes`: the shortest time
        between two runs of a repeating task; `group_tasks`: who may set one in a group
        (everyone, admins, off)."""
        self.profile = profile
        store, review, clock = ports.store, ports.review, ports.clock
        self.attachments = ports.attachments
        """Reads voice notes, photos and documents; None: they get the text-only notice."""
        self.languages = ports.languages
        """Which language each chat's fixed texts are in."""
        self.store = store
        self.turns = ports.turns
        self.counts = ports.counts
        self.questions = Questions(store, clock)
        """Open questions; their windows follow its clock (tests move it)."""
        self.feedback = Feedback(profile, store, self.questions, self.languages)
        self.review = ReviewChat(
            profile, store, review, ports.synthesis, self.questions, settings, clock=clock
        )
        self.repeats = RepeatPresses(profile, store, review)
        kept = self.attachments.keep_dir if self.attachments is not None else None
        links = ports.links or (ports.voicing.links if ports.voicing is not None else None)
        self.privacy = Privacy(profile, store, clock, media=kept, review=review, links=links)
        self.quotas = Quotas(settings, store, alerts=ports.alerts, clock=clock)
        self.memory = MemoryCommands(ports.memory, store, clock)
        """/remember and /memory; its `memory` is None when SKILLGATE_MEMORY is off."""
        self.context = GroupContext(settings, store, clock)
        """A group's unaddressed lines, kept for its next question (when turned on)."""
        self.personas = Personas(profile.audience, store, known=secrets, clock=clock)
        """/persona: the chat's own persona, set by its admins."""
        self.confirmations = Confirmations(
            profile, store, seconds=settings.tool_confirm_seconds, clock=clock
        )
        """The ✅/✖ cards of tools that need the asker's consent."""
        self.voices = Voices(profile, store, ports.voicing, settings, clock=clock)
        """/voice, and the answers spoken."""
        self.pictures = Pictures(profile, store, settings, links, clock=clock)
        """The daily limit on pictures made, and the pictures made ready to send."""
        self.tasks = TaskCommands(
            profile,
            store,
            default_timezone=default_timezone,
            max_tasks=max_tasks,
            min_repeat_minutes=min_repeat_minutes,
            group_tasks=group_tasks,
            push_quota=profile.push_quota,
            alerts=ports.alerts,
            clock=clock,
        )
        """/timezone, /remind, /tasks and their Cancel buttons."""

    @property
    def channel(self) -> str:
        return self.profile.channel

    # ---- in -------------------------------------------------------------------------------

    async def on_message(self, message: Message, out: Responder) -> None:
        """Handle one user message: an awaited answer, a command, a turn, or a notice."""
        chat, dialect = message.chat, self.profile.dialect
        if message.edited:
            log.info("%s: an edited message is not answered again", self.profile.who)
            return
        if chat.is_group and not message.addressed:
            # In a group, only what is said to the bot is answered (an answer to its
            # question too); the rest is kept as context only where that is turned on, and
            # only from users on the allowlist (an outsider's line must not steer a turn).
            if self.profile.audience.allowed(chat.user_id):
                await self.context.keep(message)
            return
        if message.given_up:
            # Every attempt at this update failed (one may have ended the process): say so once.
            out.texts = await self.languages.texts(chat, out)
            await out.notice(out.texts(GAVE_UP))
            return
        text = words(message)
        # One read for the chat's state; a message that can only be a turn opens it there too.
        admission = self.quotas.admission(chat, admin=self.review.is_admin(chat.user_id))
        incoming = (
            None if not self._plain_turn(message, text) else self._incoming(message, text or "")
        )
        state = await self.store.chat_state(
            chat.channel,
            chat.chat_id,
            chat.user_id,
            self.questions.clock(),  # the open question's window follows the questions' clock
            None if incoming is None else self.turns.start(incoming, admission),
        )
        out.texts = texts = await self.languages.texts(chat, out, state.language)
        if text is not None and await self._awaited(message, text, out, state.awaiting):
            return
        if message.command == FORGET_COMMAND[0]:
            await self.privacy.ask(chat, out)  # everyone may ask, on the allowlist or not
            return
        if not self.profile.audience.allowed(chat.user_id):
            await out.notice(texts(dialect.refusal, user_id=chat.user_id))
            return
        voice = state.language.voice
        if message.command is not None:
            await self._command(message, out, voice)
            return
        if self.attachments is not None and readable(message.media, message.attachment):
            await self._with_attachment(message, out, voice)
            return
        if text is None:
            if message.media is not None and dialect.text_only and await self._first(message):
                await out.notice(texts(dialect.text_only))
            return
        incoming = self._incoming(message, text, texts.language)
        await self.answer(incoming, out, turn=state.turn, admission=admission, voice=voice)

    def _plain_turn(self, message: Message, text: str | None) -> bool:
        """Whatever the user's open question: the message is a turn for the agent, unless it
        answers that question (the order of `on_message`)."""
        return (
            text is not None
            and message.command is None
            and self.profile.audience.allowed(message.chat.user_id)
            and not (self.attachments is not None and readable(message.media, message.attachment))
        )

    async def _with_attachment(
        self, message: Message, out: Responder, voice: str | None = None
    ) -> None:
        """Read the attachment into the turn, or say why not; an album is answered once.
        `voice`: the user's /voice choice (an answer to a voice note is spoken by default)."""
        assert self.attachments is not None and message.attachment is not None
        assert message.media is not None
        if await self._album_seen(message):
            log.info("%s: album %s was answered already", self.profile.who, message.album)
            return
        # Admitted before anything is downloaded or transcribed: over a daily limit, a
        # voice note costs the operator no speech-to-text.
        admission = await self._admit(message.chat, message.inbox_id, out)
        if isinstance(admission, Refusal):
            return
        async with out.working():  # a download and a transcription take a while
            who = f"{message.chat.channel}:{message.chat.user_id or message.chat.chat_id}"
            read = await self.attachments.read(
                message.media, message.attachment, message.text, user=who
            )
        if read.notice is not None:
            await out.notice(out.texts(read.notice, **read.notice_args))
        if read.notice is None or read.then_answer:
            incoming = self._incoming(message, read.text, out.texts.language, read)
            await self.answer(
                incoming,
                out,
                admission=admission,
                admitted=True,
                voice=voice,
                voice_note=message.media in VOICE_NOTES,
            )
        else:
            await self.quotas.give_back(admission)
        # Only now: a crash before this reads the item again rather than dropping the album.
        await self._album_done(message)

    async def on_unsend(self, chat: ChatRef, message_id: str) -> None:
        """The user took a message back: the model and synthesis never see it again."""
        if await self.store.unsend_message(self.channel, chat.chat_id, message_id):
            log.info("%s: a message in chat %s was unsent", self.profile.who, chat.chat_id)

    def unreadable(self, update_id: str, problem: str) -> None:
        """An update even the raw reading could not use: counted and logged, never its text."""
        log.warning("unreadable %s update %s (%s)", self.profile.who, update_id, problem)
        self.counts.unreadable(self.channel)

    async def _first(self, message: Message) -> bool:
        """Whether this is the first item of its album to be handled (or no album)."""
        if await self._album_seen(message):
            return False
        await self._album_done(message)
        return True

    async def _album_seen(self, message: Message) -> bool:
        """An item of an album another item of which was handled already."""
        return message.album is not None and (
            await self.store.get_meta(album_key(message)) == message.album
        )

    async def _album_done(self, message: Message) -> None:
        if message.album is not None:
            await self.store.set_meta(album_key(message), message.album)

    async def on_press(self, press: Press, out: Responder) -> None:
        """A button: a proposal card's, /language's, /forget's confirmation, a task's Cancel, or
        a rating (whose one store round trip reads the chat's languages too)."""
        rating = parse_rating(press.data)
        if rating is not None:
            await self.feedback.on_press(press, rating, out)
            return
        out.texts = await self.languages.texts(press.chat, out)
        language = pressed(press.data)
        if is_card_data(press.data):
            await self.review.on_press(press, out)
        elif is_repeat_data(press.data):
            await self.repeats.on_press(press, out)
        elif is_confirm_data(press.data):
            await self.confirmations.on_press(press, out)
        elif language is not None:
            await self._language_press(press, language, out)
        elif is_forget_press(press.data):
            await self.privacy.on_press(press, out)
        elif is_task_data(press.data):
            await self.tasks.on_press(press, out)
        else:
            log.info("ignoring %s button data %r", self.channel, press.data[:50])
            await out.acknowledge(out.texts(STALE), courtesy=True)

    async def _language_press(self, press: Press, language: str, out: Responder) -> None:
        """A /language button: the same as typing /language with that choice."""
        if not self.profile.audience.allowed(press.chat.user_id):
            await out.acknowledge(out.texts(PRIVATE), courtesy=True)
            return
        await out.acknowledge("", courtesy=True)  # the button stops spinning; the notice says it
        out.texts, text, _ = await self.languages.command(press.chat, language, out.texts, out)
        await out.notice(text)

    async def on_stale_press(self, chat: ChatRef, out: Responder) -> None:
        """A press on a message too old for the platform to say which: the button is gone."""
        out.texts = texts = await self.languages.texts(chat, out)
        await out.acknowledge(texts(STALE))

    async def on_greeting(self, greeting: Greeting, out: Responder) -> None:
        """The bot was added to a chat or followed again."""
        dialect = self.profile.dialect
        # Joining a group greets everyone there: the group's language, not one member's.
        chat = (
            greeting.chat.model_copy(update={"user_id": None})
            if greeting.kind == "join"
            else greeting.chat
        )
        out.texts = texts = await self.languages.texts(chat, out)
        if greeting.kind == "join":
            text = texts(dialect.group_greeting or "")
        elif not self.profile.audience.allowed(greeting.chat.user_id):
            text = texts(dialect.refusal, user_id=greeting.chat.user_id)
        else:
            chosen = dialect.welcome_back if greeting.kind == "refollow" else dialect.greeting
            text = texts(chosen or "", help=texts(dialect.help))
        if text:
            await out.notice(text)

    async def _awaited(
        self, message: Message, text: str, out: Responder, question: Awaiting | None
    ) -> bool:
        """Take the text as the answer to the user's open `question`, if it is one."""
        user = message.chat.user_id
        if user is None or message.command is not None:
            return False
        if message.chat.is_group and not message.addressed:
            return False  # in a group, only what is said to the bot answers its question
        if question is None:
            return False
        if question.prompt_message_id is not None and (
            question.prompt_message_id != message.replying_to
        ):
            return False  # only a reply to the prompt answers it
        if question.purpose == REASON_PURPOSE:
            return await self.review.take_reason(question, text, out)
        if question.purpose == COMMENT_PURPOSE:
            await self.feedback.take_comment(question, text, out, message_id=message.message_id)
            return True
        return False

    async def _command(self, message: Message, out: Responder, voice: str | None = None) -> None:
        chat, dialect, command = message.chat, self.profile.dialect, message.command
        assert command is not None
        texts = out.texts
        buttons: tuple[Button, ...] = ()
        if command in ADMIN_COMMAND_NAMES:
            await self.review.on_command(command, chat, out, command_args(message.text))
            return
        hint = texts(dialect.group_hint) if chat.is_group else ""
        if not chat.is_group and self.review.is_admin(chat.user_id):
            hint = texts(ADMIN_HELP)
        if command == "start" and dialect.start is not None:
            text = texts(dialect.start, name=message.user_name or "") + hint
        elif command == "help":
            text = texts(dialect.help) + hint
        elif command == "new":
            await self.store.finish_chat_session(self.channel, chat.chat_id, "new")
            text = texts(dialect.new)
        elif command in (REMEMBER_COMMAND[0], MEMORY_COMMAND[0]):
            run = self.memory.remember if command == REMEMBER_COMMAND[0] else self.memory.command
            # In a group the notice answers the sender's own message: it is about them.
            await out.notice(await run(chat, argument(message.text), texts), quote=chat.is_group)
            return
        elif command == VOICE_COMMAND[0]:
            text = await self.voices.command(chat, argument(message.text), texts, voice)
        elif command == PERSONA_COMMAND[0]:
            text = await self.personas.command(chat, argument(message.text), texts, out)
        elif command == TIMEZONE_COMMAND[0]:
            text = await self.tasks.timezone(chat, argument(message.text), texts)
        elif command == REMIND_COMMAND[0]:
            text = await self.tasks.remind(chat, argument(message.text), texts)
        elif command == TASKS_COMMAND[0]:
            text, buttons = await self.tasks.tasks(chat, texts)
        elif command == "language":
            said = await self.languages.command(chat, argument(message.text), texts, out)
            out.texts, text, buttons = said
        elif dialect.unknown is not None:
            text = texts(dialect.unknown, command=command)
        else:
            return
        await out.notice(text, buttons=buttons)

    # ---- the turn -------------------------------------------------------------------------

    async def _admit(
        self, chat: ChatRef, inbox_id: int | None, out: Replies
    ) -> Admission | Refusal | None:
        """The answer counted under the daily limits now, or the refusal (its notice said)."""
        admin = self.review.is_admin(chat.user_id)
        admitted = await self.quotas.admit_now(chat, inbox_id, admin=admin, texts=out.texts)
        if isinstance(admitted, Refusal):
            self.counts.over_limit(self.channel, admitted.scope)
            await out.notice(admitted.notice)
        return admitted

    async def answer(
        self,
        incoming: IncomingMessage,
        out: Answers,
        *,
        turn: OpenedTurn | None = None,
        admission: Admission | None = None,
        admitted: bool = False,
        voice: str | None = None,
        voice_note: bool = False,
        scheduled: bool = False,
    ) -> Reply:
        """Ask the agent (showing that it works), deliver once, count it.

        `turn` (with its `admission`) is the turn as opened with the chat's state; else it is
        opened here, admitted with it unless `admitted` (counted under `admission` before its
        attachment was read). Over a daily quota, the user gets the quota's notice instead and
        the model is not asked. The channel records where the answer went as it sends it.
        The answer is spoken too where the user's /voice choice (`voice`) wants it for this
        message (`voice_note`: it was one), `voices`.
        """
        started = time.monotonic()
        if turn is None:
            if not admitted:
                admin = self.review.is_admin(incoming.chat.user_id)
                admission = self.quotas.admission(incoming.chat, admin=admin)
            start = self.turns.start(incoming, None if admitted else admission)
            turn = await self.store.start_turn(start)
        if turn.over is not None:
            refusal = await self.quotas.refuse(turn.over, out.texts)
            self.counts.over_limit(self.channel, refusal.scope)
            await out.notice(refusal.notice)
            return Reply(text=refusal.notice, kind="notice")
        spend = self.quotas.spender(incoming, turn, admission)
        admin = self.review.is_admin(incoming.chat.user_id)
        drawing = self.pictures.drawing(incoming.chat, admin)
        access = ToolAccess(
            admin=admin,
            group=incoming.chat.is_group,
            confirm=self.confirmations.asker(incoming.chat, out),
            may_draw=drawing.may_draw,
            schedule=None if scheduled else self.tasks.scheduler(incoming.chat, out),
        )
        async with out.working() as preview:
            # Only a platform that shows drafts gets the answer as the model writes it.
            partial = preview if self.profile.capabilities.drafts else None
            reply = await self.turns.respond(incoming, partial, access, turn=turn, spend=spend)
            spoken = None
            if self.voices.wanted(reply, voice, voice_note):
                spoken = await self.voices.speak(
                    reply, incoming.chat, out.texts.language, admin=access.admin
                )
            pictured = await self.pictures.ready(reply, incoming.chat)
        before = list(reply.delivered_ids)
        ids = await out.deliver(reply)
        if ids == before:
            log.info("answer %s was delivered before; not sending again", reply.message_id)
            return reply
        reply.delivered_ids = ids
        self._count(reply, time.monotonic() - started)
        if spoken == "failed":  # the text went out; the user hears why there is no voice
            await out.notice(out.texts(NOT_SPOKEN))
        elif spoken == "over":  # told once a day
            day = utc_day(self.quotas.clock())
            if await self.store.quota_first(day, over_flag(incoming.chat)):
                await out.notice(out.texts(SPOKEN_LIMIT))
        if not pictured:
            await out.notice(out.texts(IMAGE_NOT_SENT))
        if drawing.refused:
            limit = self.pictures.quotas.user_images
            await out.notice(out.texts(IMAGE_LIMIT, limit=limit))
        for entry in reply.remembered:  # the model kept a note: the user sees what
            dropped, reply.memory_dropped = reply.memory_dropped, 0
            await out.notice(remembered_text(out.texts, entry, dropped), quote=True)
        return reply

    async def chat_gone(self, chat: ChatRef) -> None:
        """The bot was blocked in a 1:1 chat or removed from a group (the platform said so):
        the chat's tasks are paused, not tried for ever."""
        paused = await self.store.tasks_pause_chat(chat.channel, chat.chat_id)
        if paused:
            log.info("%s: %d task(s) paused: the chat is gone", self.profile.who, paused)

    async def scheduled(self, occurrence: Occurrence, out: Answers) -> None:
        """An agent task's due occurrence: its request answered in its chat as a message
        from its user would be (skills, memory, persona, tools under their policies, the
        user's daily limits), the answer with 👍/👎; marked first when it comes late."""
        task = occurrence.task
        chat = task_chat(task)
        out.texts = await self.languages.for_chat(chat)
        if not self.profile.audience.allowed(chat.user_id):
            raise PermissionError(f"the user of task {task.id} may no longer use this bot")
        if occurrence.timing == "late":
            await out.notice(late_text(occurrence, out.texts))
        incoming = IncomingMessage(
            chat=chat,
            text=task.text,
            language=out.texts.language,
            memory=self.memory.enabled and chat.user_id is not None,
            context_since=self.context.since(chat),
        )
        await self.answer(incoming, out, scheduled=True)

    def _count(self, reply: Reply, seconds: float) -> None:
        """Metrics for a delivered answer."""
        # The agent answers with an error placeholder exactly when the model failed (its
        # trace is then not completed), so the kind says it without reading the trace back.
        failed = reply.kind == "error"
        self.counts.answered(self.channel, reply.kind, seconds, model_failed=failed)

    def _incoming(
        self, message: Message, text: str, language: str = "en", read: Read | None = None
    ) -> IncomingMessage:
        """The turn for the agent: the words, what was read of an attachment, and whether the
        sender's memory may be used (the store checks a group's opt-in)."""
        return IncomingMessage(
            chat=message.chat,
            text=text,
            user_name=message.user_name,
            platform_message_id=message.message_id,
            inbox_id=message.inbox_id,
            language=language,
            images=read.images if read is not None else [],
            attachments=read.attachments if read is not None else [],
            memory=self.memory.enabled and message.chat.user_id is not None,
            context_since=self.context.since(message.chat),
        )
