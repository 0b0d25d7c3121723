"""`skillgate serve` as a real process: cards of a pass reach both apps; one tap approves."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import aiohttp

from gateway.config import Settings
from tests.cards_support import ALICE, BOB, LINE_ADMIN, LINE_SECRET, PUSH, postbacks
from tests.fakes.line_api import FakeLineAPI
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.telegram_api import FakeTelegramAPI, make_callback_update
from tests.serve_process import serving
from tests.synthesis_support import AUTH, answer, proposal, seed_offline
from tests.telegram_harness import SECRET


async def test_serve_sends_cards_to_both_apps_and_a_signed_tap_makes_the_skill_live(
    tmp_path: Path, make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    data = tmp_path / "data"
    session = await seed_offline(make_settings(data_dir=data))
    fake_llm.reply(answer(proposal("chat-brevity", based_on=[session])))
    async with FakeTelegramAPI() as telegram, FakeLineAPI() as line:
        env = {
            "SKILLGATE_DATA_DIR": str(data),
            "SKILLGATE_ADMIN_TOKEN": "admin-secret-token",
            "SKILLGATE_SYNTHESIS_INTERVAL_MINUTES": "0",
            "LLM_BASE_URL": fake_llm.base_url,
            "LLM_MODEL": "fake-model",
            "TELEGRAM_BOT_TOKEN": telegram.token,
            "TELEGRAM_WEBHOOK_SECRET": SECRET,
            "TELEGRAM_API_BASE_URL": telegram.base_url,
            "TELEGRAM_ADMIN_IDS": f"{ALICE}, {BOB}",
            "LINE_CHANNEL_SECRET": LINE_SECRET,
            "LINE_CHANNEL_ACCESS_TOKEN": line.access_token,
            "LINE_API_BASE_URL": line.base_url,
            "LINE_ADMIN_IDS": LINE_ADMIN,
        }
        async with serving(env=env) as served, aiohttp.ClientSession() as http:
            url = served.url
            async with http.post(f"{url}/admin/api/synthesize", headers=AUTH) as resp:
                assert resp.status == 200
                (made,) = (await resp.json())["proposed"]
            await telegram.wait_for("sendMessage", 2, timeout=10)
            await line.wait_for(PUSH, 1, timeout=10)
            cards = {c.params["chat_id"]: c for c in telegram.calls_of("sendMessage")}
            assert sorted(cards) == [ALICE, BOB]
            (flex,) = line.delivered_messages(LINE_ADMIN)
            assert list(postbacks(flex)) == ["Approve", "Reject", "Full diff"]

            card = telegram.message(ALICE, 1)
            approve = card["reply_markup"]["inline_keyboard"][0][0]["callback_data"]
            press = make_callback_update(
                7, approve, chat_id=ALICE, user_id=ALICE, message_id=1, message_text=card["text"]
            )
            headers = {"X-Telegram-Bot-Api-Secret-Token": SECRET}
            async with http.post(f"{url}/webhook/telegram", json=press, headers=headers) as resp:
                assert resp.status == 200
            await telegram.wait_for("editMessageText", 2, timeout=10)
            await line.wait_for(PUSH, 2, timeout=10)

            async with http.get(f"{url}/admin/api/skills", headers=AUTH) as resp:
                skills = {s["name"]: s for s in await resp.json()}
        assert served.returncode == 0, served.stderr
        assert skills["chat-brevity"]["enabled"] is True
        assert skills["chat-brevity"]["last_approved"]["by"] == f"telegram:{ALICE}"
        assert skills["chat-brevity"]["last_approved"]["proposal"] == made["id"]
        (ack,) = telegram.calls_of("answerCallbackQuery")
        assert ack.params["text"] == "✅ Approved: chat-brevity is live now."
        for admin in (ALICE, BOB):
            edited = telegram.message(admin, 1)
            assert (
                "reply_markup" not in edited
                and "✅ Approved by Alice (@alice) at " in edited["text"]
            )
        assert "✅ Approved by Alice (@alice)" in line.delivered_texts(LINE_ADMIN)[-1]
