"""The agent: one turn from a user's message to a stored, traced answer."""

from __future__ import annotations

import json
import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gateway.core.llm import LLM, Completion
from gateway.core.models import IncomingMessage, Reply, rating_buttons
from gateway.core.ports import ConversationStore, SkillProvider
from gateway.core.prompt import build_messages, load_skill_tool
from gateway.core.records import MessageRecord, Trace
from gateway.core.stream import PartialText
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
    ) -> None:
        self.store = store
        self.llm = llm
        self.skills = skills
        self.config = config
        self.clock = clock
        self.rng = rng or random.Random()
        self.vision = vision
        """Told when the model refuses images, so that `auto` stops sending them."""

    async def respond(self, incoming: IncomingMessage, partial: PartialText | None = None) -> Reply:
        """Answer one message; an update answered before a crash gets its stored answer back.

        `partial`, when given, receives the answer as the model writes it (each model call
        starts it afresh) and is closed once the model is done; only the final text is stored.
        """
        chat = incoming.chat
        # One store round trip: session, the user's message and history in one transaction.
        turn = await self.store.open_turn(
            chat.channel,
            chat.chat_id,
            chat.user_id,
            incoming.text,
            inbox_id=incoming.inbox_id,
            now=self.clock(),
            idle_seconds=self.config.session_idle_seconds,
            history_limit=self.config.history_messages,
            exclude_kinds=("error",),
            platform_message_id=incoming.platform_message_id,
            attachments=incoming.attachments,
            user_name=incoming.user_name,
        )
        if turn.answer is not None:
            return _reply(turn.answer)
        try:
            text, kind, trace = await self._think(
                incoming.text, turn.history, partial, incoming.images
            )
        finally:
            if partial is not None:
                partial.close()
        text = _in_language(text, kind, incoming.language)
        answer = await self.store.add_message(
            turn.session_id,
            "assistant",
            text,
            kind=kind,
            inbox_id=incoming.inbox_id,
            trace=trace,
            user_id=chat.user_id,
        )
        return _reply(answer)

    async def _think(
        self,
        query: str,
        history: list[MessageRecord],
        partial: PartialText | None = None,
        images: list[str] | None = None,
    ) -> tuple[str, Any, Trace]:
        """Run the model, with load_skill tool rounds; never raises for model failures."""
        started = time.monotonic()
        budget = self.config.skill_index_tokens
        offered, section = self.skills.offer(query, budget)
        withheld = self._hold_out(offered)
        if withheld:
            offered, section = self.skills.offer(query, budget, exclude=withheld)
        trace = Trace(skills_offered=offered, skills_withheld=withheld, model=self.llm.model)
        history_tokens = self.config.history_tokens
        shown = list(images or [])

        async def attempt(budget: int) -> tuple[str, Any, Trace]:
            messages = build_messages(self.config.persona, section, history, budget, shown)
            try:
                return await self._rounds(messages, offered, trace, started, partial)
            except VisionUnsupported as exc:
                if not shown:
                    raise
                shown.clear()
                await self._images_refused(history, trace, str(exc))
                if not query.strip():
                    trace.error = f"the model refuses images: {exc}"
                    return NO_VISION, "error", _finish(trace, started, completed=False)
                messages = build_messages(self.config.persona, section, history, budget)
                return await self._rounds(messages, offered, trace, started, partial)

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
            log.warning("model failed for its configuration: %s", exc)
            trace.error, trace.operator_error = str(exc), True
            return APOLOGY, "error", _finish(trace, started, completed=False)
        except ModelError as exc:
            log.warning("model failed: %s", exc)
            trace.error = str(exc)
            return APOLOGY, "error", _finish(trace, started, completed=False)

    async def _rounds(
        self,
        messages: list[dict[str, Any]],
        offered: list[str],
        trace: Trace,
        started: float,
        partial: PartialText | None,
    ) -> tuple[str, Any, Trace]:
        """Tool rounds, then one last call without tools if the model still wants one."""
        tools = [load_skill_tool(offered)] if offered else None
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
            for call in completion.tool_calls:
                trace.tools_used.append(call.name)
                messages.append(
                    {"role": "tool", "tool_call_id": call.id, "content": self._tool(call, trace)}
                )
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

    def _tool(self, call: Any, trace: Trace) -> str:
        """Run one tool call and return its result text for the model."""
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


def _reply(message: MessageRecord) -> Reply:
    buttons = rating_buttons(message.id) if message.kind == "normal" else []
    return Reply(
        text=message.text,
        kind=message.kind,
        message_id=message.id,
        buttons=buttons,
        delivered_ids=message.platform_message_ids,
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
