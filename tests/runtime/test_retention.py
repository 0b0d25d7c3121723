"""Retention and deleted evidence: old conversations go on a schedule, provenance keeps its ids,
and the console says which source sessions were deleted, and why."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from pathlib import Path

from gateway.config import Settings
from gateway.conversation.privacy import forget
from gateway.core.records import Trace
from gateway.review.proposals import PROPOSED_FILE, Candidate
from gateway.review.reviewer import EXPIRED_REASON, EXPIRED_TEXT, WITHDRAWN_REASON, Reviewer
from gateway.review.trials import TrialPair
from gateway.runtime.retention import purge_old
from gateway.skills.library import SkillLibrary
from gateway.store import SqliteStore, Store
from gateway.store.conversations import remember_name
from gateway.store.privacy import RETAINED_TEXT
from gateway.store.sql import Conn
from tests.console_support import sign_in
from tests.conversation.test_forget import every_row, traces_of
from tests.fakes.openai_server import FakeOpenAI
from tests.store_support import add_message, current_session
from tests.synthesis_support import answer, gateway, proposal, synth_settings

DAY = 86400.0


async def private_chat(store: Store, user: str, at: float, words: str = "hello") -> int:
    """A finished private chat of `user` at `at`: a question, a traced answer, a 👎."""
    session = await current_session(store, "telegram", user, user, at, 60)
    await add_message(store, session.id, "user", words, now=at, user_id=user)
    trace = Trace(prompt_tokens=10, completion_tokens=2, model="m")
    reply = await add_message(
        store, session.id, "assistant", "an answer", trace=trace, now=at, user_id=user
    )
    await store.set_feedback(reply.id, user, -1, now=at)
    await store.set_feedback_comment(reply.id, user, "too long", now=at)
    await store.finish_chat_session("telegram", user, "new", now=at)
    return session.id


async def stored_updates(store: Store) -> int:
    async def count(c: Conn) -> int:
        return int(await c.fetchval("select count(*) from inbox"))

    return await store._run(count, transaction=False)


async def test_retention_deletes_old_sessions_whole_and_keeps_their_ids(any_store: Store) -> None:
    now = time.time()
    old = await private_chat(any_store, "1", now - 40 * DAY, "an old question")
    recent = await private_chat(any_store, "2", now - 2 * DAY, "a recent question")
    stored = await any_store.inbox_add("telegram", "u-old", "1", '{"text": "old"}', now - 5 * DAY)
    assert stored is not None and await any_store.inbox_done(stored.id)
    await any_store.inbox_add("telegram", "u-new", "2", '{"text": "new"}', now - DAY)
    run = await any_store.start_run("schedule", "m", now - 39 * DAY)
    await any_store.consume_sessions([old], run, now - 39 * DAY)

    assert (await purge_old(any_store, 0, now)).sessions == 0  # 0 keeps everything
    assert await any_store.get_session(old) is not None
    purged = await purge_old(any_store, 30, now)
    assert (purged.sessions, purged.messages) == (1, 2)
    assert await any_store.get_session(old) is None
    assert await any_store.session_transcript(old) == []
    assert await any_store.get_session(recent) is not None
    assert len(await any_store.session_transcript(recent)) == 2
    deleted = await any_store.deleted_sessions([old, recent])
    assert list(deleted) == [old] and deleted[old].reason == "retention"
    assert [f.comment for f in await any_store.list_feedback()] == ["too long"]  # the recent one
    assert [i.update_id for i in await any_store.inbox_pending()] == ["u-new"]
    assert await stored_updates(any_store) == 2  # a processed update of 5 days: under 30
    await purge_old(any_store, 1, now)
    assert await stored_updates(any_store) == 1  # over a day old: its words go too
    assert await any_store.get_session(recent) is None
    # A run that read the session before it went can still record what it consumed.
    await any_store.consume_sessions([old, recent], run, now)
    assert await any_store.unconsumed_sessions(after_id=0, limit=10) == []
    assert (await purge_old(any_store, 30, now)).sessions == 0


async def test_the_console_marks_deleted_evidence_and_deleted_sessions(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    settings = synth_settings(make_settings, fake_llm, retention_days=30)
    async with gateway(settings) as gw:
        store = gw.parts.store
        now = time.time()
        forgotten = await private_chat(store, "7", now - DAY)
        kept = await private_chat(store, "8", now - DAY)
        fake_llm.reply(answer(proposal(based_on=[forgotten, kept])))
        run = await gw.synthesize()
        (made,) = run["proposed"]
        status, _ = await gw.call("POST", f"/proposals/{made['id']}/approve")
        assert status == 200
        skill = (gw.skills_dir / "chat-brevity" / "SKILL.md").read_text()

        await forget(store, "telegram", "7")
        await sign_in(gw.client)
        html = await (await gw.client.get(f"/admin/proposals/{made['id']}")).text()
        assert "Evidence partly deleted: 1 of 2 source sessions was deleted since" in html
        assert "the approved skill is unchanged" in html
        assert f'Session #{forgotten} <span class="muted deleted">(deleted at the user' in html
        assert f'href="/admin/conversations/{kept}"' in html
        assert (gw.skills_dir / "chat-brevity" / "SKILL.md").read_text() == skill

        skill_page = await (await gw.client.get("/admin/skills/chat-brevity")).text()
        assert skill_page.count("evidence partly deleted</span>") == 1

        gone = await gw.client.get(f"/admin/conversations/{forgotten}")
        assert gone.status == 410
        assert "was deleted at the user&#39;s request on" in await gone.text()
        assert (await gw.client.get("/admin/conversations/999999")).status == 404
        _, body = await gw.call("GET", f"/proposals/{made['id']}")
        assert sorted(body["based_on"]) == sorted([forgotten, kept])  # provenance keeps its ids
        assert [(d["session"], d["reason"]) for d in body["deleted_sources"]] == [
            (forgotten, "forget")
        ]


async def test_the_server_applies_retention_on_its_schedule(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    settings = synth_settings(make_settings, fake_llm, retention_days=30)
    settings.data_dir.mkdir(parents=True)
    async with SqliteStore(settings.db_path) as offline:
        old = await private_chat(offline, "9", time.time() - 31 * DAY)
        young = await private_chat(offline, "10", time.time() - 29 * DAY)
    async with gateway(settings) as gw:
        store = gw.parts.store
        # The schedule's first pass runs as the server starts; later ones every hour.
        async with asyncio.timeout(10):
            while await store.get_session(old) is not None:
                await asyncio.sleep(0.02)
        assert (await store.deleted_sessions([old]))[old].reason == "retention"
        assert await store.get_session(young) is not None


async def test_retention_leaves_no_name_opt_in_persona_or_tool_question_of_a_user_it_deleted(
    any_store: Store,
) -> None:
    # What the third hostile review found retention left (docs/SECURITY.md, T5).
    now = time.time()
    old = now - 40 * DAY
    await private_chat(any_store, "4711", old, "the zebra marmalade plan")
    await any_store._run(
        lambda c: remember_name(c, "telegram", "4711", "Zebra Fan", old), transaction=True
    )
    await any_store.set_memory_opt_in("telegram", "-100", "4711", True, old)
    await any_store.set_chat_persona("telegram", "4711", "speak of zebra marmalade", "4711", old)
    await any_store.open_confirmation(
        "telegram",
        "-100",
        "4711",
        "notes__write",
        '• text: "zebra marmalade"',
        digest="0123456789abcdef",
        expires_at=old + 60,
        now=old,
    )
    await any_store.choose_voice("telegram", "4711", "on", old)
    await any_store.set_user_timezone("telegram", "4711", "Asia/Tokyo", old)
    await any_store.choose_language("telegram", "4711", "ja", "4711", old)
    kept = await private_chat(any_store, "2", now - DAY, "a recent question")
    await any_store._run(
        lambda c: remember_name(c, "telegram", "2", "Recent", now - DAY), transaction=True
    )
    await any_store.set_chat_persona("telegram", "2", "be brief", "2", now - DAY)

    assert (await purge_old(any_store, 30, now)).sessions == 1
    rows = await every_row(any_store)
    assert traces_of(rows, "4711", "zebra marmalade") == []
    assert await any_store.get_session(kept) is not None
    assert await any_store.get_chat_persona("telegram", "2") == "be brief"
    assert [r["name"] for r in rows["user_names"]] == ["Recent"]
    assert rows["user_voices"] == rows["user_timezones"] == rows["chat_languages"] == []


async def test_retention_takes_the_words_of_proposals_decided_before_its_cutoff(
    any_store: Store,
) -> None:
    # The third hostile review: retention never removed proposals (docs/SECURITY.md, T5).
    now = time.time()
    old = now - 40 * DAY
    words = "zebra marmalade"
    made = {}
    for name, status in (("old-no", "rejected"), ("old-stale", "stale"), ("new-no", "rejected")):
        p = await any_store.add_proposal(
            Candidate(
                kind="create",
                name=name,
                description=f"Mention {words} ({name}).",
                content=f"# {name}\n\nAlways mention {words}.",
                content_hash=f"hash-{name}",
                rationale=f"A user asked about {words}.",
                generated_at=old,
            ),
            None,
        )
        at = now - DAY if name.startswith("new") else old
        moved = await any_store.transition(
            p.id, from_status="pending", to_status=status, by="telegram:1", at=at
        )
        assert moved is not None
        made[name] = p.id

    await purge_old(any_store, 30, now)
    rows = {r["name"]: r for r in (await every_row(any_store))["proposals"]}
    for name in ("old-no", "old-stale"):
        row = rows[name]
        assert words not in json.dumps(row, ensure_ascii=False, default=str)
        assert row["description"] == row["content"] == RETAINED_TEXT
        assert row["status"] in ("rejected", "stale") and row["decided_by"] == "telegram:1"
    assert words in rows["new-no"]["description"]  # decided within the period: kept


async def test_retention_withdraws_a_pending_proposal_once_every_session_it_was_made_from_is_gone(
    any_store: Store, tmp_path: Path
) -> None:
    # Still open after the third hostile review: a proposal waiting for an admin kept the
    # words of sessions retention had deleted, and its trial's pairs, until it was decided.
    now = time.time()
    words = "zebra marmalade"
    older = await private_chat(any_store, "31", now - 40 * DAY, f"the {words} plan")
    newer = await private_chat(any_store, "32", now - 10 * DAY, f"more {words}")
    other = await private_chat(any_store, "33", now - 2 * DAY, "an unrelated question")
    [rated] = [
        m["id"]
        for m in (await every_row(any_store))["messages"]
        if m["session_id"] == other and m["role"] == "assistant"
    ]
    library = SkillLibrary(tmp_path / "skills")
    review = Reviewer(library, any_store)
    pair = TrialPair(
        side="guards",
        arm="with_it",
        message_id=rated,
        rating=-1,
        question=f"what of {words}?",
        before="an answer",
        after=f"{words} again",
        outcome="worse",
        why=f"it brings up {words}",
    )

    async def propose(name: str, based_on: list[int]) -> int:
        p = await review.submit(
            Candidate(
                kind="create",
                name=name,
                description=f"Mention {words}.",
                content=f"---\nname: {name}\ndescription: Mention {words}.\n---\n\n{words}.\n",
                content_hash=f"hash-{name}",
                rationale=f"Users asked about {words}.",
                statement=f"Answers should mention {words}.",
                based_on=based_on,
                generated_at=now - 5 * DAY,
            ),
            pairs=[pair],
        )
        return p.id

    both = await propose("zebra-both", [older, newer])
    one = await propose("zebra-one", [older])
    bought = await propose("zebra-none", [])  # made from no session (an import): untouched

    # The older session goes; one proposal still has a source left, the other none.
    purged = await purge_old(any_store, 30, now, review=review)
    assert (purged.sessions, purged.withdrawn) == (1, (one,))
    gone = await any_store.get_proposal(one)
    assert gone is not None and (gone.status, gone.reason) == ("stale", EXPIRED_REASON)
    assert gone.decided_by == "privacy"
    assert gone.description == gone.content == EXPIRED_TEXT and gone.statement is None
    assert not (tmp_path / "skills" / "zebra-one" / PROPOSED_FILE).exists()
    assert (tmp_path / "skills" / "zebra-both" / PROPOSED_FILE).exists()
    rows = await every_row(any_store)
    assert [r["proposal_id"] for r in rows["trial_pairs"]] == [both, bought]
    held = {r["id"] for r in rows["proposals"] if words in json.dumps(r, default=str)}
    assert held == {both, bought}

    # Then the newer: nothing the proposal was made from is left, and nor are its words.
    purged = await purge_old(any_store, 5, now, review=review)
    assert purged.withdrawn == (both,)
    rows = await every_row(any_store)
    assert [r["proposal_id"] for r in rows["trial_pairs"]] == [bought]
    held = {r["id"] for r in rows["proposals"] if words in json.dumps(r, default=str)}
    assert held == {bought}
    assert not (tmp_path / "skills" / "zebra-both" / PROPOSED_FILE).exists()
    assert (await purge_old(any_store, 5, now, review=review)).withdrawn == ()


async def test_a_forget_cut_short_before_its_withdrawal_is_finished_by_the_next_sweep(
    any_store: Store, tmp_path: Path
) -> None:
    # /forget deletes the sessions, then withdraws the proposals made from them; a crash
    # between the two left the words in a pending proposal. The sweep (retention's pass, or
    # serve's start without retention) withdraws on any session deleted at a user's request.
    now = time.time()
    words = "zebra marmalade"
    forgotten = await private_chat(any_store, "41", now - DAY, f"the {words} plan")
    kept = await private_chat(any_store, "42", now - DAY, "another question")
    review = Reviewer(SkillLibrary(tmp_path / "skills"), any_store)
    made = await review.submit(
        Candidate(
            kind="create",
            name="zebra-tips",
            description=f"Mention {words}.",
            content=f"---\nname: zebra-tips\ndescription: Mention {words}.\n---\n\n{words}.\n",
            content_hash="hash-zebra",
            based_on=[forgotten, kept],
            generated_at=now,
        )
    )
    await forget(any_store, "telegram", "41")  # no `review`: as if cut short there
    assert (await any_store.get_proposal(made.id)).status == "pending"  # type: ignore[union-attr]
    assert await review.withdraw_orphans() == [made.id]
    p = await any_store.get_proposal(made.id)
    assert p is not None and (p.status, p.reason) == ("stale", WITHDRAWN_REASON)
    assert traces_of(await every_row(any_store), "41", words) == []
    assert await review.withdraw_orphans() == []


async def test_serve_without_retention_finishes_a_forget_cut_short_as_it_starts(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    settings = synth_settings(make_settings, fake_llm)
    assert settings.retention_days == 0
    settings.data_dir.mkdir(parents=True)
    words = "zebra marmalade"
    async with SqliteStore(settings.db_path) as offline:
        forgotten = await private_chat(offline, "51", time.time() - DAY, f"the {words} plan")
        review = Reviewer(SkillLibrary(settings.skills_dir), offline)
        made = await review.submit(
            Candidate(
                kind="create",
                name="zebra-tips",
                description=f"Mention {words}.",
                content=f"---\nname: zebra-tips\ndescription: Mention {words}.\n---\n\n{words}.\n",
                content_hash="hash-zebra",
                based_on=[forgotten],
                generated_at=time.time(),
            )
        )
        await forget(offline, "telegram", "51")  # and the process ends before withdrawing
    async with gateway(settings) as gw:
        p = await gw.parts.store.get_proposal(made.id)
        assert p is not None and (p.status, p.reason) == ("stale", WITHDRAWN_REASON)
        assert words not in json.dumps(p.model_dump(), default=str)
        assert not (settings.skills_dir / "zebra-tips" / PROPOSED_FILE).exists()
