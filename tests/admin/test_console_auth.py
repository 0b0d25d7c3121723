"""The console's sign-in, session cookie and CSRF protection, over HTTP."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable

import aiohttp
from aiohttp.test_utils import TestClient
from yarl import URL

from gateway.admin import console_auth
from gateway.app import PARTS, build_app
from gateway.config import Settings
from tests.console_support import TOKEN, csrf_of, seed_proposals, sign_in
from tests.fakes.openai_server import FakeOpenAI
from tests.synthesis_support import gateway, synth_settings


def session_cookie(client: TestClient) -> str:
    return next(c.value for c in client.session.cookie_jar if c.key == console_auth.COOKIE)


async def test_pages_redirect_to_sign_in_and_the_admin_token_opens_them(
    aiohttp_client: Callable[..., TestClient], settings: Settings
) -> None:
    client = await aiohttp_client(build_app(settings, channels=[]))
    resp = await client.get("/admin/skills?x=1", allow_redirects=False)
    assert resp.status == 303
    location = URL(resp.headers["Location"])
    assert (location.path, location.query["next"]) == ("/admin/login", "/admin/skills?x=1")
    resp = await client.get("/admin", allow_redirects=False)
    assert (resp.status, resp.headers["Location"]) == (308, "/admin/")

    resp = await client.post(
        "/admin/login", data={"token": TOKEN, "next": "/admin/skills"}, allow_redirects=False
    )
    assert (resp.status, resp.headers["Location"]) == (303, "/admin/skills")
    cookie = resp.cookies[console_auth.COOKIE]
    assert cookie["httponly"] and cookie["samesite"] == "Strict" and cookie["path"] == "/admin"
    assert not cookie["secure"]  # plain http on loopback: the browser must send it back
    assert TOKEN not in cookie.value

    resp = await client.get("/admin/skills")
    assert resp.status == 200
    page = await resp.text()
    assert "writing-for-chat" in page and "Sign out" in page
    assert resp.headers["Cache-Control"] == "no-store"
    assert "frame-ancestors 'none'" in resp.headers["Content-Security-Policy"]
    # The JSON API still wants its bearer token, cookie or not.
    assert (await client.get("/admin/api/skills")).status == 401


async def test_a_wrong_token_is_refused_after_a_pause_and_opens_nothing(
    aiohttp_client: Callable[..., TestClient], settings: Settings
) -> None:
    client = await aiohttp_client(build_app(settings, channels=[]))
    started = time.monotonic()
    resp = await client.post("/admin/login", data={"token": "admin-secret-tokem"})
    assert resp.status == 401
    assert time.monotonic() - started >= console_auth.SIGN_IN_SECONDS
    assert "That is not the admin token." in await resp.text()
    assert console_auth.COOKIE not in resp.cookies
    resp = await client.get("/admin/proposals", allow_redirects=False)
    assert resp.status == 303


async def test_tampered_expired_and_foreign_cookies_are_refused(
    aiohttp_client: Callable[..., TestClient], settings: Settings
) -> None:
    client = await aiohttp_client(build_app(settings, channels=[]))
    key = console_auth.console_key(TOKEN)
    good = console_auth.issue_session(key)
    expires = good.split(".")[1]
    forged = good.replace(f".{expires}.", f".{int(expires) + 10**6}.", 1)
    expired = console_auth.issue_session(key, now=time.time() - console_auth.SESSION_SECONDS - 1)
    other_token = console_auth.issue_session(console_auth.console_key("an-older-admin-token"))
    # Minted with the key by hand, valid for a century: signed right, but no session lasts so.
    century = console_auth.issue_session(key, lifetime=100 * 365 * 86400)
    for value in (forged, expired, other_token, century, "v1.99999999999.x.", "junk"):
        resp = await client.get(
            "/admin/feedback", cookies={console_auth.COOKIE: value}, allow_redirects=False
        )
        assert resp.status == 303, value
        assert resp.headers["Location"].startswith("/admin/login")
    resp = await client.get("/admin/login", cookies={console_auth.COOKIE: expired})
    assert resp.status == 200 and "Sign out" not in await resp.text()
    resp = await client.get("/admin/feedback", cookies={console_auth.COOKIE: good})
    assert resp.status == 200
    resp = await client.get(
        "/admin/login?next=/admin/runs",
        cookies={console_auth.COOKIE: good},
        allow_redirects=False,
    )
    assert (resp.status, resp.headers["Location"]) == (303, "/admin/runs")


async def test_a_post_without_the_cookie_or_with_a_bad_form_token_changes_nothing(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with gateway(synth_settings(make_settings, fake_llm)) as gw:
        ids = await seed_proposals(gw, fake_llm)
        url = f"/admin/proposals/{ids['create']}/approve"
        resp = await gw.client.post(url, data={"csrf": "anything"})
        assert resp.status == 403
        assert "Sign in" in await resp.text()

        csrf = await sign_in(gw.client)
        for form, headers in (
            ({}, {}),
            ({"csrf": "not-the-token"}, {}),
            ({"csrf": csrf[:-1]}, {}),
            ({"csrf": csrf}, {"Origin": "https://evil.example"}),
            ({"csrf": csrf}, {"Referer": "https://evil.example/page"}),
        ):
            resp = await gw.client.post(url, data=form, headers=headers)
            assert resp.status == 403, (form, headers)
        _, detail = await gw.call("GET", f"/proposals/{ids['create']}")
        assert detail["status"] == "pending"
        assert not (gw.skills_dir / "chat-brevity" / "SKILL.md").exists()

        # The same form with the right token, from this site, goes through.
        origin = str(gw.client.make_url("/")).rstrip("/")
        resp = await gw.client.post(url, data={"csrf": csrf}, headers={"Origin": origin})
        assert resp.status == 200 and resp.url.path == f"/admin/proposals/{ids['create']}"
        assert (await gw.call("GET", f"/proposals/{ids['create']}"))[1]["status"] == "approved"


async def test_the_form_token_belongs_to_one_session_and_sign_out_ends_it(
    aiohttp_client: Callable[..., TestClient], settings: Settings
) -> None:
    client = await aiohttp_client(build_app(settings, channels=[]))
    csrf = await sign_in(client)
    cookie = session_cookie(client)
    client.session.cookie_jar.clear()
    await sign_in(client)  # a second session: the first one's token does not fit it
    resp = await client.post("/admin/logout", data={"csrf": csrf})
    assert resp.status == 403

    page = await (await client.get("/admin/skills")).text()
    second = session_cookie(client)
    resp = await client.post("/admin/logout", data={"csrf": csrf_of(page)})
    assert resp.status == 200 and "You are signed out." in await resp.text()
    assert (await client.get("/admin/skills", allow_redirects=False)).status == 303
    # Sign-out ends that session on the server too: a copy of its cookie opens nothing,
    # and the sign-in page does not send it on as if it were signed in.
    client.session.cookie_jar.clear()
    stolen = {console_auth.COOKIE: second}
    resp = await client.get("/admin/skills", cookies=stolen, allow_redirects=False)
    assert resp.status == 303 and resp.headers["Location"].startswith("/admin/login")
    resp = await client.get("/admin/login", cookies=stolen, allow_redirects=False)
    assert resp.status == 200
    # Another browser's session is its own, and goes on.
    client.session.cookie_jar.clear()
    resp = await client.get("/admin/skills", cookies={console_auth.COOKIE: cookie})
    assert resp.status == 200


async def test_405s_and_redirects_carry_the_framing_headers(
    aiohttp_client: Callable[..., TestClient], settings: Settings
) -> None:
    client = await aiohttp_client(build_app(settings, channels=[]))
    await sign_in(client)
    for method, path in (
        ("GET", "/admin/logout"),
        ("PUT", "/admin/skills"),
        ("POST", "/healthz"),
        ("GET", "/admin/proposals/1/approve"),
    ):
        resp = await client.request(method, path, allow_redirects=False)
        assert resp.headers["X-Frame-Options"] == "DENY", (method, path, resp.status)
        assert resp.headers["X-Content-Type-Options"] == "nosniff"
        if path.startswith("/admin"):
            assert "frame-ancestors 'none'" in resp.headers["Content-Security-Policy"]
    assert (await client.get("/admin/logout", allow_redirects=False)).status == 405


async def test_the_console_is_off_without_an_admin_token(
    aiohttp_client: Callable[..., TestClient], make_settings: Callable[..., Settings]
) -> None:
    client = await aiohttp_client(build_app(make_settings(), channels=[]))
    for method, path in (("GET", "/admin/"), ("GET", "/admin/login"), ("POST", "/admin/login")):
        resp = await client.request(method, path, data={"token": ""})
        assert resp.status == 503
        assert "SKILLGATE_ADMIN_TOKEN" in await resp.text()
    css = await client.get("/admin/static/console.css")
    assert css.status == 200 and "text/css" in css.headers["Content-Type"]


async def test_sign_in_goes_back_only_to_console_pages(
    aiohttp_client: Callable[..., TestClient], settings: Settings
) -> None:
    client = await aiohttp_client(build_app(settings, channels=[]))
    for target in ("https://evil.example/", "//evil.example/admin/", "/admin/\\evil", "/other"):
        resp = await client.post(
            "/admin/login", data={"token": TOKEN, "next": target}, allow_redirects=False
        )
        assert resp.headers["Location"] == "/admin/", target


async def test_a_secure_cookie_at_the_https_public_address(
    aiohttp_client: Callable[..., TestClient], make_settings: Callable[..., Settings]
) -> None:
    settings = make_settings(admin_token=TOKEN, public_url="https://bots.example.org")
    client = await aiohttp_client(build_app(settings, channels=[]))
    assert client.server.app[PARTS].settings.public_url == "https://bots.example.org"
    resp = await client.post(
        "/admin/login",
        data={"token": TOKEN},
        headers={"Host": "bots.example.org", "Origin": "https://bots.example.org"},
        allow_redirects=False,
    )
    assert resp.status == 303 and resp.cookies[console_auth.COOKIE]["secure"]
    # Reached directly (an SSH tunnel to the loopback port), the cookie must work over http.
    resp = await client.post("/admin/login", data={"token": TOKEN}, allow_redirects=False)
    assert resp.status == 303 and not resp.cookies[console_auth.COOKIE]["secure"]


@contextlib.asynccontextmanager
async def from_address(host: str) -> AsyncIterator[aiohttp.ClientSession]:
    """A browser on another loopback address (127.0.0.0/8 is all this machine)."""
    connector = aiohttp.TCPConnector(local_addr=(host, 0))
    async with aiohttp.ClientSession(connector=connector) as session:
        yield session


async def attempt(session: aiohttp.ClientSession, client: TestClient, token: str) -> int:
    url = client.make_url("/admin/login")
    async with session.post(url, data={"token": token}, allow_redirects=False) as resp:
        await resp.read()
        return resp.status


async def test_sign_in_attempts_are_limited_per_address_before_the_token_is_compared(
    aiohttp_client: Callable[..., TestClient], settings: Settings
) -> None:
    client = await aiohttp_client(build_app(settings, channels=[]))
    async with from_address("127.0.0.3") as guesser, from_address("127.0.0.4") as admin:
        wrong = await asyncio.gather(*(attempt(guesser, client, f"guess-{i}") for i in range(10)))
        assert wrong == [401] * 10
        # Over the limit even the right token is refused, so guessing on learns nothing.
        url = client.make_url("/admin/login")
        async with guesser.post(url, data={"token": TOKEN}, allow_redirects=False) as resp:
            assert resp.status == 429 and int(resp.headers["Retry-After"]) > 0
            assert console_auth.COOKIE not in resp.cookies
            assert "Too many sign-in attempts" in await resp.text()
        assert await attempt(admin, client, TOKEN) == 303  # another address is not held up


async def test_sign_in_attempts_are_limited_overall(
    aiohttp_client: Callable[..., TestClient], settings: Settings
) -> None:
    client = await aiohttp_client(build_app(settings, channels=[]))
    hosts = ["127.0.0.5", "127.0.0.6", "127.0.0.7"]
    async with contextlib.AsyncExitStack() as stack:
        sessions = [await stack.enter_async_context(from_address(h)) for h in hosts]
        statuses = await asyncio.gather(
            *(attempt(s, client, f"guess-{i}") for s in sessions for i in range(10))
        )
        assert statuses == [401] * 30
        late = await stack.enter_async_context(from_address("127.0.0.8"))
        assert await attempt(late, client, TOKEN) == 429


async def test_right_and_wrong_tokens_are_answered_equally_late(
    aiohttp_client: Callable[..., TestClient], settings: Settings
) -> None:
    client = await aiohttp_client(build_app(settings, channels=[]))
    times = {}
    for token in ("not-the-token", TOKEN):
        started = time.monotonic()
        await client.post("/admin/login", data={"token": token}, allow_redirects=False)
        times[token] = time.monotonic() - started
    assert min(times.values()) >= console_auth.SIGN_IN_SECONDS
    assert abs(times[TOKEN] - times["not-the-token"]) < 0.2


async def test_abandoned_guesses_hold_up_no_one(
    aiohttp_client: Callable[..., TestClient], settings: Settings
) -> None:
    client = await aiohttp_client(build_app(settings, channels=[]))
    async with from_address("127.0.0.9") as guesser, from_address("127.0.0.10") as admin:
        guesses = [asyncio.create_task(attempt(guesser, client, f"guess-{i}")) for i in range(10)]
        await asyncio.sleep(0.05)
        for task in guesses:
            task.cancel()
        await asyncio.gather(*guesses, return_exceptions=True)
        started = time.monotonic()
        assert await attempt(admin, client, "a typo of the token") == 401
        assert time.monotonic() - started < 1.0
