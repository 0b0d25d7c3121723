"""Two `skillgate serve` replicas on one PostgreSQL database, behind the same fakes.

Each replica is a real process with its own fake model (so the test can tell which
replica answered and hold one replica's answers in flight); both share the Telegram
fake, the data dir (the shared skills volume) and a fresh PostgreSQL schema.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp

from gateway.store.postgres import PostgresStore
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.telegram_api import FakeTelegramAPI, make_text_update
from tests.serve_process import Served, free_port, serving, skillgate
from tests.synthesis_support import AUTH, answer, proposal, seed_session
from tests.telegram_harness import SECRET

HOOK_HEADERS = {"X-Telegram-Bot-Api-Secret-Token": SECRET}
TOKEN = re.compile(r"c\d+m\d+")
CHATS = 100
ROUNDS = 3


def echo(body: dict[str, Any]) -> str:
    """Answer with the token of the newest user message, so answers name their update."""
    users = [m for m in body["messages"] if m.get("role") == "user"]
    found = TOKEN.findall(str(users[-1]["content"])) if users else []
    return f"answer {found[-1] if found else '?'}"


def environment(
    tmp_path: Path,
    url: str,
    llm: FakeOpenAI,
    telegram: FakeTelegramAPI | None,
    lease: float | None = 3,
) -> dict[str, str]:
    """One replica's settings; `lease` None leaves the inbox lease at the documented default."""
    env = {
        "SKILLGATE_DATA_DIR": str(tmp_path / "data"),  # one folder: the shared volume
        "SKILLGATE_DATABASE_URL": url,
        "SKILLGATE_ADMIN_TOKEN": "admin-secret-token",
        "SKILLGATE_SESSION_IDLE_MINUTES": "0",
        "SKILLGATE_SYNTHESIS_INTERVAL_MINUTES": "0",
        "SKILLGATE_SKILL_HOLDOUT": "0",
        "LLM_BASE_URL": llm.base_url,
        "LLM_MODEL": "fake-model",
        "LLM_MAX_RETRIES": "0",
    }
    if lease is not None:  # short, so that the work of a killed replica is soon taken over
        env["SKILLGATE_INBOX_LEASE_SECONDS"] = str(lease)
    if telegram is not None:
        env |= {
            "TELEGRAM_BOT_TOKEN": telegram.token,
            "TELEGRAM_WEBHOOK_SECRET": SECRET,
            "TELEGRAM_API_BASE_URL": telegram.base_url,
            "TELEGRAM_MAX_MESSAGES_PER_SECOND": "0",
        }
    return env


@asynccontextmanager
async def replicas(
    tmp_path: Path, url: str, telegram: FakeTelegramAPI | None = None, lease: float | None = 3
) -> AsyncIterator[tuple[list[Served], list[FakeOpenAI]]]:
    """Two replicas, each with its own fake model answering `echo`."""
    async with AsyncExitStack() as stack:
        models = [await stack.enter_async_context(FakeOpenAI()) for _ in range(2)]
        for model in models:
            model.default = echo
        served = []
        for model in models:
            env = environment(tmp_path, url, model, telegram, lease)
            served.append(await stack.enter_async_context(serving(env=env)))
        yield served, models


async def post_update(
    http: aiohttp.ClientSession, targets: list[Served], chat: int, rnd: int
) -> None:
    """Deliver one update as a load balancer would: to the first replica that takes it."""
    update = make_text_update(
        1 + rnd * CHATS + chat, f"question c{chat}m{rnd}", chat_id=5000 + chat, user_id=5000 + chat
    )
    for served in targets:
        if served.proc.returncode is not None:
            continue
        try:
            async with http.post(
                f"{served.url}/webhook/telegram", json=update, headers=HOOK_HEADERS
            ) as resp:
                assert resp.status == 200, await resp.text()
                return
        except aiohttp.ClientConnectionError:
            continue  # that replica is gone: the next one
    raise AssertionError(f"no replica took c{chat}m{rnd}")


async def settled(url: str, timeout: float = 60) -> None:
    """Wait until no stored update waits: every send is done before its update is marked
    processed, so nothing can be sent after this, twice or otherwise."""
    async with PostgresStore(url) as store:
        async with asyncio.timeout(timeout):
            while await store.inbox_pending_count():
                await asyncio.sleep(0.05)


def answers_by_chat(telegram: FakeTelegramAPI) -> dict[int, list[str]]:
    found: dict[int, list[str]] = {}
    for call in telegram.calls_of("sendMessage"):
        text = str(call.params["text"])
        if text.startswith("answer "):
            found.setdefault(int(call.params["chat_id"]) - 5000, []).append(text[7:])
    return found


def assert_each_answered_once_in_order(telegram: FakeTelegramAPI) -> None:
    got = answers_by_chat(telegram)
    expected = {chat: [f"c{chat}m{rnd}" for rnd in range(ROUNDS)] for chat in range(CHATS)}
    wrong = {chat: got.get(chat) for chat in expected if got.get(chat) != expected[chat]}
    assert not wrong, f"chats answered wrongly (missing, twice or out of order): {wrong}"


