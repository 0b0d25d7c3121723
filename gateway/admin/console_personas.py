"""The console's Personas page: every chat's own persona, set or cleared by an admin here."""

from __future__ import annotations

import logging
import time

from aiohttp import web

from gateway.admin.console import decider, page, refuse
from gateway.admin.console_usage import channel_names
from gateway.channels.registry import secrets
from gateway.core.persona import PERSONA_CHARS, refusal
from gateway.runtime.keys import SETTINGS, STORE

log = logging.getLogger(__name__)

MAX_CHAT_ID = 128
WHY = {
    "empty": "Write the persona, or clear it instead.",
    "too long": f"A persona holds at most {PERSONA_CHARS} characters.",
    "secret": "It looks like it holds a password or a key; personas reach the model on every"
    " answer in that chat.",
}


async def personas(request: web.Request, *, done: str | None = None) -> web.Response:
    """Every chat's persona, newest first, and the form to set or clear one."""
    rows = await request.config_dict[STORE].chat_personas()
    return await page(
        request,
        "personas.html",
        active="personas",
        channels=channel_names(),
        personas=rows,
        limit=PERSONA_CHARS,
        done=done,
    )


async def show(request: web.Request) -> web.Response:
    return await personas(request)


async def set_persona(request: web.Request) -> web.Response:
    """Set (or, with `clear`, remove) one chat's persona."""
    form = await request.post()
    channel, chat = form.get("channel"), form.get("chat")
    text = form.get("text")
    if (
        not isinstance(channel, str)
        or channel not in channel_names()
        or not isinstance(chat, str)
        or not chat.strip()
        or len(chat.strip()) > MAX_CHAT_ID
        or not chat.strip().isprintable()
    ):
        return await refuse(request, 400, "Not a chat", "Choose a channel and give a chat id.")
    chat = chat.strip()
    store, now, by = request.config_dict[STORE], time.time(), decider(request)
    if form.get("clear") == "yes":
        await store.set_chat_persona(channel, chat, None, by, now)
        log.info("console: %s cleared a %s chat's persona", by, channel)
        return await personas(request, done="cleared")
    value = text.strip() if isinstance(text, str) else ""
    why = refusal(value, secrets(request.config_dict[SETTINGS]))
    if why is not None:
        return await refuse(request, 400, "Persona refused", WHY[why])
    await store.set_chat_persona(channel, chat, value, by, now)
    log.info("console: %s set a %s chat's persona", by, channel)
    return await personas(request, done="set")


def add_routes(app: web.Application) -> None:
    app.router.add_get("/personas", show)
    app.router.add_post("/personas", set_persona)
