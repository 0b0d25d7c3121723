"""GET /metrics: Prometheus text that counts what happened, for local or authorised scrapers."""

from __future__ import annotations

from collections.abc import Callable

from aiohttp.test_utils import TestClient
from prometheus_client.parser import text_string_to_metric_families

from gateway.app import PARTS, build_app
from gateway.config import Settings
from gateway.review.proposals import Candidate
from tests.fakes.channel import FakeChannel
from tests.fakes.openai_server import FakeOpenAI

AUTH = {"Authorization": "Bearer admin-secret-token"}
PROXIED = {"X-Forwarded-For": "203.0.113.7"}


async def scrape(client: TestClient) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    resp = await client.get("/metrics")
    assert resp.status == 200
    assert resp.headers["Content-Type"].startswith("text/plain")
    samples = {}
    for family in text_string_to_metric_families(await resp.text()):
        for s in family.samples:
            samples[(s.name, frozenset(s.labels.items()))] = s.value
    return samples


def key(name: str, **labels: str) -> tuple[str, frozenset[tuple[str, str]]]:
    return name, frozenset(labels.items())


async def test_metrics_count_updates_answers_errors_and_feedback(
    aiohttp_client: Callable[..., TestClient], settings: Settings, fake_llm: FakeOpenAI
) -> None:
    channel = FakeChannel(settings)
    app = build_app(settings, channels=[channel])
    client = await aiohttp_client(app)
    parts = app[PARTS]

    fake_llm.reply("First answer.")
    await channel.accept("1", "c1", "hello")
    await channel.wait_sent(1)
    fake_llm.error(500, times=3)  # the model fails, retries included
    await channel.accept("2", "c2", "are you there?")
    await channel.wait_sent(2)
    assert not await channel.accept("1", "c1", "hello")  # a redelivery is not counted
    await parts.worker.wait_idle(5)
    answer_id = channel.sent[0][1].message_id
    assert answer_id is not None
    await parts.store.set_feedback(answer_id, "u1", 1)

    m = await scrape(client)
    assert m[key("skillgate_updates_received_total", channel="fake")] == 2
    assert m[key("skillgate_answers_total", channel="fake", kind="normal")] == 1
    assert m[key("skillgate_answers_total", channel="fake", kind="error")] == 1
    assert m[key("skillgate_model_errors_total", channel="fake")] == 1
    assert m[key("skillgate_answer_latency_seconds_count", channel="fake")] == 2
    assert m[key("skillgate_answer_latency_seconds_sum", channel="fake")] > 0
    assert m[key("skillgate_feedback", rating="up")] == 1
    assert m[key("skillgate_feedback", rating="down")] == 0
    assert m[key("skillgate_inbox_pending")] == 0
    assert not [k for k in m if k[0] == "skillgate_proposals"]


async def test_proposals_by_status_once_the_store_has_them(
    aiohttp_client: Callable[..., TestClient], settings: Settings
) -> None:
    app = build_app(settings, channels=[])
    client = await aiohttp_client(app)

    store = app[PARTS].store
    ids = []
    for name in ("one", "two", "three"):
        candidate = Candidate(
            kind="create",
            name=name,
            description=f"{name} skill",
            content_hash=name,
            content="Body.",
            generated_at=1.0,
        )
        ids.append((await store.add_proposal(candidate, None)).id)
    await store.transition(ids[2], from_status="pending", to_status="rejected", by="web", at=2.0)
    m = await scrape(client)
    assert m[key("skillgate_proposals", status="pending")] == 2
    assert m[key("skillgate_proposals", status="rejected")] == 1


async def test_metrics_need_the_token_unless_asked_locally(
    aiohttp_client: Callable[..., TestClient], settings: Settings
) -> None:
    client = await aiohttp_client(build_app(settings, channels=[]))
    assert (await client.get("/metrics")).status == 200  # direct from 127.0.0.1
    # Through a reverse proxy every request looks local; the forwarding header gives it away.
    assert (await client.get("/metrics", headers=PROXIED)).status == 401
    wrong = {**PROXIED, "Authorization": "Bearer nope"}
    assert (await client.get("/metrics", headers=wrong)).status == 401
    assert (await client.get("/metrics", headers={**PROXIED, **AUTH})).status == 200


async def test_each_app_counts_on_its_own(
    aiohttp_client: Callable[..., TestClient], settings: Settings, fake_llm: FakeOpenAI
) -> None:
    first, second = FakeChannel(settings), FakeChannel(settings)
    client_a = await aiohttp_client(build_app(settings, channels=[first]))
    client_b = await aiohttp_client(build_app(settings, channels=[second]))
    await first.accept("1", "c1", "hello")
    await first.wait_sent(1)
    assert (await scrape(client_a))[key("skillgate_updates_received_total", channel="fake")] == 1
    assert key("skillgate_updates_received_total", channel="fake") not in await scrape(client_b)


async def test_counters_are_still_served_when_the_database_is_gone(
    aiohttp_client: Callable[..., TestClient], settings: Settings
) -> None:
    app = build_app(settings, channels=[])
    client = await aiohttp_client(app)
    store = app[PARTS].store
    await store.close()
    try:
        resp = await client.get("/metrics")
        assert resp.status == 200
        assert "skillgate_answers_total" in await resp.text()
    finally:
        await store.open()  # so the app's own shutdown can close it
