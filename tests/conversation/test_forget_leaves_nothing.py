"""What /forget and retention used to leave (docs/SECURITY.md, S13): the WAL, LINE's notes on
a chat's files, the platform's language of a deleted user; and the export's attachments."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

from gateway.config import Settings
from gateway.review.reviewer import EXPIRED_REASON, EXPIRED_TEXT, WITHDRAWN_REASON, WITHDRAWN_TEXT
from gateway.runtime.retention import purge_old
from tests.console_support import sign_in
from tests.conversation.test_forget import (
    FORGOTTEN,
    SECRET_WORDS,
    _rate_last,
    every_row,
    files_holding,
    forget_press,
    photo_update,
    traces_of,
)
from tests.fakes.line_api import USER_ID, postback_event, text_event
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.telegram_api import make_text_update
from tests.line_support import GROUP_ID, line_rig
from tests.media.test_media_downloads import until
from tests.media.test_media_line import sent
from tests.media_support import pdf, png
from tests.synthesis_support import answer, proposal
from tests.telegram_harness import ADMIN, telegram_gateway

FILE_NAME = "marmalade-zebra-plans.pdf"


async def test_no_file_in_the_data_dir_holds_the_words_while_the_server_still_runs(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI, tmp_path: Path
) -> None:
    data_dir = tmp_path / "data"
    async with telegram_gateway(make_settings, fake_llm) as gw:
        for n in range(1, 6):  # enough that the words sit in the WAL, not yet checkpointed
            text = f"my {SECRET_WORDS} recipe, part {n}"
            await gw.deliver(make_text_update(n, text, chat_id=FORGOTTEN, user_id=FORGOTTEN))
        assert files_holding(data_dir, [SECRET_WORDS.encode()]) != []
        await gw.deliver(make_text_update(8, "/forget", chat_id=FORGOTTEN, user_id=FORGOTTEN))
        await gw.deliver(forget_press(gw.fake, 9, FORGOTTEN, 0))
        assert gw.fake.sent_texts(FORGOTTEN)[-1].startswith("Done: everything this bot kept")
        # Still running: the WAL was checkpointed and truncated, its pages zeroed.
        assert files_holding(data_dir, [SECRET_WORDS.encode()]) == []


async def test_line_notes_on_a_users_files_go_with_forget(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with line_rig(make_settings, fake_llm) as rig:
        report = pdf("The plan.")
        content = {"type": "file", "fileName": FILE_NAME, "fileSize": len(report)}
        await rig.deliver(sent(rig, content, report))
        meta = await rig.store.run(lambda db: [r["key"] for r in db.query("select key from meta")])
        assert f"line:media:{USER_ID}" in meta
        await rig.deliver(text_event("/forget", reply_token=rig.token()))
        await rig.deliver(postback_event("forget:yes", reply_token=rig.token()))
        rows = await every_row(rig.store)
        assert traces_of(rows, USER_ID, "marmalade-zebra") == []


async def test_forget_takes_a_members_notes_out_of_a_line_groups_and_keeps_the_others(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    other, other_file = "U" + "b" * 32, "quarterly-figures.pdf"
    async with line_rig(make_settings, fake_llm) as rig:
        for user, name in ((USER_ID, FILE_NAME), (other, other_file)):
            report = pdf("The plan.")
            event = sent(rig, {"type": "file", "fileName": name, "fileSize": len(report)}, report)
            event["source"] = {"type": "group", "groupId": GROUP_ID, "userId": user}
            event["replyToken"] = rig.token(GROUP_ID)
            await rig.deliver(event)
        key = f"line:media:{GROUP_ID}"
        note = await rig.store.get_meta(key)
        assert note is not None and FILE_NAME in note and other_file in note
        await rig.deliver(text_event("/forget", reply_token=rig.token()))
        await rig.deliver(postback_event("forget:yes", reply_token=rig.token()))
        rows = await every_row(rig.store)
        assert traces_of(rows, USER_ID, "marmalade-zebra") == []
        # The other member's file can still be quoted: their note is kept, and named theirs.
        [kept] = json.loads(await rig.store.get_meta(key) or "[]")
        assert (kept["fileName"], kept["from"]) == (other_file, other)


async def test_retention_takes_line_notes_and_languages_of_users_with_nothing_left(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with line_rig(make_settings, fake_llm) as rig:
        report = pdf("The plan.")
        content = {"type": "file", "fileName": FILE_NAME, "fileSize": len(report)}
        await rig.deliver(sent(rig, content, report))
        await rig.store.user_language_seen("line", USER_ID, "ja-JP", ok=True, now=time.time())
        later = time.time() + 3 * 86400
        assert (await purge_old(rig.store, 1, now=later)).sessions == 1
        rows = await every_row(rig.store)
        assert traces_of(rows, USER_ID, "marmalade-zebra") == []


async def test_the_export_holds_the_users_attachments(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with telegram_gateway(make_settings, fake_llm) as gw:
        gw.fake.add_file("AgADphoto", png(90, 67))
        await gw.deliver(photo_update(1, FORGOTTEN, "AgADphoto", "what is this?"))
        resp = await gw.client.get(f"/admin/api/users/telegram/{FORGOTTEN}", headers=ADMIN)
        [attachment] = (await resp.json())["attachments"]
        assert (attachment["kind"], attachment["mime"], attachment["width"]) == (
            "image",
            "image/png",
            90,
        )


async def test_a_pending_proposal_made_from_a_forgotten_users_session_is_withdrawn(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI, tmp_path: Path
) -> None:
    admin = 777001
    settings = {"telegram_admin_ids": [admin], "session_idle_minutes": 0}
    async with telegram_gateway(make_settings, fake_llm, **settings) as gw:
        text = f"my {SECRET_WORDS} recipe"
        await gw.deliver(make_text_update(1, text, chat_id=FORGOTTEN, user_id=FORGOTTEN))
        await _rate_last(gw, 4, FORGOTTEN, FORGOTTEN, -1)  # what synthesis learns from
        chat = fake_llm.default
        fake_llm.default = lambda body: answer(
            proposal("recipe-tips", content=f"When asked for recipes, mention {SECRET_WORDS}.")
        )
        made = await gw.client.post("/admin/api/synthesize", headers=ADMIN)
        assert made.status == 200, await made.text()
        assert (await made.json())["proposed"], await made.text()
        fake_llm.default = chat
        staged = gw.channel.settings.skills_dir / "recipe-tips" / "SKILL.md.proposed"
        assert staged.exists()
        await gw.deliver(make_text_update(2, "/forget", chat_id=FORGOTTEN, user_id=FORGOTTEN))
        await gw.deliver(forget_press(gw.fake, 3, FORGOTTEN, 0))

        resp = await gw.client.get("/admin/api/proposals", headers=ADMIN)
        [withdrawn] = await resp.json()
        assert (withdrawn["status"], withdrawn["reason"]) == ("stale", WITHDRAWN_REASON)
        assert not staged.exists()

        # The admin's card says so: edited in place, its buttons gone.
        def edits() -> list[str]:
            calls = gw.fake.calls_of("editMessageText")
            return [c.params["text"] for c in calls if c.params["chat_id"] == admin]

        await until(lambda: bool(edits()))  # cards are updated in the background
        assert WITHDRAWN_REASON in edits()[-1]
        # The decision is kept, the words are not: not in any row, the card or the console
        # (the third hostile review found them in the proposal's description and content).
        assert SECRET_WORDS not in edits()[-1]
        assert WITHDRAWN_TEXT in json.dumps(withdrawn, ensure_ascii=False)
        rows = await every_row(gw.parts.store)
        assert traces_of(rows, str(FORGOTTEN), SECRET_WORDS) == []
        await sign_in(gw.client, "admin-secret-token")
        page = await (await gw.client.get(f"/admin/proposals/{withdrawn['id']}")).text()
        assert SECRET_WORDS not in page and WITHDRAWN_REASON in page


async def test_retention_withdraws_a_pending_proposal_whose_sessions_it_deleted_by_the_bytes(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI, tmp_path: Path
) -> None:
    # Still open after the third hostile review: a proposal waiting for an admin kept the
    # words of the sessions retention had deleted, on its card, its page and in its staged
    # file, until someone decided it.
    admin = 777001
    data_dir = tmp_path / "data"
    settings = {"telegram_admin_ids": [admin], "session_idle_minutes": 0}
    async with telegram_gateway(make_settings, fake_llm, **settings) as gw:
        text = f"my {SECRET_WORDS} recipe"
        await gw.deliver(make_text_update(1, text, chat_id=FORGOTTEN, user_id=FORGOTTEN))
        await _rate_last(gw, 4, FORGOTTEN, FORGOTTEN, -1)
        chat = fake_llm.default
        fake_llm.default = lambda body: answer(
            proposal("recipe-tips", content=f"When asked for recipes, mention {SECRET_WORDS}.")
        )
        made = await gw.client.post("/admin/api/synthesize", headers=ADMIN)
        assert (await made.json())["proposed"], await made.text()
        fake_llm.default = chat
        skills = gw.channel.settings.skills_dir
        staged = skills / "recipe-tips" / "SKILL.md.proposed"
        assert staged.exists()
        assert files_holding(data_dir, [SECRET_WORDS.encode()]) != []
        assert files_holding(skills, [SECRET_WORDS.encode()]) != []

        later = time.time() + 3 * 86400  # the session is past a day's retention
        purged = await purge_old(gw.parts.store, 1, now=later, review=gw.parts.review)
        assert purged.sessions == 1 and len(purged.withdrawn) == 1

        [withdrawn] = await (await gw.client.get("/admin/api/proposals", headers=ADMIN)).json()
        assert (withdrawn["status"], withdrawn["reason"]) == ("stale", EXPIRED_REASON)
        assert EXPIRED_TEXT in json.dumps(withdrawn, ensure_ascii=False)
        assert not staged.exists()

        def edits() -> list[str]:
            calls = gw.fake.calls_of("editMessageText")
            return [c.params["text"] for c in calls if c.params["chat_id"] == admin]

        await until(lambda: bool(edits()))  # the admin's card says why, its buttons gone
        assert EXPIRED_REASON in edits()[-1] and SECRET_WORDS not in edits()[-1]
        rows = await every_row(gw.parts.store)
        assert traces_of(rows, str(FORGOTTEN), SECRET_WORDS) == []
        # By the bytes, while the server runs: the database, its WAL, the skills' files.
        assert files_holding(data_dir, [SECRET_WORDS.encode()]) == []
        assert files_holding(skills, [SECRET_WORDS.encode()]) == []
