"""`skillgate chat`: a terminal conversation through the agent core (channel `console`)."""

from __future__ import annotations

import asyncio
import sys

from gateway.app import close_parts, open_parts
from gateway.config import Settings
from gateway.core.models import ChatRef, IncomingMessage

HELP = "Commands: /new (fresh session), /good, /bad [what went wrong], /quit"


async def _read(prompt: str) -> str | None:
    try:
        return await asyncio.get_running_loop().run_in_executor(None, input, prompt)
    except EOFError:
        return None


async def run_chat(settings: Settings, *, user: str) -> int:
    """Read lines, answer them, until /quit or end of input."""
    parts = await open_parts(settings)
    chat = ChatRef(channel="console", chat_id=user, user_id=user)
    model = settings.llm_model or "no model configured"
    print(f"skillgate chat ({model}). {HELP}", file=sys.stderr)
    last_answer: int | None = None
    try:
        while (line := await _read("you> ")) is not None:
            text = line.strip()
            if not text:
                continue
            if text in ("/quit", "/exit"):
                break
            if text == "/new":
                await parts.store.finish_chat_session("console", user, "new")
                print("(new session)")
                continue
            if text.startswith(("/good", "/bad")):
                if last_answer is None:
                    print("(nothing to rate yet)")
                    continue
                good = text.startswith("/good")
                await parts.store.set_feedback(last_answer, user, 1 if good else -1)
                comment = text.removeprefix("/bad").strip() if not good else ""
                if comment:
                    await parts.store.set_feedback_comment(last_answer, user, comment)
                print("(thanks, rating stored)")
                continue
            reply = await parts.agent.respond(IncomingMessage(chat=chat, text=text))
            last_answer = reply.message_id if reply.kind == "normal" else None
            print(f"bot> {reply.text}")
    finally:
        await close_parts(parts)
    return 0
