"""Console sessions and CSRF: stateless signed cookies, derived from the admin tokens.

A session cookie is `v1.<expiry>.<nonce>.<hmac>` for SKILLGATE_ADMIN_TOKEN, or
`v1.<expiry>.<nonce>.<name>.<hmac>` for a named admin of SKILLGATE_ADMIN_TOKENS,
signed with a key derived from that admin's token, so changing a token ends
that admin's sessions. Signing out records the session's nonce in the database
until the cookie would have expired, so a copied cookie is refused after it. The CSRF token of a
session is another HMAC of the cookie, sent in a hidden field of every form and
checked on every POST, together with Origin or Referer when the browser sends them.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import time
from collections import deque
from collections.abc import Callable, Mapping
from urllib.parse import urlsplit

from aiohttp import web

COOKIE = "skillgate_console"
COOKIE_PATH = "/admin"
SESSION_SECONDS = 12 * 3600
CLOCK_SLACK = 60
"""Seconds a cookie's expiry may lie past a full session (clocks of replicas differ a little)."""
CSRF_FIELD = "csrf"
_VERSION = "v1"
SIGN_IN_SECONDS = 0.25
"""Every sign-in attempt, right or wrong, is answered this long after it arrived."""


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def console_key(admin_token: str) -> bytes:
    """The signing key: never the token itself, and different from any other use of it."""
    return hmac.new(admin_token.encode(), b"skillgate-console", hashlib.sha256).digest()


def _sign(key: bytes, payload: str) -> str:
    return _b64(hmac.new(key, payload.encode(), hashlib.sha256).digest())


def issue_session(
    key: bytes, now: float | None = None, lifetime: float = SESSION_SECONDS, admin: str = ""
) -> str:
    """A new session cookie value for `admin` ("" for the single token), valid `lifetime` s."""
    expires = int((time.time() if now is None else now) + lifetime)
    payload = f"{_VERSION}.{expires}.{secrets.token_urlsafe(16)}"
    if admin:
        payload += f".{admin}"
    return f"{payload}.{_sign(key, payload)}"


def session_admin(
    keys: Mapping[str, bytes], value: str | None, now: float | None = None
) -> str | None:
    """Who an untampered, unexpired cookie belongs to ("" the single token), else None.

    An expiry further off than a session lasts is refused too: only a cookie minted outside
    the console (with the key, by hand) could carry one, and sign-out would have to remember
    its nonce for as long.
    """
    if not value or len(value) > 200:
        return None
    payload, _, signature = value.rpartition(".")
    version, _, rest = payload.partition(".")
    expires, _, rest = rest.partition(".")
    nonce, _, admin = rest.partition(".")
    key = keys.get(admin)
    if version != _VERSION or not expires.isdigit() or not nonce or key is None:
        return None
    if not hmac.compare_digest(
        signature.encode("utf-8", "surrogatepass"), _sign(key, payload).encode()
    ):
        return None
    at = time.time() if now is None else now
    return admin if at < int(expires) <= at + SESSION_SECONDS + CLOCK_SLACK else None


def session_nonce(value: str) -> tuple[str, int]:
    """The nonce and expiry of a cookie `session_admin` accepted (what sign-out records)."""
    _, expires, nonce = value.split(".")[:3]
    return nonce, int(expires)


def csrf_token(key: bytes, session: str) -> str:
    """The form token that belongs to one session cookie."""
    return _sign(key, f"csrf:{session}")


def csrf_ok(key: bytes, session: str, given: str) -> bool:
    """Constant-time check of a submitted form token."""
    return hmac.compare_digest(
        given.encode("utf-8", "surrogatepass"), csrf_token(key, session).encode()
    )


def token_ok(given: str, admin_token: str) -> bool:
    """Constant-time comparison of a typed token with the configured one."""
    return hmac.compare_digest(given.encode("utf-8", "surrogatepass"), admin_token.encode())


def token_admin(given: str, admins: Mapping[str, str]) -> str | None:
    """The admin whose token this is ("" the single token), comparing with every one."""
    found = None
    for name, token in admins.items():
        if token_ok(given, token):
            found = name
    return found


def decider(admin: str) -> str:
    """How a decision made in the console or the admin API records its maker."""
    return f"web:{admin}" if admin else "web"


def same_origin(request: web.Request, public_url: str | None) -> bool:
    """False when Origin (or, without it, Referer) names another site than this one."""
    allowed = {request.host.lower()}
    if public_url:
        allowed.add(urlsplit(public_url).netloc.lower())
    for header in ("Origin", "Referer"):
        value = request.headers.get(header)
        if value is None:
            continue
        if value == "null":
            return False
        return urlsplit(value).netloc.lower() in allowed
    return True  # neither header: SameSite=Strict and the form token still protect


def cookie_secure(request: web.Request, public_url: str | None) -> bool:
    """Secure over https, and when reached at the https public URL through a TLS proxy.

    X-Forwarded-Proto is not trusted; a console reached directly over plain http
    (an SSH tunnel to 127.0.0.1) gets a cookie the browser will send back.
    """
    if request.secure:
        return True
    if public_url and public_url.lower().startswith("https://"):
        return urlsplit(public_url).netloc.lower() == request.host.lower()
    return False


def set_session_cookie(
    response: web.StreamResponse, request: web.Request, value: str, public_url: str | None
) -> None:
    response.set_cookie(
        COOKIE,
        value,
        max_age=SESSION_SECONDS,
        path=COOKIE_PATH,
        httponly=True,
        samesite="Strict",
        secure=cookie_secure(request, public_url),
    )


def clear_session_cookie(response: web.StreamResponse) -> None:
    response.del_cookie(COOKIE, path=COOKIE_PATH)


def safe_next(value: str | None) -> str:
    """Where to go after login: a console path only, never another site."""
    if (
        not value
        or not value.startswith("/admin/")
        or value.startswith("/admin/login")
        or "//" in value
        or "\\" in value
        or any(ord(c) < 0x20 for c in value)
    ):
        return "/admin/"
    return value


class SignInLimiter:
    """Sign-in attempts admitted per client address and overall, in a sliding window.

    Checked before any token is compared, so a guess over the limit learns nothing,
    and nothing waits in a queue: an attempt is admitted at once or refused at once.
    """

    def __init__(
        self,
        per_client: int = 10,
        overall: int = 30,
        window: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
        max_clients: int = 10_000,
    ) -> None:
        self.per_client = per_client
        self.overall = overall
        self.window = window
        self.clock = clock
        self.max_clients = max_clients
        self._all: deque[float] = deque()
        self._by_client: dict[str, deque[float]] = {}

    def admit(self, client: str) -> float:
        """0 when this attempt may go on (and counts); else the seconds until one may."""
        now = self.clock()
        horizon = now - self.window
        while self._all and self._all[0] <= horizon:
            self._all.popleft()
        mine = self._by_client.get(client)
        if mine is not None:
            while mine and mine[0] <= horizon:
                mine.popleft()
        if mine is not None and len(mine) >= self.per_client:
            return mine[0] - horizon
        if len(self._all) >= self.overall:
            return self._all[0] - horizon
        if mine is None:
            if len(self._by_client) >= self.max_clients:
                self._forget_idle(horizon)
            mine = self._by_client.setdefault(client, deque())
        mine.append(now)
        self._all.append(now)
        return 0.0

    def _forget_idle(self, horizon: float) -> None:
        for name in [n for n, q in self._by_client.items() if not q or q[-1] <= horizon]:
            del self._by_client[name]
        while len(self._by_client) >= self.max_clients:  # all busy: the oldest goes
            del self._by_client[next(iter(self._by_client))]
