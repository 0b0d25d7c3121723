"""The agent: one turn from a user's message to a stored, traced answer."""

from __future__ import annotations

import json
import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gateway.core.llm import LLM, Completion, ToolCall
from gateway.core.memory import Memory, Remembered, clean
from gateway.core.model_health import ModelHealth
from gateway.core.models import ChatRef, IncomingMessage, Picture, Reply, rating_buttons
from gateway.core.persona import persona_hash, persona_section
from gateway.core.ports import ConversationStore, SkillProvider
from gateway.core.prompt import (
    REMEMBER_TOOL,
    build_messages,
    group_context,
    load_skill_tool,
    memory_section,
)
from gateway.core.records import MessageRecord, OpenedTurn, Trace
from gateway.core.settings import ModelSettings
from gateway.core.stream import PartialText
from gateway.core.tools import ToolAccess, Toolbox, ToolSpec
from gateway.core.turn import Admission, Spender, TurnStart, Usage
from gateway.core.vision import NO_VISION, VisionPolicy
from gateway.errors import (
    ContextOverflow,
    ModelError,
    ModelMisconfigured,
    ModelNotConfigured,
    VisionUnsupported,
)
from gateway.i18n import N_, texts_for

log = logging.getLogger(__name__)

# The placeholders of a failed turn are message ids: `respond` says them in the user's language.
APOLOGY = N_("⚠️ Sorry, I couldn't answer that just now. Please try again in a moment.")
MODEL_DOWN = N_(
    "⚠️ Sorry, I can't answer now: the model behind this bot is failing, and its admins are"
    " being told. Waiting a moment won't help; please try again later."
)
NOT_CONFIGURED = N_("⚠️ I can't answer yet: no language model is configured on this gateway.")
TOO_LONG = N_(
    "⚠️ This conversation has grown too long for the model. Send /new to start a fresh one."
)
FILTERED = N_("⚠️ The model's provider withheld this answer (its content filter). Please rephrase.")
CUT_NOTE = N_("[…answer cut short at the length limit]")
CUT_MARK = "\n\n" + CUT_NOTE


@dataclass(frozen=True)
class AgentConfig:
    """The agent's knobs, from Settings."""

    persona: str
    session_idle_seconds: float
    skill_index_tokens: int = 800
    history_tokens: int = 3000
    history_messages: int = 60
    max_tool_rounds: int = 4
    skill_holdout: float = 0.0
    skill_holdout_start: float = 0.0
    """The holdout share of a skill whose comparison lags (at least `skill_holdout`)."""

    @classmethod
    def of(cls, model: ModelSettings, persona: str) -> AgentConfig:
        """The knobs the model's section of the settings sets, with the operator's persona."""
        return cls(
            persona=persona,
            session_idle_seconds=model.session_idle_seconds,
            skill_index_tokens=model.skill_index_tokens,
            history_tokens=model.history_tokens,
            skill_holdout=model.skill_holdout,
            skill_holdout_start=model.skill_holdout_start,
        )


@dataclass
class TurnContext:
    """What one turn knows of its chat and user beyond the history, and what it kept."""

    chat: ChatRef
    memory: list[str] | None = None
    """The user's memory entries; None where this turn has no memory (no `remember` tool)."""
    remembered: list[Remembered] = field(default_factory=list)
    context: str = ""
    """The group's unaddressed lines since the bot last answered there, fenced."""
    persona: str | None = None
    """The chat's own persona, after the operator's."""
    access: ToolAccess = field(default_factory=ToolAccess)
    """Who asks (an admin, in a group) and how to ask them to confirm a tool call."""
    tools_called: list[tuple[str, str]] = field(default_factory=list)
    """Each toolbox call as (the name the model called, how it ended): the day's usage
    counts them with the answer."""
    pictures: list[Picture] = field(default_factory=list)
    """Pictures the turn's calls made (`generate_image`), sent with a normal answer."""

    @property
    def sections(self) -> tuple[str, ...]:
        return (persona_section(self.persona), memory_section(self.memory))


