"""What a user would write instead: a plain python-telegram-bot webhook bot calling the model.

    python -m bench.ptb_bot --port P --llm URL --api URL --token T --secret S

python-telegram-bot's Application without an Updater, fed from an aiohttp webhook route
(the pattern of its custom-webhook examples), a MessageHandler that asks the model with
the official openai client and answers with `reply_text`, updates processed concurrently.
No store, no history, no buttons.
"""

from __future__ import annotations

import argparse
import asyncio
import hmac
from typing import Any

from aiohttp import web
from openai import AsyncOpenAI
from telegram import Update
from telegram.ext import Application, ContextTypes, MessageHandler, filters

from bench.procs import announce, until_told_to_stop

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


async def serve(args: argparse.Namespace) -> None:
    runner = web.AppRunner(make_app(args.llm, args.api, args.token, args.secret), access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", args.port).start()
    announce(url=f"http://127.0.0.1:{args.port}")
    await until_told_to_stop()
    await runner.cleanup()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name in ("llm", "api", "token", "secret"):
        parser.add_argument(f"--{name}", required=True)
    parser.add_argument("--port", type=int, required=True)
    asyncio.run(serve(parser.parse_args()))


if __name__ == "__main__":
    main()
