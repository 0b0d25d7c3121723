"""Real updates the second hostile review sent (docs/SECURITY.md, S14): each answered as meant."""

from __future__ import annotations

from collections.abc import Callable

from gateway.channels.telegram.dialect import START
from gateway.config import Settings
from gateway.conversation import attachments as notices
from tests.fakes.line_api import LOADING_PATH, USER_ID, text_event
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.telegram_api import make_media_update, make_text_update
from tests.line_support import GROUP_ID, line_rig
from tests.media_support import prompt_text
from tests.telegram_harness import telegram_gateway

ANSWER = "Hello from the fake model."


async def test_the_bot_api_documentations_start_update_without_entities_is_greeted(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with telegram_gateway(make_settings, fake_llm) as gw:
        await gw.deliver(make_text_update(1, "/start", entities=[]))
        assert gw.fake.sent_texts(1001) == [START.format(name="Alice")]
        assert fake_llm.requests == []
        # A slash in running text is no command.
        await gw.deliver(make_text_update(2, "/usr/bin is a folder", entities=[]))
        assert fake_llm.requests != []


async def test_a_line_group_message_not_for_the_bot_starts_no_loading_animation(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with line_rig(make_settings, fake_llm) as rig:
        await rig.deliver(text_event("lunch at noon?", group_id=GROUP_ID))
        await rig.deliver(
            text_event("hi bot", group_id=GROUP_ID, mention_self=True, reply_token=rig.token())
        )
        assert rig.fake.calls_to(LOADING_PATH) == []
        await rig.deliver(text_event("hello", reply_token=rig.token(USER_ID)))
        assert len(rig.fake.calls_to(LOADING_PATH)) == 1  # 1:1 chats only


async def test_a_captioned_file_whose_download_fails_is_answered_from_its_caption(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with telegram_gateway(make_settings, fake_llm) as gw:
        doc = {"file_id": "gone", "file_unique_id": "ug", "file_name": "a.pdf", "file_size": 9}
        await gw.deliver(make_media_update(1, document=doc, caption="What is the due date?"))
        assert gw.fake.sent_texts(1001) == [notices.UNAVAILABLE["document"], ANSWER]
        text = prompt_text(fake_llm.requests[-1])
        assert text == (
            "[document a.pdf: the file could not be downloaded]\n\nWhat is the due date?"
        )
