"""/forget: everything about a user is deleted, in every table and file, on both platforms.

The check walks every table of the database (whatever migrations made them) and every
file of the data dir, so a table or file added later is checked too.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestClient

from gateway.app import PARTS
from gateway.config import Settings
from gateway.runtime.retention import purge_old
from gateway.store import Store
from gateway.store.privacy import SCRUBBED
from gateway.store.sql import Conn
from tests.console_support import sign_in
from tests.fakes.line_api import USER_ID, postback_event, text_event
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.telegram_api import (
    FakeTelegramAPI,
    make_callback_update,
    make_media_update,
    make_text_update,
)
from tests.line_support import GROUP_ID, REPLY, LineRig, quick_reply_data
from tests.media_support import png
from tests.pg_support import database
from tests.store_support import add_message, current_session
from tests.telegram_harness import ADMIN, telegram_gateway

__all__ = ["database"]  # a fixture

FORGOTTEN = 48151623
KEPT = 42424242
SECRET_WORDS = "marmalade zebra"
GROUP = -1009876543210


async def every_row(store: Store) -> dict[str, list[dict[str, Any]]]:
    """Every row of every table of the store's database."""

    async def work(c: Conn) -> dict[str, list[dict[str, Any]]]:
        if c.dialect.name == "sqlite":
            names = [
                r["name"]
                for r in await c.fetch(
                    "select name from sqlite_master where type = 'table'"
                    " and name not like 'sqlite_%'"
                )
            ]
        else:
            names = [
                r["table_name"]
                for r in await c.fetch(
                    "select table_name from information_schema.tables"
                    " where table_schema = current_schema() and table_type = 'BASE TABLE'"
                )
            ]
        return {name: await c.fetch(f'select * from "{name}"') for name in names}

    return await store._run(work, transaction=False)


