"""What a user would write instead: a plain python-telegram-bot webhook bot calling the model.

    python -m bench.ptb_bot --port P --llm URL --api URL --token T --secret S

python-telegram-bot's Application without an Updater, fed from an aiohttp webhook route
(the pattern of its custom-webhook examples), a MessageHandler that asks the model with
the official openai client and answers with `reply_text`, updates processed concurrently.
No store, no history, no buttons.
"""

from __future__ import annotations

import hmac
from typing import Any

from aiohttp import web
from openai import AsyncOpenAI
from telegram import Update
from telegram.ext import Application, ContextTypes, MessageHandler, filters

from bench.procs import run_contender

PTB = web.AppKey("ptb", Application)


def make_app(llm_url: str, api: str, token: str, secret: str) -> web.Application:
    llm = AsyncOpenAI(base_url=llm_url, api_key="not-needed")

    async def on_text(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        assert update.message is not None and update.message.text is not None
        completion = await llm.chat.completions.create(
            model="fake-model",
            messages=[
                {"role": "system", "content": "You are a helpful assistant."},
                {"role": "user", "content": update.message.text},
            ],
        )
        await update.message.reply_text(completion.choices[0].message.content or "")

    async def ptb_ctx(app: web.Application) -> Any:
        ptb = (
            Application.builder()
            .token(token)
            .base_url(api)
            .updater(None)
            .concurrent_updates(True)
            .build()
        )
        ptb.add_handler(MessageHandler(filters.TEXT & ~filters.COMMAND, on_text))
        async with ptb:
            await ptb.start()
            app[PTB] = ptb
            yield
            await ptb.stop()
        await llm.close()

    async def webhook(request: web.Request) -> web.Response:
        got = request.headers.get("X-Telegram-Bot-Api-Secret-Token", "")
        if not hmac.compare_digest(got, secret):
            return web.Response(status=403)
        ptb = request.app[PTB]
        await ptb.update_queue.put(Update.de_json(await request.json(), ptb.bot))
        return web.Response(status=200)

    app = web.Application()
    app.cleanup_ctx.append(ptb_ctx)
    app.router.add_post("/webhook/telegram", webhook)
    return app


def main() -> None:
    run_contender(make_app, __doc__ or "")


if __name__ == "__main__":
    main()
