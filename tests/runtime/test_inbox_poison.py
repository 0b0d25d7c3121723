"""An update whose work kills the process: counted all the same, given up with a notice."""

from __future__ import annotations

from collections.abc import Callable

from gateway.config import Settings
from gateway.conversation.dispatch import GAVE_UP
from gateway.store import SqliteStore
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.telegram_api import FakeTelegramAPI, make_text_update
from tests.telegram_harness import telegram_gateway


async def test_an_update_that_kills_the_process_is_given_up_after_the_retries_with_a_notice(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    fake_llm.pause()  # the work never ends: each life of the process is cut off in it
    async with FakeTelegramAPI() as fake:
        attempts = []
        for life in range(1, 6):
            async with telegram_gateway(make_settings, fake_llm, fake=fake) as gw:
                if life == 1:
                    assert (await gw.post(make_text_update(1, "poison"))).status == 200
                await fake_llm.wait_for_requests(life, timeout=30)
                async with SqliteStore(gw.channel.settings.db_path) as store:
                    (item,) = await store.inbox_pending()
                attempts.append(item.attempts)
                # Killed: the work is cut off where it is, and nothing after it runs.
                await gw.parts.worker.stop(timeout=0)
        # Each attempt was on disk while its work was still running.
        assert attempts == [1, 2, 3, 4, 5]
        async with telegram_gateway(make_settings, fake_llm, fake=fake) as gw:
            await gw.idle()
            async with SqliteStore(gw.channel.settings.db_path) as store:
                assert await store.inbox_pending() == []
        assert len(fake_llm.requests) == 5  # not read a sixth time
        assert fake.sent_texts(1001) == [GAVE_UP]
    fake_llm.resume()  # let the cut-off requests end
