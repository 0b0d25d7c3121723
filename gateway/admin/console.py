"""The web console under /admin/: server-rendered pages behind a login with the admin token."""

from __future__ import annotations

import asyncio
import logging
import math
import time
from dataclasses import dataclass, field
from email.parser import BytesParser
from email.policy import HTTP
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aiohttp import web
from yarl import URL

from gateway import __version__
from gateway.admin import console_auth as auth
from gateway.admin.auth import Handler
from gateway.runtime.keys import SETTINGS, STORE

if TYPE_CHECKING:
    import jinja2

log = logging.getLogger(__name__)

HERE = Path(__file__).resolve().parent
PUBLIC_ROUTES = {"console.login", "console.login_form", "console.static"}
MAX_TOKEN_CHARS = 1024
# Headers for every console response: nothing from elsewhere, no framing, no caching of pages.
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:;"
        " form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
}


@dataclass
class ConsoleState:
    """The template environment (made for the first page) and the limits that pace
    sign-in attempts."""

    answer_seconds: float = auth.SIGN_IN_SECONDS
    sign_ins: auth.SignInLimiter = field(default_factory=auth.SignInLimiter)

    @cached_property
    def env(self) -> jinja2.Environment:
        return make_env()


CONSOLE: web.AppKey[ConsoleState] = web.AppKey("console", ConsoleState)


