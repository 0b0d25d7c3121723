"""Updates by long polling (TELEGRAM_POLLING): getUpdates into the same inbox as the webhook.

An update is confirmed to Telegram (the next `offset`) only once it is stored, so a crash
between the two gets it again, and the inbox's key makes the redelivery a no-op.
"""

from __future__ import annotations

import asyncio
import logging
import warnings
from typing import Any

from telegram import Bot
from telegram.error import TelegramError
from telegram.warnings import PTBUserWarning

from gateway.channels.api import ChannelError, Intake, cancel_and_wait
from gateway.channels.telegram.incoming import as_int
from gateway.channels.telegram.send import Sender
from gateway.channels.telegram.updates import ALLOWED_UPDATES, accept

log = logging.getLogger(__name__)


class Poller:
    """Long-polls getUpdates while started, storing each update before confirming it."""

    def __init__(self, sender: Sender, intake: Intake, timeout: float) -> None:
        self.sender = sender
        self.bot: Bot = sender.bot
        self.intake = intake
        self.timeout = timeout
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        try:
            await self.sender.call("deleteWebhook", self._drop_webhook)
        except ChannelError as exc:
            log.warning("%s; continuing without it", exc)
        self._task = asyncio.create_task(self._poll(), name="telegram:polling")

    async def stop(self) -> None:
        if self._task is not None:
            await cancel_and_wait(self._task)
            self._task = None

    async def _drop_webhook(self) -> None:
        """getUpdates is refused while a webhook is set; remove one only if there is one."""
        if (await self.bot.get_webhook_info()).url:
            await self.bot.delete_webhook()

    async def _poll(self) -> None:
        offset: int | None = None
        delay = 1.0
        while True:
            try:
                for update in await self._get_updates(offset):
                    await accept(self.intake, update)
                    offset = update["update_id"] + 1
                delay = 1.0
            except Exception as exc:  # the poller outlives any one failure
                reason = (
                    self.sender.translate("getUpdates", exc)
                    if isinstance(exc, TelegramError)
                    else exc
                )
                log.warning("polling Telegram failed (%s); retrying in %.0f s", reason, delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 30.0)

    async def _get_updates(self, offset: int | None) -> list[dict[str, Any]]:
        """getUpdates as raw JSON, so one update PTB cannot model does not stall polling.

        PTB's typed `get_updates` refuses the whole batch then, and would again on every try.
        """
        timeout = max(1, int(self.timeout))
        with warnings.catch_warnings():
            # PTB suggests its typed method, which is the one that cannot be used here.
            warnings.filterwarnings("ignore", "Please use 'Bot.getUpdates'", PTBUserWarning)
            result = await self.bot.do_api_request(
                "getUpdates",
                api_kwargs={
                    "offset": offset,
                    "timeout": timeout,
                    "allowed_updates": list(ALLOWED_UPDATES),
                },
                read_timeout=timeout + 10,
            )
        if not isinstance(result, list):
            raise ChannelError("getUpdates answered something that is not a list")
        return [u for u in result if isinstance(u, dict) and as_int(u.get("update_id")) is not None]
