"""`skillgate chat`: a terminal conversation through the agent core (channel `console`)."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable

from gateway.config import Settings
from gateway.conversation.feedback import NOTHING_TO_RATE, rateable
from gateway.core.agent import Agent
from gateway.core.models import TERMINAL, ChatRef, IncomingMessage, Reply
from gateway.core.stream import PartialText
from gateway.runtime.assembly import close_parts, open_parts
from gateway.runtime.local_model import TRYING

HELP = "Commands: /new (fresh session), /good, /bad [what went wrong], /help, /quit; Ctrl-C leaves"


def input_reader() -> Callable[[str], Awaitable[str | None]]:
    """Lines typed at a terminal (prompt_toolkit: editing, history, Ctrl-C at once) or piped in.

    Neither reads in a thread, so nothing is left waiting for Enter when Ctrl-C ends the chat.
    """
    if sys.stdin.isatty() and sys.stdout.isatty():
        from prompt_toolkit import PromptSession

        session: PromptSession[str] = PromptSession()

        async def typed(prompt: str) -> str | None:
            try:
                return await session.prompt_async(prompt)
            except EOFError:  # Ctrl-D
                return None

        return typed

    async def piped(prompt: str) -> str | None:
        line = sys.stdin.readline()  # a pipe or a file: the lines are there, or the end is
        return line.rstrip("\n") if line else None

    return piped


class _Printer:
    """The answer on the terminal as the model writes it; the final text where it differs."""

    def __init__(self) -> None:
        self.shown = ""

    def show(self, text: str) -> None:
        if not text or text == self.shown:
            return
        if not self.shown:
            sys.stdout.write("bot> ")
        elif not text.startswith(self.shown):
            sys.stdout.write("\n(the model started again)\nbot> ")  # a retry or a tool round
            self.shown = ""
        sys.stdout.write(text[len(self.shown) :])
        sys.stdout.flush()
        self.shown = text

    def end(self, final: str) -> None:
        if self.shown and final.startswith(self.shown):
            print(final[len(self.shown) :])
        else:
            print(("\n" if self.shown else "") + f"bot> {final}")


async def _answer(agent: Agent, incoming: IncomingMessage) -> Reply:
    """Ask the agent, streaming its answer to the terminal as it comes."""
    partial, printer = PartialText(), _Printer()

    async def follow() -> None:
        while not partial.closed:
            await partial.changed()
            printer.show(partial.visible())

    following = asyncio.create_task(follow())
    try:
        reply = await agent.respond(incoming, partial)
    finally:
        following.cancel()
    printer.end(reply.text)
    return reply


async def run_chat(settings: Settings, *, user: str) -> int:
    """Read lines, answer them, until /quit or end of input."""
    parts = await open_parts(settings)
    chat = ChatRef(channel=TERMINAL, chat_id=user, user_id=user)
    model = settings.llm_model or "no model configured"
    if settings.llm_local_model is not None:
        model += f" on this machine: {TRYING}"
    print(f"skillgate chat ({model}). {HELP}", file=sys.stderr)
    last_answer: int | None = None
    read = input_reader()
    try:
        while (line := await read("you> ")) is not None:
            text = line.strip()
            if not text:
                continue
            if text in ("/quit", "/exit"):
                break
            if text in ("/help", "/start", "/?"):
                print(HELP)  # the terminal's commands, not a question for the model
                continue
            if text == "/new":
                await parts.store.finish_chat_session(TERMINAL, user, "new")
                print("(new session)")
                continue
            if text.startswith(("/good", "/bad")):
                if last_answer is None or not await rateable(parts.store, last_answer):
                    print(f"({NOTHING_TO_RATE})")
                    continue
                good = text.startswith("/good")
                await parts.store.set_feedback(last_answer, user, 1 if good else -1)
                comment = text.removeprefix("/bad").strip() if not good else ""
                if comment:
                    await parts.store.set_feedback_comment(last_answer, user, comment)
                print("(thanks, rating stored)")
                continue
            reply = await _answer(parts.agent, IncomingMessage(chat=chat, text=text))
            last_answer = reply.message_id if reply.kind == "normal" else None
    finally:
        await close_parts(parts)
    return 0
