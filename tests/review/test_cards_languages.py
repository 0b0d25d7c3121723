"""Proposal cards follow each admin's own language, on Telegram and LINE alike."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gateway.config import Settings
from tests.cards_support import (
    ALICE,
    BOB,
    LINE_ADMIN,
    fakes,
    flex_texts,
    postbacks,
    rig_settings,
    running,
)
from tests.fakes.openai_server import FakeOpenAI


def cards(messages: dict[tuple[int, int], dict[str, Any]], chat_id: int) -> list[dict[str, Any]]:
    return [m for (chat, _), m in sorted(messages.items()) if chat == chat_id and "#" in m["text"]]


def buttons(card: dict[str, Any]) -> dict[str, str]:
    return {
        b["text"]: b["callback_data"]
        for row in card["reply_markup"]["inline_keyboard"]
        for b in row
    }


async def test_each_admin_gets_the_card_and_its_decision_in_their_own_language(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with fakes() as (telegram, line):
        settings = rig_settings(make_settings, fake_llm, telegram, line)
        async with running(settings, telegram, line, fake_llm) as rig:
            store = rig.parts.store
            await store.user_language_seen("telegram", str(ALICE), "ja", ok=True)
            # The LINE admin never wrote to the bot: their profile says Thai.
            line.profiles[LINE_ADMIN] = {"displayName": "Somchai", "language": "th"}
            pid = await rig.propose()

            (alice,) = cards(telegram.messages, ALICE)
            (bob,) = cards(telegram.messages, BOB)
            assert alice["text"].startswith(f"<b>提案 #{pid}：新しいスキル chat-brevity</b>")
            assert "<b>根拠:</b> 会話 1 件、👎 1 件（コメント付き）" in alice["text"]
            assert bob["text"].startswith(f"<b>Proposal #{pid}: new skill chat-brevity</b>")
            assert list(buttons(alice)) == ["✅ 承認", "❌ 却下", "🔍 差分をすべて表示"]
            assert list(buttons(bob)) == ["✅ Approve", "❌ Reject", "🔍 Full diff"]
            # The callback data is the same signed data whatever the label says.
            assert list(buttons(alice).values()) == list(buttons(bob).values())

            (flex,) = rig.line_cards(LINE_ADMIN)
            assert list(postbacks(flex)) == ["อนุมัติ", "ปฏิเสธ", "ดูส่วนต่างทั้งหมด"]
            assert f"ข้อเสนอ #{pid}: ทักษะใหม่ chat-brevity" in flex_texts(flex)
            assert flex["altText"].endswith("รอการตรวจสอบจากคุณ")

            status, _ = await rig.api("POST", f"/proposals/{pid}/approve")
            assert status == 200
            await rig.idle()
            assert "✅ Web コンソール が" in telegram.message(ALICE, alice["message_id"])["text"]
            assert (
                "✅ Approved by the web console" in telegram.message(BOB, bob["message_id"])["text"]
            )
            notice = line.delivered_texts(to=LINE_ADMIN)[-1]
            assert notice.endswith("✅ อนุมัติโดย เว็บคอนโซล เมื่อ " + notice.rsplit("เมื่อ ", 1)[1])
            assert notice.startswith(f"ข้อเสนอ #{pid}")
            assert len(line.calls_to(f"/v2/bot/profile/{LINE_ADMIN}")) == 1  # then kept