async def test_interleaved_webhooks_are_answered_once_each_in_order(
    tmp_path: Path, postgres_url: str
) -> None:
    """With the default lease, as the docs recommend; it holds on a busy host too (measured
    with a busy-loop process on every core: docs/RELIABILITY.md, G15)."""
    async with (
        FakeTelegramAPI() as telegram,
        replicas(tmp_path, postgres_url, telegram, lease=None) as (served, _),
        aiohttp.ClientSession() as http,
    ):
        for rnd in range(ROUNDS):
            # A chat's updates alternate between the replicas; every chat at once.
            await asyncio.gather(
                *(post_update(http, [served[(chat + rnd) % 2]], chat, rnd) for chat in range(CHATS))
            )
        await telegram.wait_for("sendMessage", CHATS * ROUNDS, timeout=60)
        await settled(postgres_url)
        assert_each_answered_once_in_order(telegram)
        # Which replica answers is the shared inbox's choice, not the load balancer's: on a
        # busy host one may take them all, and that is as correct.
    for replica in served:
        assert replica.returncode == 0, replica.stderr


async def test_work_of_a_killed_replica_is_answered_once_by_the_other(
    tmp_path: Path, postgres_url: str
) -> None:
    async with (
        FakeTelegramAPI() as telegram,
        replicas(tmp_path, postgres_url, telegram) as (served, models),
        aiohttp.ClientSession() as http,
    ):
        doomed, survivor = served
        models[0].pause()  # the doomed replica's answers stay in flight
        await asyncio.gather(*(post_update(http, served, chat, 0) for chat in range(CHATS)))
        await models[0].wait_for_requests(10, timeout=20)
        doomed.proc.kill()  # SIGKILL, mid-answer
        await doomed.proc.wait()
        models[0].resume()  # answers to nobody: the process that asked is gone
        for rnd in range(1, ROUNDS):  # the stream goes on, now to the survivor only
            await asyncio.gather(*(post_update(http, served, chat, rnd) for chat in range(CHATS)))
        await telegram.wait_for("sendMessage", CHATS * ROUNDS, timeout=60)
        await settled(postgres_url)
        assert_each_answered_once_in_order(telegram)
        held = {echo(body)[7:] for body in models[0].requests}
        answered_by_survivor = {echo(body)[7:] for body in models[1].requests}
        assert held <= answered_by_survivor  # what the dead replica held, the other answered
    assert survivor.returncode == 0, survivor.stderr


async def test_synthesis_runs_once_and_the_first_decision_wins_everywhere(
    tmp_path: Path, postgres_url: str
) -> None:
    async with PostgresStore(postgres_url) as store:
        await seed_session(store)
    async with (
        replicas(tmp_path, postgres_url) as (served, models),
        aiohttp.ClientSession(headers=AUTH) as http,
    ):
        for model in models:
            model.default = lambda body: answer(proposal())
            model.pause()  # a pass that reaches the model holds the lock meanwhile

        async def synthesize(replica: Served) -> tuple[int, dict[str, Any]]:
            async with http.post(f"{replica.url}/admin/api/synthesize") as resp:
                return resp.status, await resp.json()

        passes = [asyncio.create_task(synthesize(replica)) for replica in served]
        done, _ = await asyncio.wait(passes, timeout=20, return_when=asyncio.FIRST_COMPLETED)
        assert [t.result()[0] for t in done] == [409]  # the other replica holds the pass
        for model in models:
            model.resume()
        results = await asyncio.gather(*passes)
        assert sorted(status for status, _ in results) == [200, 409]
        assert sum(len(model.requests) for model in models) == 1
        async with PostgresStore(postgres_url) as store:
            runs = await store.list_runs()
            pending = await store.pending_proposals()
        assert len(runs) == 1 and len(pending) == 1

        async def skills_enabled(replica: Served) -> int:
            async with http.get(f"{replica.url}/healthz") as resp:
                return int((await resp.json())["skills_enabled"])

        before = [await skills_enabled(replica) for replica in served]
        pid = pending[0].id

        async def decide(replica: Served, action: str) -> int:
            async with http.post(
                f"{replica.url}/admin/api/proposals/{pid}/{action}",
                json={"reason": "not like this"},
            ) as resp:
                return resp.status

        statuses = await asyncio.gather(decide(served[0], "approve"), decide(served[1], "reject"))
        assert sorted(statuses) == [200, 409]
        approved = statuses[0] == 200
        seen = []
        for replica in served:
            async with http.get(f"{replica.url}/admin/api/proposals/{pid}") as resp:
                seen.append((await resp.json())["status"])
        assert seen[0] == seen[1] == ("approved" if approved else "rejected")
        want = [n + (1 if approved else 0) for n in before]
        for _ in range(100):  # the other replica reloads within its watch interval
            if [await skills_enabled(replica) for replica in served] == want:
                break
            await asyncio.sleep(0.1)
        assert [await skills_enabled(replica) for replica in served] == want


async def test_a_replica_without_the_shared_skills_volume_refuses_to_start(
    tmp_path: Path, postgres_url: str
) -> None:
    async with FakeOpenAI() as model:
        first = environment(tmp_path, postgres_url, model, None)
        async with serving(env=first) as served:
            assert served.health["status"] == "ok"
        elsewhere = first | {"SKILLGATE_DATA_DIR": str(tmp_path / "another-host")}
        status, _, err = await skillgate("serve", "--port", str(free_port()), env=elsewhere)
        assert status == 1
        status, out, _ = await skillgate("doctor", "--json", env=elsewhere)
    assert status == 1
    assert "is not the skills volume the other replicas share" in err
    assert "Traceback" not in err
    checks = {c["name"]: c for c in json.loads(out)}
    assert checks["database"]["status"] == "ok"
    assert checks["skills volume"]["status"] == "fail"
    assert "SKILLGATE_DATA_DIR" in checks["skills volume"]["fix"]
    # Back on the shared folder, it starts again.
    async with FakeOpenAI() as model, serving(env=first | {"LLM_BASE_URL": model.base_url}):
        pass
