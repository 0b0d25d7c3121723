"""A model that streams without end is cut, whatever `max_tokens` it ignores (SECURITY.md, S11).

The review's model streamed 1 MB/s past `max_tokens`: 89 MB were read in 90 s, and the chat's
next message waited 97 s. Only the first chunk and the gaps between chunks were bounded.
"""

from __future__ import annotations

from collections.abc import Callable

from gateway.config import Settings
from gateway.core.agent import CUT_NOTE
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.telegram_api import make_text_update
from tests.telegram_harness import telegram_gateway

ANSWER = "Hello from the fake model."


async def test_an_endless_stream_is_cut_at_its_byte_bound_and_the_chat_goes_on(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    fake_llm.flood("flood " * 100)
    settings = {"llm_stream_max_mb": 0.01, "llm_stream_max_seconds": 600}
    async with telegram_gateway(make_settings, fake_llm, **settings) as gw:
        await gw.deliver(make_text_update(1, "tell me everything"))
        await gw.deliver(make_text_update(2, "and then?"))
        first, second = gw.fake.sent_texts(1001)[-2:]
        assert first.startswith("flood flood") and first.endswith(CUT_NOTE)
        assert second == ANSWER
    # The connection was closed at the bound: the model was not read to its end.
    assert fake_llm.flooded < 4 * 1024 * 1024


async def test_a_stream_that_goes_on_too_long_is_cut_at_its_time_bound(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    fake_llm.flood("slow ", interval=0.01)  # never quiet long enough to trip the idle bound
    settings = {"llm_stream_max_seconds": 1}
    async with telegram_gateway(make_settings, fake_llm, **settings) as gw:
        await gw.deliver(make_text_update(1, "tell me everything"))
        (answer,) = gw.fake.sent_texts(1001)
        assert answer.startswith("slow slow") and answer.endswith(CUT_NOTE)
        rows = await gw.parts.store.run(
            lambda db: [r["notes"] for r in db.query("select notes from traces")]
        )
        assert any("LLM_STREAM_MAX_SECONDS" in notes for notes in rows)


async def test_a_server_ignoring_stream_cannot_send_an_endless_whole_answer(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    fake_llm.raw({"choices": [{"message": {"role": "assistant", "content": "x" * 400_000}}]})
    async with telegram_gateway(make_settings, fake_llm, llm_stream_max_mb=0.1) as gw:
        await gw.deliver(make_text_update(1, "hi"))
        (answer,) = gw.fake.sent_texts(1001)
        assert "x" * 1000 not in answer  # an apology, not the oversized answer


async def test_a_stream_that_is_not_utf8_is_an_apology_not_five_retries(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    fake_llm.garble(b'data: {"choices": [{"delta": {"content": "\xff\xfe"}}]}\n\n')
    async with telegram_gateway(make_settings, fake_llm, llm_max_retries=0) as gw:
        await gw.deliver(make_text_update(1, "hi"))
        (answer,) = gw.fake.sent_texts(1001)
        assert answer != ANSWER  # the error placeholder
        rows = await gw.parts.store.run(
            lambda db: [dict(r) for r in db.query("select attempts, last_error from inbox")]
        )
        assert rows == [{"attempts": 1, "last_error": None}]
