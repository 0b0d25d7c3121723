"""The HTTP server: /healthz and the admin API's authentication."""

from __future__ import annotations

from collections.abc import Callable

from aiohttp.test_utils import TestClient

from gateway.app import PARTS, build_app
from gateway.config import Settings

AUTH = {"Authorization": "Bearer admin-secret-token"}


async def test_healthz_reports_database_channels_and_model(
    aiohttp_client: Callable[..., TestClient], settings: Settings
) -> None:
    client = await aiohttp_client(build_app(settings, channels=[]))
    resp = await client.get("/healthz")
    assert resp.status == 200
    body = await resp.json()
    assert body["status"] == "ok"
    assert body["database"] == "ok"
    assert body["channels"] == {}
    assert body["model"] == {
        "configured": True,
        "name": "fake-model",
        "answered_at_start": None,
        "state": "unknown",  # no chat call yet: nothing known of its health
    }
    assert body["skills_enabled"] >= 3


async def test_healthz_says_when_no_model_is_configured(
    aiohttp_client: Callable[..., TestClient], make_settings: Callable[..., Settings]
) -> None:
    client = await aiohttp_client(build_app(make_settings(), channels=[]))
    body = await (await client.get("/healthz")).json()
    assert body["model"]["configured"] is False
    assert body["status"] == "ok"


async def test_healthz_is_503_when_the_database_is_gone(
    aiohttp_client: Callable[..., TestClient], settings: Settings
) -> None:
    app = build_app(settings, channels=[])
    client = await aiohttp_client(app)
    store = app[PARTS].store
    await store.close()
    resp = await client.get("/healthz")
    assert resp.status == 503
    assert (await resp.json())["database"] == "unreachable"
    await store.open()  # so the app's own shutdown can close it


async def test_admin_api_needs_the_bearer_token(
    aiohttp_client: Callable[..., TestClient], settings: Settings
) -> None:
    client = await aiohttp_client(build_app(settings, channels=[]))
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic x"}):
        resp = await client.get("/admin/api/skills", headers=headers)
        assert resp.status == 401
    resp = await client.get("/admin/api/skills", headers=AUTH)
    assert resp.status == 200
    skills = await resp.json()
    assert {s["name"] for s in skills} >= {"writing-for-chat", "summarize-text"}
    assert all(s["source"] == "bundled" and s["enabled"] for s in skills)


async def test_admin_api_is_off_without_a_configured_token(
    aiohttp_client: Callable[..., TestClient], make_settings: Callable[..., Settings]
) -> None:
    client = await aiohttp_client(build_app(make_settings(), channels=[]))
    resp = await client.get("/admin/api/feedback", headers=AUTH)
    assert resp.status == 401
    assert "SKILLGATE_ADMIN_TOKEN" in (await resp.json())["error"]


async def test_feedback_listing_validates_its_paging(
    aiohttp_client: Callable[..., TestClient], settings: Settings
) -> None:
    client = await aiohttp_client(build_app(settings, channels=[]))
    assert (await client.get("/admin/api/feedback?limit=x", headers=AUTH)).status == 400
    assert (await client.get("/admin/api/feedback?limit=0", headers=AUTH)).status == 400
    resp = await client.get("/admin/api/feedback?limit=5", headers=AUTH)
    assert resp.status == 200 and await resp.json() == []
