"""The limit: a bare aiohttp webhook handler making the same HTTP round trips as a bot.

    python -m bench.bare_bot --port P --llm URL --api URL --token T --secret S

On each update: check the secret, ask the model (one chat-completions POST), send the
answer (one sendMessage POST), then answer the webhook. No store, no framework, no
formatting: nothing a real bot could leave out costs less.
"""

from __future__ import annotations

import hmac
from typing import Any

import aiohttp
from aiohttp import web

from bench.procs import run_contender

SESSION = web.AppKey("session", aiohttp.ClientSession)


def make_app(llm: str, api: str, token: str, secret: str) -> web.Application:
    app = web.Application()

    async def session_ctx(app: web.Application) -> Any:
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=256)) as session:
            app[SESSION] = session
            yield

    async def webhook(request: web.Request) -> web.Response:
        got = request.headers.get("X-Telegram-Bot-Api-Secret-Token", "")
        if not hmac.compare_digest(got, secret):
            return web.Response(status=401)
        message = (await request.json())["message"]
        session = request.app[SESSION]
        body = {"model": "fake-model", "messages": [{"role": "user", "content": message["text"]}]}
        async with session.post(f"{llm}/chat/completions", json=body) as resp:
            answer = (await resp.json())["choices"][0]["message"]["content"]
        form = {"chat_id": str(message["chat"]["id"]), "text": answer}
        async with session.post(f"{api}{token}/sendMessage", data=form) as resp:
            await resp.read()
        return web.Response(status=200)

    app.cleanup_ctx.append(session_ctx)
    app.router.add_post("/webhook/telegram", webhook)
    return app


def main() -> None:
    run_contender(make_app, __doc__ or "")


if __name__ == "__main__":
    main()