class Agent:
    """Channel-neutral: finds the session, builds the prompt, calls the model, stores the answer."""

    def __init__(
        self,
        store: ConversationStore,
        llm: LLM,
        skills: SkillProvider,
        config: AgentConfig,
        *,
        clock: Callable[[], float] = time.time,
        rng: random.Random | None = None,
        vision: VisionPolicy | None = None,
        memory: Memory | None = None,
        tools: Toolbox | None = None,
        health: ModelHealth | None = None,
    ) -> None:
        self.store = store
        self.llm = llm
        self.skills = skills
        self.config = config
        self.clock = clock
        self.rng = rng or random.Random()
        self.vision = vision
        """Told when the model refuses images, so that `auto` stops sending them."""
        self.memory = memory
        """Per-user memory (the `remember` tool); None when SKILLGATE_MEMORY is off."""
        self.tools = tools
        """MCP servers and built-in tools beside load_skill (None: none configured)."""
        self.health = health
        """The recent chat calls' outcomes: a user is told when waiting will not help."""

    def start(self, incoming: IncomingMessage, admission: Admission | None = None) -> TurnStart:
        """How the store opens the turn of `incoming`: this agent's session and history rules."""
        chat = incoming.chat
        return TurnStart(
            chat.channel,
            chat.chat_id,
            chat.user_id,
            incoming.text,
            incoming.inbox_id,
            self.clock(),
            self.config.session_idle_seconds,
            self.config.history_messages,
            ("error",),
            incoming.platform_message_id,
            incoming.attachments,
            admission,
            memory=incoming.memory and self.memory is not None,
            in_group=chat.is_group,
            context_since=incoming.context_since,
            user_name=incoming.user_name,
        )

    async def respond(
        self,
        incoming: IncomingMessage,
        partial: PartialText | None = None,
        access: ToolAccess | None = None,
        *,
        turn: OpenedTurn | None = None,
        spend: Spender | None = None,
    ) -> Reply:
        """Answer one message; an update answered before a crash gets its stored answer back.

        `turn` is the turn as opened already (with the chat's state), else it is opened here.
        `partial`, when given, receives the answer as the model writes it (each model call
        starts it afresh) and is closed once the model is done; only the final text is stored,
        in one transaction with what `spend` makes of its tokens and model. `access` says who
        asks (admin, group) and how to ask them to confirm a tool call.
        """
        chat = incoming.chat
        if turn is None:
            turn = await self.store.start_turn(self.start(incoming))
        if turn.answer is not None:
            return _reply(turn.answer, resumed=True)
        context = TurnContext(
            chat,
            memory=turn.memory,
            context=group_context(turn.context),
            persona=turn.persona,
            access=access or ToolAccess(group=chat.is_group),
        )
        try:
            text, kind, trace = await self._think(
                incoming.text, turn.history, partial, incoming.images, context
            )
        finally:
            if partial is not None:
                partial.close()
        text = _in_language(text, kind, incoming.language)
        usage = Usage(kind, trace.prompt_tokens, trace.completion_tokens, trace.model)
        answer = await self.store.add_answer(
            turn.session_id,
            text,
            kind=kind,
            inbox_id=incoming.inbox_id,
            trace=trace,
            now=time.time(),
            user_id=chat.user_id,
            spent=spend(usage) if spend is not None else None,
            tools=context.tools_called,
        )
        reply = _reply(answer)
        if reply.kind == "normal":
            reply.pictures = list(context.pictures)
        if context.remembered:
            # The words of a turn that wrote memory never become synthesis evidence.
            asked = [m.id for m in turn.history if m.role == "user"][-1:]
            await self.store.withhold_messages([*asked, answer.id])
            reply.remembered = [r.entry.text for r in context.remembered if r.entry]
            reply.memory_dropped = sum(r.dropped for r in context.remembered)
        return reply

    async def _think(
        self,
        query: str,
        history: list[MessageRecord],
        partial: PartialText | None = None,
        images: list[str] | None = None,
        context: TurnContext | None = None,
    ) -> tuple[str, Any, Trace]:
        """Run the model, with tool rounds (load_skill, remember, the toolbox's); never raises
        for model or tool failures."""
        started = time.monotonic()
        ctx = context or TurnContext(ChatRef(channel="", chat_id=""))
        specs = self.tools.offer(ctx.access) if self.tools is not None else []
        budget = self.config.skill_index_tokens
        offered, section = self.skills.offer(query, budget)
        unavailable = self._without_tools(offered, {spec.name for spec in specs})
        withheld = self._hold_out([n for n in offered if n not in unavailable])
        if withheld or unavailable:
            exclude = [*withheld, *unavailable]
            offered, section = self.skills.offer(query, budget, exclude=exclude)
        trace = Trace(
            skills_offered=offered,
            skills_withheld=withheld,
            model=self.llm.model,
            persona_hash=persona_hash(self.config.persona, ctx.persona),
        )
        trace.skills_unavailable = list(unavailable)
        trace.notes.extend(
            f"skill {name} left out: {', '.join(why)} not available here"
            for name, why in unavailable.items()
        )
        history_tokens = self.config.history_tokens
        shown = list(images or [])
        persona, sections, lines = self.config.persona, ctx.sections, ctx.context

        async def attempt(budget: int) -> tuple[str, Any, Trace]:
            messages = build_messages(
                persona, section, history, budget, shown, sections=sections, context=lines
            )
            try:
                return await self._rounds(messages, offered, specs, trace, started, partial, ctx)
            except VisionUnsupported as exc:
                if not shown:
                    raise
                shown.clear()
                await self._images_refused(history, trace, str(exc))
                if not query.strip():
                    trace.error = f"the model refuses images: {exc}"
                    return NO_VISION, "error", _finish(trace, started, completed=False)
                messages = build_messages(
                    persona, section, history, budget, sections=sections, context=lines
                )
                return await self._rounds(messages, offered, specs, trace, started, partial, ctx)

        try:
            try:
                return await attempt(history_tokens)
            except ContextOverflow as exc:
                # Once with half the history; a second overflow is the user's to end (/new).
                log.warning("context overflow, retrying with half the history: %s", exc)
                trace.notes.append(f"context overflow, history halved: {exc}")
                return await attempt(history_tokens // 2)
        except ContextOverflow as exc:
            log.warning("context overflow: %s", exc)
            trace.error = str(exc)
            return TOO_LONG, "error", _finish(trace, started, completed=False)
        except ModelNotConfigured as exc:
            trace.error, trace.operator_error = str(exc), True
            return NOT_CONFIGURED, "error", _finish(trace, started, completed=False)
        except ModelMisconfigured as exc:
            # A refused key, an unknown model, nothing listening: the operator's to fix.
            log.warning("model failed for its configuration: %s", exc)
            trace.error, trace.operator_error = str(exc), True
            return MODEL_DOWN, "error", _finish(trace, started, completed=False)
        except ModelError as exc:
            log.warning("model failed: %s", exc)
            trace.error = str(exc)
            down = self.health is not None and self.health.failing() is not None
            return (
                MODEL_DOWN if down else APOLOGY,
                "error",
                _finish(trace, started, completed=False),
            )

    async def _rounds(
        self,
        messages: list[dict[str, Any]],
        offered: list[str],
        specs: list[ToolSpec],
        trace: Trace,
        started: float,
        partial: PartialText | None,
        ctx: TurnContext,
    ) -> tuple[str, Any, Trace]:
        """Tool rounds, then one last call without tools if the model still wants one."""
        functions = [load_skill_tool(offered)] if offered else []
        if ctx.memory is not None and self.memory is not None:
            functions.append(REMEMBER_TOOL)
        functions += [spec.as_function() for spec in specs]
        tools = functions or None
        rounds = self.config.max_tool_rounds
        for round_ in range(rounds + 1):
            completion = await self.llm.complete(
                messages, tools=tools if round_ < rounds else None, partial=partial
            )
            trace.prompt_tokens += completion.prompt_tokens
            trace.completion_tokens += completion.completion_tokens
            trace.tokens_known = trace.tokens_known and completion.usage_known
            trace.model = completion.model or trace.model
            trace.finish_reason = completion.finish_reason
            trace.notes.extend(n for n in completion.notes if n not in trace.notes)
            if not completion.tool_calls or round_ == rounds:
                return self._answer(completion, trace, started)
            messages.append(_assistant_tool_message(completion))
            round_start = len(ctx.tools_called)
            for call in completion.tool_calls:
                trace.tools_used.append(call.name)
                result = await self._tool(call, trace, ctx, round_start)
                messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
        raise AssertionError("unreachable: the last round has no tools")

    def _answer(
        self, completion: Completion, trace: Trace, started: float
    ) -> tuple[str, Any, Trace]:
        """The text to show, marked when cut short; a filtered answer is explained."""
        text = (completion.text or "").strip()
        if completion.finish_reason == "content_filter":
            trace.error = "the provider's content filter stopped the answer"
            return FILTERED, "error", _finish(trace, started, completed=False)
        if not text:
            why = f" (finish_reason {completion.finish_reason})" if completion.finish_reason else ""
            raise ModelError(f"model returned an empty answer{why}")
        if completion.finish_reason == "length":
            trace.notes.append("answer cut at the token limit (LLM_MAX_TOKENS)")
            text = f"{text}{CUT_MARK}"
        return text, "normal", _finish(trace, started)

    async def _images_refused(
        self, history: list[MessageRecord], trace: Trace, reason: str
    ) -> None:
        """The model refused this turn's images: remember it, and record the caption alone."""
        trace.notes.append(f"images not sent: the model refuses them ({reason})")
        if self.vision is not None:
            await self.vision.refused(reason)
        newest = history[-1] if history else None
        if newest is None or newest.role != "user":
            return
        note = "the model refuses images"
        for attachment in newest.attachments:
            if attachment.kind == "image":  # the retry names it as not shown
                attachment.sent_as, attachment.note = "caption", note
        await self.store.set_attachments_sent(newest.id, "image", "caption", note)

    def _without_tools(self, offered: list[str], available: set[str]) -> dict[str, list[str]]:
        """Offered skills naming a tool this turn does not have, with the tools missing."""
        missing = {}
        for name in offered:
            lacking = [t for t in self.skills.tools_of(name) if t not in available]
            if lacking:
                missing[name] = lacking
        return missing

    def _hold_out(self, offered: list[str]) -> list[str]:
        """Skills under evaluation that this turn goes without, each with its holdout chance.

        A skill whose comparison lags (loaded on nearly every answer, so only the holdout
        ever answers without it) is withheld at the higher start share until it catches up.
        """
        rate = self.config.skill_holdout
        if rate <= 0 or not offered:
            return []
        evaluating, lagging = self.skills.evaluating, self.skills.short_of_comparison
        eager = max(rate, self.config.skill_holdout_start)
        return [
            name
            for name in offered
            if name in evaluating and self.rng.random() < (eager if name in lagging else rate)
        ]

    async def _tool(
        self, call: ToolCall, trace: Trace, ctx: TurnContext, round_start: int = 0
    ) -> str:
        """Run one tool call and return its result text for the model; a toolbox call past
        the turn's or the round's number of calls is refused (and the model told so)."""
        if call.name == "remember":
            return await self._remember(str(call.args().get("text", "")), ctx)
        if call.name != "load_skill" and self.tools is not None:
            made = len(ctx.tools_called)
            # Even a tool this turn did not offer goes to the toolbox: its policy refuses it.
            outcome = self.tools.over_limit(
                call.name, made, made - round_start
            ) or await self.tools.call(call.name, call.args(), ctx.access)
            trace.tool_calls.append(outcome.record)
            ctx.tools_called.append((call.name, outcome.record.status))
            ctx.pictures.extend(outcome.pictures)
            return outcome.text
        if call.name != "load_skill":
            return f"error: unknown tool {call.name!r}"
        name = str(call.args().get("name", ""))
        # A withheld skill does not exist for this turn, or the comparison would be muddied.
        body = None if name in trace.skills_withheld else self.skills.load(name)
        if body is None:
            return f"error: no enabled skill named {name!r}"
        if name not in trace.skills_loaded:
            trace.skills_loaded.append(name)
        return body

    async def _remember(self, text: str, ctx: TurnContext) -> str:
        """The `remember` tool: kept under the same rules as /remember, and shown to the user."""
        user = ctx.chat.user_id
        if ctx.memory is None or self.memory is None or user is None:
            return "error: memory is not available in this chat"
        if any(r.entry is not None and r.entry.text == clean(text) for r in ctx.remembered):
            return "kept"  # a retried attempt of the same turn (history halved) asks again
        done = await self.memory.remember(ctx.chat.channel, user, text)
        if done.entry is None:
            return f"error: not kept ({done.refused})"
        ctx.remembered.append(done)
        ctx.memory.append(done.entry.text)
        return "kept; the person is shown the note"


def _finish(trace: Trace, started: float, *, completed: bool = True) -> Trace:
    trace.completed = completed
    trace.latency_ms = int((time.monotonic() - started) * 1000)
    return trace


def _assistant_tool_message(completion: Completion) -> dict[str, Any]:
    """The model's tool-calling turn, as sent back within the same turn's next round."""
    message: dict[str, Any] = {
        "role": "assistant",
        # "" rather than null: some servers (llama-cpp-python) refuse a null content.
        "content": completion.text or "",
        "tool_calls": [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": c.arguments or json.dumps({})},
            }
            for c in completion.tool_calls
        ],
    }
    if completion.reasoning:
        # Thinking-mode servers (DeepSeek, vLLM) want it back within the tool round.
        message["reasoning_content"] = completion.reasoning
    return message


def _reply(message: MessageRecord, *, resumed: bool = False) -> Reply:
    buttons = rating_buttons(message.id) if message.kind == "normal" else []
    return Reply(
        text=message.text,
        kind=message.kind,
        message_id=message.id,
        buttons=buttons,
        delivered_ids=message.platform_message_ids,
        resumed=resumed,
    )


def _in_language(text: str, kind: str, language: str) -> str:
    """The gateway's own words in a turn (a failure's placeholder, the cut mark) translated."""
    if language == "en":
        return text
    texts = texts_for(language)
    if kind == "error":
        return texts(text)
    if text.endswith(CUT_MARK):
        return text[: -len(CUT_MARK)] + "\n\n" + texts(CUT_NOTE)
    return text