def make_env() -> jinja2.Environment:
    """Jinja2 and the Markdown renderer load with the first page, not with the server."""
    import jinja2

    from gateway.admin.console_format import FILTERS

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("gateway.admin", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(FILTERS)
    return env


ADMIN: web.RequestKey[str] = web.RequestKey("console.admin", str)
"""The signed-in admin's name ("" for the single token)."""


def admin_keys(request: web.Request) -> dict[str, bytes]:
    """Each admin's signing key by name; empty when no admin token is configured."""
    admins = request.config_dict[SETTINGS].admins()
    return {name: auth.console_key(token) for name, token in admins.items()}


async def signed_in(request: web.Request) -> str | None:
    """The admin whose valid, not signed-out session cookie came with the request, or None."""
    session = request.cookies.get(auth.COOKIE)
    admin = auth.session_admin(admin_keys(request), session)
    if admin is None or session is None:
        return None
    nonce, _ = auth.session_nonce(session)
    return None if await request.config_dict[STORE].signed_out(nonce) else admin


def decider(request: web.Request) -> str:
    """Who a console decision is recorded as: "web", or "web:<name>" for a named admin."""
    return auth.decider(request.get(ADMIN, ""))


def csrf_for(request: web.Request) -> str:
    """The form token of the request's session; empty when it has no valid session."""
    keys = admin_keys(request)
    session = request.cookies.get(auth.COOKIE)
    admin = auth.session_admin(keys, session)
    if admin is None or session is None:
        return ""
    return auth.csrf_token(keys[admin], session)


async def page(
    request: web.Request, template: str, *, status: int = 200, **context: Any
) -> web.Response:
    """Render a console page with the navigation's context."""
    env = request.config_dict[CONSOLE].env
    csrf = csrf_for(request)
    pending = 0
    if csrf:
        pending = (await request.config_dict[STORE].proposal_counts()).get("pending", 0)
    static = request.app.router["console.static"]
    assert isinstance(static, web.StaticResource)
    body = env.get_template(template).render(
        csrf=csrf,
        csrf_field=auth.CSRF_FIELD,
        logged_in=bool(csrf),
        admin_name=request.get(ADMIN) or None,
        pending_count=pending,
        version=__version__,
        static=lambda name: static.url_for(filename=name, append_version=True),
        **context,
    )
    return web.Response(text=body, status=status, content_type="text/html")


async def refuse(request: web.Request, status: int, title: str, message: str) -> web.Response:
    return await page(request, "error.html", status=status, title=title, message=message)


@web.middleware
async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Login, session and CSRF checks in front of every console route."""
    if request.path == "/admin":  # the sub-application also receives its bare prefix
        raise web.HTTPPermanentRedirect("/admin/")
    route = request.match_info.route.name
    if route == "console.static":
        return await handler(request)
    response = await _guarded(request, handler, route)
    response.headers.update(SECURITY_HEADERS)
    if response.content_type == "text/html":
        response.headers["Cache-Control"] = "no-store"
    return response


UPLOAD: web.RequestKey[dict[str, str | tuple[str, bytes]]] = web.RequestKey("console.upload")


async def uploaded_form(request: web.Request) -> dict[str, str | tuple[str, bytes]]:
    """A multipart form's fields: text, or (file name, bytes) for a file; parsed once.

    Every body is read before the handler (within its deadline and the 1 MiB limit), and
    aiohttp parses multipart only from the unread stream, so the bytes read are parsed here
    with the standard library's MIME parser.
    """
    if UPLOAD in request:
        return request[UPLOAD]
    raw = await request.read()
    head = f"Content-Type: {request.headers.get('Content-Type', '')}\r\n\r\n".encode("latin-1")
    message = BytesParser(policy=HTTP).parsebytes(head + raw)
    if not message.is_multipart():
        raise ValueError("not a multipart form")
    fields: dict[str, str | tuple[str, bytes]] = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        if not isinstance(name, str) or name in fields:
            continue
        payload = part.get_payload(decode=True)
        data = payload if isinstance(payload, bytes) else b""
        filename = part.get_filename()
        fields[name] = (filename, data) if filename is not None else data.decode("utf-8", "replace")
    request[UPLOAD] = fields
    return fields


async def _guarded(request: web.Request, handler: Handler, route: str | None) -> web.StreamResponse:
    keys = admin_keys(request)
    if not keys:
        return await page(request, "disabled.html", status=503)
    public_url = request.config_dict[SETTINGS].public_url
    posting = request.method not in ("GET", "HEAD")
    if posting and not auth.same_origin(request, public_url):
        return await refuse(request, 403, "Refused", "This form was sent from another site.")
    if route in PUBLIC_ROUTES:
        return await handler(request)
    session = request.cookies.get(auth.COOKIE)
    admin = await signed_in(request)
    if admin is None:
        if not posting:
            raise web.HTTPSeeOther(URL("/admin/login").with_query(next=request.path_qs))
        return await refuse(
            request, 403, "Not signed in", "Your session has ended. Sign in and try again."
        )
    assert session is not None
    request[ADMIN] = admin
    key = keys[admin]
    if posting:
        try:
            if request.content_type == "multipart/form-data":  # an upload
                field: object = (await uploaded_form(request)).get(auth.CSRF_FIELD)
            else:
                field = (await request.post()).get(auth.CSRF_FIELD)
            given = field if isinstance(field, str) else None
        except ValueError:
            given = None
        if not isinstance(given, str) or not auth.csrf_ok(key, session, given):
            return await refuse(
                request, 403, "Refused", "The form's security token did not match. Reload the page."
            )
    try:
        return await handler(request)
    except web.HTTPNotFound:
        return await refuse(request, 404, "Not found", "There is nothing at this address.")


async def login_form(request: web.Request) -> web.Response:
    """The sign-in page; straight on for a browser that is signed in already."""
    target = auth.safe_next(request.query.get("next"))
    if await signed_in(request) is not None:
        raise web.HTTPSeeOther(target)
    return await page(
        request,
        "login.html",
        next=target,
        error=None,
        signed_out="signed_out" in request.query,
    )


async def login(request: web.Request) -> web.StreamResponse:
    """Check the token: a session cookie on success, a refusal otherwise, both equally late.

    Attempts are counted per client address and overall before any token is compared;
    one over either limit is refused at once (429) without comparing it. An admitted
    attempt, right or wrong, is answered `answer_seconds` after it arrived, and no
    attempt waits for another, so abandoned requests hold nobody up.
    """
    started = asyncio.get_running_loop().time()
    settings = request.config_dict[SETTINGS]
    state = request.config_dict[CONSOLE]
    admins = settings.admins()  # not empty: the guard answered already otherwise
    try:
        form = await request.post()
    except ValueError:
        raise web.HTTPBadRequest(text="not a valid form") from None
    target = auth.safe_next(str(form.get("next") or ""))
    wait = state.sign_ins.admit(request.remote or "")
    if wait:
        log.warning("console sign-in attempts over the limit from %s", request.remote)
        response = await page(
            request,
            "login.html",
            status=429,
            next=target,
            error=f"Too many sign-in attempts. Try again in {math.ceil(wait)} s.",
            signed_out=False,
        )
        response.headers["Retry-After"] = str(math.ceil(wait))
        return response
    given = form.get("token")
    admin = None
    if isinstance(given, str) and len(given) <= MAX_TOKEN_CHARS:
        admin = auth.token_admin(given, admins)
    await asyncio.sleep(
        max(0.0, started + state.answer_seconds - asyncio.get_running_loop().time())
    )
    if admin is not None:
        response = web.HTTPSeeOther(target)
        key = auth.console_key(admins[admin])
        session = auth.issue_session(key, admin=admin)
        auth.set_session_cookie(response, request, session, settings.public_url)
        log.info("console sign-in by %s from %s", admin or "the admin token", request.remote)
        raise response
    log.warning("console sign-in refused from %s", request.remote)
    return await page(
        request,
        "login.html",
        status=401,
        next=target,
        error="That is not the admin token.",
        signed_out=False,
    )


async def logout(request: web.Request) -> web.StreamResponse:
    """End the session for good (recorded server-side) and forget its cookie here."""
    session = request.cookies.get(auth.COOKIE)
    if session is not None:  # the guard let this POST through, so the cookie is valid
        nonce, expires = auth.session_nonce(session)
        await request.config_dict[STORE].sign_out(nonce, float(expires), time.time())
    response = web.HTTPSeeOther("/admin/login?signed_out")
    auth.clear_session_cookie(response)
    raise response


async def home(request: web.Request) -> web.StreamResponse:
    """The console opens on the review queue."""
    raise web.HTTPSeeOther("/admin/proposals")
