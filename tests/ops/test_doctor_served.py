"""`doctor` beside a running server reports the model that server uses, as it finds it."""

from __future__ import annotations

from collections.abc import Callable

from gateway.config import Settings
from gateway.ops.doctor import check_model
from gateway.runtime.datadir import lock_data_dir, lock_holder, served_url
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.telegram_api import make_text_update
from tests.telegram_harness import telegram_gateway


async def test_doctor_beside_a_running_server_reports_that_servers_failing_model(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with telegram_gateway(make_settings, fake_llm, llm_max_retries=0) as gw:
        settings = gw.parts.settings
        url = str(gw.client.make_url("")).rstrip("/")
        held = lock_data_dir(settings.data_dir, url)
        try:
            assert served_url(lock_holder(settings.data_dir)) == url
            checks = {c.name: c for c in await check_model(settings)}
            assert checks["model (served)"].status == "ok"  # no chat call yet
            fake_llm.error(500, times=3, message="engine is dead")
            for n in range(1, 4):
                await gw.deliver(make_text_update(n, f"question {n}", user_id=7, chat_id=7))
            checks = {c.name: c for c in await check_model(settings)}
            served = checks["model (served)"]
            assert served.status == "fail" and "failing since" in served.detail
            assert "engine is dead" in served.detail and "behind its API" in (served.fix or "")

            # On-board model: the server's model is reported, no copy of its own is started.
            local = make_settings(data_dir=settings.data_dir, llm_local_model="smollm2")
            before = len(fake_llm.requests)
            checks = {c.name: c for c in await check_model(local)}
            assert list(checks) == ["local model", "model (served)"]
            assert checks["model (served)"].status == "fail"
            assert "LLM_LOCAL_MODEL" in (checks["model (served)"].fix or "")
            assert len(fake_llm.requests) == before  # asked the server, probed nothing
        finally:
            held.release()


async def test_doctor_without_a_running_server_probes_the_model_itself(
    settings: Settings, fake_llm: FakeOpenAI
) -> None:
    fake_llm.reply("OK")
    checks = [c.name for c in await check_model(settings)]
    assert "model (served)" not in checks and "model chat" in checks
