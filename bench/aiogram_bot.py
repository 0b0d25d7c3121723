"""The fastest plain bot found: an aiogram 3 webhook bot, the model over openai's aiohttp backend.

    python -m bench.aiogram_bot --port P --llm URL --api URL --token T --secret S

aiogram's own aiohttp webhook handler (`SimpleRequestHandler`, which checks the secret
and answers the webhook at once, handling the update in the background as its default),
a message handler that asks the model with the official openai client on its documented
aiohttp transport (`DefaultAioHttpClient`) and sends the answer with `message.answer`.
No store, no history, no buttons.
"""

from __future__ import annotations

from typing import Any

from aiogram import Bot, Dispatcher, F
from aiogram.client.session.aiohttp import AiohttpSession
from aiogram.client.telegram import TelegramAPIServer
from aiogram.types import Message
from aiogram.webhook.aiohttp_server import SimpleRequestHandler
from aiohttp import web
from openai import AsyncOpenAI, DefaultAioHttpClient

from bench.procs import run_contender


def make_app(llm_url: str, api: str, token: str, secret: str) -> web.Application:
    # The fake's base URL ends in `/bot`, the form python-telegram-bot takes.
    server = TelegramAPIServer(base=f"{api}{{token}}/{{method}}", file=f"{api}{{token}}/{{path}}")
    bot = Bot(token, session=AiohttpSession(api=server, limit=256))
    dispatcher = Dispatcher()
    llm = AsyncOpenAI(base_url=llm_url, api_key="not-needed", http_client=DefaultAioHttpClient())

    async def on_text(message: Message) -> None:
        completion = await llm.chat.completions.create(
            model="fake-model",
            messages=[
                {"role": "system", "content": "You are a helpful assistant."},
                {"role": "user", "content": message.text or ""},
            ],
        )
        await message.answer(completion.choices[0].message.content or "")

    dispatcher.message.register(on_text, F.text)  # what `@dispatcher.message(F.text)` does

    async def clients_ctx(app: web.Application) -> Any:
        yield
        await llm.close()
        await bot.session.close()

    app = web.Application()
    app.cleanup_ctx.append(clients_ctx)
    SimpleRequestHandler(dispatcher, bot, secret_token=secret).register(
        app, path="/webhook/telegram"
    )
    return app


def main() -> None:
    run_contender(make_app, __doc__ or "")


if __name__ == "__main__":
    main()