def _json_values(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [v for item in value.values() for v in _json_values(item)]
    if isinstance(value, list):
        return [v for item in value for v in _json_values(item)]
    return [value]


def traces_of(rows: dict[str, list[dict[str, Any]]], user: str, words: str) -> list[str]:
    """Where in the tables the user's id or words still are."""
    found = []
    for table, records in rows.items():
        for record in records:
            for column, value in record.items():
                values = [value]
                if isinstance(value, str) and value[:1] in "[{":
                    with contextlib.suppress(ValueError):
                        values += _json_values(json.loads(value))
                for v in values:
                    if (isinstance(v, str) and (user in v or words in v)) or (
                        isinstance(v, int) and not isinstance(v, bool) and str(v) == user
                    ):
                        found.append(f"{table}.{column}")
    return sorted(set(found))


def orphans(rows: dict[str, list[dict[str, Any]]]) -> list[str]:
    """Rows of any table that name a message (a `message_id` column) no longer stored."""
    kept = {r["id"] for r in rows["messages"]}
    return sorted(
        f"{table}.{column}"
        for table, records in rows.items()
        for record in records
        for column, value in record.items()
        if column == "message_id" and value is not None and value not in kept
    )


def files_of(data_dir: Path) -> set[str]:
    return {str(p.relative_to(data_dir)) for p in data_dir.rglob("*") if p.is_file()}


def files_holding(data_dir: Path, needles: list[bytes]) -> list[str]:
    return sorted(
        str(p.relative_to(data_dir))
        for p in data_dir.rglob("*")
        if p.is_file() and any(n in p.read_bytes() for n in needles)
    )


def photo_update(
    update_id: int, user: int, file_id: str, caption: str = "what is this?"
) -> dict[str, Any]:
    """A photo (90x67) with its caption, in the user's private chat."""
    size = {"file_id": file_id, "file_unique_id": f"u{file_id}", "width": 90, "height": 67}
    return make_media_update(update_id, chat_id=user, user_id=user, photo=[size], caption=caption)


def forget_press(
    fake: FakeTelegramAPI, update_id: int, chat_id: int, button: int
) -> dict[str, Any]:
    """A press of the button (0: delete, 1: cancel) under the bot's last /forget question."""
    asked = [
        m
        for (chat, _), m in sorted(fake.messages.items())
        if chat == chat_id and "inline_keyboard" in (m.get("reply_markup") or {})
    ][-1]
    markup = asked["reply_markup"]
    return make_callback_update(
        update_id,
        markup["inline_keyboard"][0][button]["callback_data"],
        chat_id=chat_id,
        user_id=chat_id,
        message_id=asked["message_id"],
        message_text=asked["text"],
        reply_markup=markup,
    )


async def _rate_last(gw: Any, update_id: int, chat_id: int, user_id: int, rating: int) -> None:
    rated = [
        m
        for (chat, _), m in sorted(gw.fake.messages.items())
        if chat == chat_id and "inline_keyboard" in (m.get("reply_markup") or {})
    ][-1]
    markup = rated["reply_markup"]
    await gw.deliver(
        make_callback_update(
            update_id,
            markup["inline_keyboard"][0][0 if rating > 0 else 1]["callback_data"],
            chat_id=chat_id,
            user_id=user_id,
            message_id=rated["message_id"],
            message_text=rated["text"],
            reply_markup=markup,
        )
    )


async def test_forget_on_telegram_leaves_nothing_of_the_user_in_any_table_or_file(
    make_settings: Callable[..., Settings],
    fake_llm: FakeOpenAI,
    database: dict[str, str],
    tmp_path: Path,
) -> None:
    extra: dict[str, Any] = {"user_daily_answers": 50, **database}
    me, other = str(FORGOTTEN), str(KEPT)
    data_dir = tmp_path / "data"
    async with telegram_gateway(make_settings, fake_llm, **extra) as gw:
        before = files_of(data_dir)
        await gw.deliver(
            make_text_update(1, f"my {SECRET_WORDS} recipe", chat_id=FORGOTTEN, user_id=FORGOTTEN)
        )
        await _rate_last(gw, 2, FORGOTTEN, FORGOTTEN, -1)
        await gw.deliver(
            make_text_update(
                3, f"it forgot the {SECRET_WORDS}", chat_id=FORGOTTEN, user_id=FORGOTTEN
            )
        )
        mention = "@skillgate_test_bot"
        said = f"{mention} {SECRET_WORDS} in the group"
        await gw.deliver(
            make_text_update(
                4,
                said,
                chat_id=GROUP,
                user_id=FORGOTTEN,
                chat_type="supergroup",
                entities=[{"type": "mention", "offset": 0, "length": len(mention)}],
            )
        )
        gw.fake.add_file("AgADphoto", png(90, 67))  # read, and recorded as an attachment
        await gw.deliver(photo_update(55, FORGOTTEN, "AgADphoto", f"what is this {SECRET_WORDS}?"))
        await gw.deliver(make_text_update(5, "I am staying", chat_id=KEPT, user_id=KEPT))
        await _rate_last(gw, 6, GROUP, KEPT, 1)  # the other user rates the answer in the group
        await _rate_last(gw, 7, KEPT, KEPT, 1)
        assert traces_of(await every_row(gw.parts.store), me, SECRET_WORDS)

        await gw.deliver(make_text_update(8, "/forget", chat_id=FORGOTTEN, user_id=FORGOTTEN))
        asked = gw.fake.calls_of("sendMessage")[-1].params
        assert asked["text"].startswith("This deletes everything this bot keeps about you")
        labels = [b["text"] for b in asked["reply_markup"]["inline_keyboard"][0]]
        assert labels == ["Delete my data", "Cancel"]

        await gw.deliver(forget_press(gw.fake, 9, FORGOTTEN, 1))  # Cancel first: nothing goes
        assert traces_of(await every_row(gw.parts.store), me, SECRET_WORDS)
        await gw.deliver(forget_press(gw.fake, 10, FORGOTTEN, 0))
        assert gw.fake.sent_texts(FORGOTTEN)[-1].startswith("Done: everything this bot kept")

        rows = await every_row(gw.parts.store)
        assert traces_of(rows, me, SECRET_WORDS) == []
        assert traces_of(rows, other, "I am staying")  # the other user's data is all there
        # The other user's rating of the answer given to the forgotten user went with it.
        assert [(f["user"], f["chat"]) for f in await gw.feedback()] == [(other, other)]
        assert rows["deleted_sessions"] and {r["reason"] for r in rows["deleted_sessions"]} == {
            "forget"
        }
        assert len(fake_llm.requests) == 5  # neither /forget nor its buttons reached the model
        assert orphans(rows) == []
        # Whatever the user's messages made in the data dir (media, say) went with them.
        made = {p for p in files_of(data_dir) if not p.startswith("skillgate.db")} - before
        assert made == set()
    # Closed, with secure_delete: not even the SQLite file's free pages hold it any more.
    assert files_holding(data_dir, [me.encode(), SECRET_WORDS.encode()]) == []


async def test_forget_on_line_with_the_quick_reply_and_only_in_a_private_chat(
    line: LineRig,
) -> None:
    await line.deliver(text_event(f"about {SECRET_WORDS}", reply_token=line.token()))
    await line.deliver(
        text_event(
            "/forget", group_id=GROUP_ID, mention_self=True, reply_token=line.token(GROUP_ID)
        )
    )
    assert line.fake.delivered_texts()[-1].startswith("Send /forget in a private chat")

    await line.deliver(text_event("/forget", reply_token=line.token()))
    asked = line.fake.calls_to(REPLY)[-1].body["messages"][-1]
    assert asked["text"].startswith("This deletes everything")
    assert quick_reply_data(asked) == ["forget:yes", "forget:no"]
    assert [i["action"]["label"] for i in asked["quickReply"]["items"]] == [
        "Delete my data",
        "Cancel",
    ]
    await line.deliver(postback_event("forget:yes", reply_token=line.token()))
    assert line.fake.delivered_texts()[-1].startswith("Done: everything this bot kept")
    assert traces_of(await every_row(line.store), USER_ID, SECRET_WORDS) == []
    assert len(line.llm.requests) == 1


async def test_admins_export_and_forget_a_user_in_the_console_and_the_api(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    me = str(FORGOTTEN)
    async with telegram_gateway(make_settings, fake_llm) as gw:
        await gw.deliver(make_text_update(1, SECRET_WORDS, chat_id=FORGOTTEN, user_id=FORGOTTEN))
        await _rate_last(gw, 2, FORGOTTEN, FORGOTTEN, 1)
        client: TestClient = gw.client

        resp = await client.get(f"/admin/api/users/telegram/{me}", headers=ADMIN)
        data = await resp.json()
        assert [m["text"] for m in data["messages"]] == [SECRET_WORDS, "Hello from the fake model."]
        assert [f["rating"] for f in data["feedback"]] == [1]
        assert data["traces"][0]["tokens_known"] is True
        assert (await client.get("/admin/api/users/skype/1", headers=ADMIN)).status == 400
        assert (await client.get(f"/admin/api/users/telegram/{me}")).status == 401

        csrf = await sign_in(client)
        page = await client.get(f"/admin/users/export?channel=telegram&user={me}")
        assert page.headers["Content-Disposition"].startswith("attachment;")
        assert json.loads(await page.text())["messages"][0]["text"] == SECRET_WORDS

        unconfirmed = {"csrf": csrf, "channel": "telegram", "user": me}
        assert (await client.post("/admin/users/forget", data=unconfirmed)).status == 400
        assert traces_of(await every_row(gw.parts.store), me, SECRET_WORDS)
        done = await client.post("/admin/users/forget", data={**unconfirmed, "confirm": "yes"})
        assert done.status == 200
        assert "Deleted everything about telegram user" in await done.text()
        assert traces_of(await every_row(gw.parts.store), me, SECRET_WORDS) == []
        empty = await (await client.get(f"/admin/api/users/telegram/{me}", headers=ADMIN)).json()
        assert empty["messages"] == [] and empty["feedback"] == []


async def test_the_check_finds_what_a_table_holds(any_store: Store) -> None:
    session = await current_session(any_store, "telegram", str(FORGOTTEN), str(FORGOTTEN), 1.0, 60)
    await add_message(any_store, session.id, "user", "nothing special", now=1.0)
    found = traces_of(await every_row(any_store), str(FORGOTTEN), SECRET_WORDS)
    assert found == ["sessions.chat_id", "sessions.user_id"]


async def test_an_older_group_message_without_its_sender_is_found_by_its_stored_update(
    any_store: Store,
) -> None:
    payload = json.dumps(
        {"update_id": 5, "message": {"from": {"id": FORGOTTEN}, "chat": {"id": GROUP}}}
    )
    item = await any_store.inbox_add("telegram", "5", str(GROUP), payload, 10.0)
    assert item is not None and await any_store.inbox_done(item.id)
    other = await any_store.inbox_add("telegram", "6", str(GROUP), '{"from": {"id": 7}}', 11.0)
    assert other is not None and await any_store.inbox_done(other.id)
    # Written before messages knew their sender: only the stored update says whose it is.
    session = await current_session(any_store, "telegram", str(GROUP), None, 10.0, 600)
    mine = await add_message(any_store, session.id, "user", SECRET_WORDS, inbox_id=item.id, now=10)
    await add_message(any_store, session.id, "assistant", "an answer", inbox_id=item.id, now=10)
    theirs = await add_message(any_store, session.id, "user", "kept", inbox_id=other.id, now=11)

    done = await any_store.forget_user("telegram", str(FORGOTTEN), 20.0)
    assert (done.messages, done.updates, done.sessions) == (2, 1, 0)
    assert await any_store.get_message(mine.id) is None
    assert await any_store.get_message(theirs.id) is not None
    assert traces_of(await every_row(any_store), str(FORGOTTEN), SECRET_WORDS) == []


async def test_a_blanked_confirmation_found_again_after_a_crash_is_finished_quietly(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    # A crash after the forget committed but before its update was marked processed: the
    # restart finds the update blanked, and finishes it without an answer or a retry loop.
    async with telegram_gateway(make_settings, fake_llm) as gw:
        assert await gw.parts.inbox.accept("telegram", "77", "forgotten:1", SCRUBBED)
        await gw.idle()
        assert await gw.parts.store.inbox_pending_count() == 0
        assert gw.fake.calls_of("sendMessage") == [] and fake_llm.requests == []


async def test_a_blanked_line_confirmation_is_finished_quietly_too(line: LineRig) -> None:
    assert await line.http.app[PARTS].inbox.accept("line", "77", "forgotten:1", SCRUBBED)
    await line.idle()
    assert await line.store.inbox_pending_count() == 0
    assert line.fake.calls_to(REPLY) == [] and line.llm.requests == []


async def test_the_users_languages_go_with_them(any_store: Store) -> None:
    me = str(FORGOTTEN)
    await any_store.user_language_seen("line", me, "ja-JP", ok=True, now=1.0)
    await any_store.choose_language("line", me, "th", me, now=2.0)  # their 1:1 chat's choice
    await any_store.choose_language("line", "Cgroup", "ja", me, now=3.0)  # a group's, by them
    assert traces_of(await every_row(any_store), me, SECRET_WORDS)
    await any_store.forget_user("line", me, 4.0)
    assert traces_of(await every_row(any_store), me, SECRET_WORDS) == []
    state = await any_store.language_state("line", "Cgroup", "U-other")
    assert state.chosen == "ja"  # the group keeps its language; only who chose it is gone


async def test_forget_removes_the_users_kept_media_files_and_keeps_the_others(
    make_settings: Callable[..., Settings],
    fake_llm: FakeOpenAI,
    database: dict[str, str],
    tmp_path: Path,
) -> None:
    """With SKILLGATE_KEEP_MEDIA the downloads stay in data/media; forgetting takes theirs."""
    media = tmp_path / "data" / "media"

    async with telegram_gateway(make_settings, fake_llm, keep_media=True, **database) as gw:
        gw.fake.add_file("AgADmine", png(90, 67))
        gw.fake.add_file("AgADtheirs", png(64, 48))
        gw.fake.add_file("AgADshared", png(32, 32))
        await gw.deliver(photo_update(1, FORGOTTEN, "AgADmine"))
        await gw.deliver(photo_update(2, FORGOTTEN, "AgADshared"))
        await gw.deliver(photo_update(3, KEPT, "AgADtheirs"))
        await gw.deliver(
            photo_update(4, KEPT, "AgADshared")
        )  # the same bytes: one file, two owners
        kept = sorted(p.relative_to(media) for p in media.rglob("*") if p.is_file())
        assert len(kept) == 3

        await gw.deliver(make_text_update(5, "/forget", chat_id=FORGOTTEN, user_id=FORGOTTEN))
        await gw.deliver(forget_press(gw.fake, 6, FORGOTTEN, 0))
        assert gw.fake.sent_texts(FORGOTTEN)[-1].startswith("Done: everything this bot kept")

        left = sorted(p.relative_to(media) for p in media.rglob("*") if p.is_file())
        rows = await every_row(gw.parts.store)
    assert len(left) == 2  # the other user's photo, and the one they sent too
    assert {str(p) for p in left} == {str(r["kept"]) for r in rows["attachments"]}


async def test_retention_removes_kept_media_files_with_the_old_conversations(
    make_settings: Callable[..., Settings],
    fake_llm: FakeOpenAI,
    database: dict[str, str],
    tmp_path: Path,
) -> None:
    media = tmp_path / "data" / "media"
    async with telegram_gateway(make_settings, fake_llm, keep_media=True, **database) as gw:
        gw.fake.add_file("AgADold", png(90, 67))
        await gw.deliver(photo_update(1, KEPT, "AgADold"))
        assert [p for p in media.rglob("*") if p.is_file()]

        later = time.time() + 3 * 86400  # the conversation is now three days old
        purged = await purge_old(gw.parts.store, 1, now=later, media=media)
        assert purged.sessions == 1
        assert [p for p in media.rglob("*") if p.is_file()] == []
