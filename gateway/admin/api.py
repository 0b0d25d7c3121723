"""The admin JSON API under /admin/api (bearer SKILLGATE_ADMIN_TOKEN or a named admin's)."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any

from aiohttp import web

from gateway.admin import proposals_api, transfer_api
from gateway.admin.auth import API_ADMIN, Handler, bearer_admin, unauthorized
from gateway.admin.console_usage import channel_names, user_ref
from gateway.admin.params import int_param
from gateway.conversation.privacy import forget
from gateway.errors import SkillError
from gateway.runtime.keys import CATALOG, LINKS, REVIEW, SETTINGS, STORE, SYNTHESIZER
from gateway.usage import usage_report

log = logging.getLogger(__name__)


def iso(ts: float | None) -> str | None:
    """Epoch seconds as an ISO 8601 UTC string."""
    return None if ts is None else datetime.fromtimestamp(ts, UTC).isoformat(timespec="seconds")


@web.middleware
async def require_token(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Every admin API call needs the bearer token; without a configured token the API is off."""
    admins = request.config_dict[SETTINGS].admins()
    if not admins:
        return unauthorized(
            "admin API disabled: set SKILLGATE_ADMIN_TOKEN or SKILLGATE_ADMIN_TOKENS"
        )
    admin = bearer_admin(request, admins)
    if admin is None:
        return unauthorized("missing or wrong bearer token")
    request[API_ADMIN] = admin
    return await handler(request)


async def list_feedback(request: web.Request) -> web.Response:
    """Feedback, newest first: ?limit=&offset=."""
    store = request.config_dict[STORE]
    limit = int_param(request, "limit", 100, low=1, high=1000)
    offset = int_param(request, "offset", 0, low=0, high=10**9)
    rows = await store.list_feedback(limit=limit, offset=offset)
    return web.json_response(
        [
            {
                "id": f.id,
                "channel": f.channel,
                "chat": f.chat_id,
                "user": f.user_id,
                "message_id": f.message_id,
                "rating": f.rating,
                "comment": f.comment,
                "created": iso(f.created_at),
                "updated": iso(f.updated_at),
            }
            for f in rows
        ]
    )


async def list_skills(request: web.Request) -> web.Response:
    """Every registered skill: registry state, a pending proposal, the last approval, its effect."""
    store, catalog = request.config_dict[STORE], request.config_dict[CATALOG]
    promoted = await store.last_promotions()
    switches = await store.last_switches()
    pending = {p.slug: p.id for p in await store.pending_proposals()}
    effects = await request.config_dict[SYNTHESIZER].effects()
    evaluating = catalog.evaluating
    out: list[dict[str, Any]] = []
    for rec in await store.skill_records():
        last = promoted.get(rec.slug)
        effect = effects.get(rec.slug)
        try:
            description: str | None = catalog.library.read(rec.slug).description
        except SkillError:
            description = None
        out.append(
            {
                "name": rec.slug,
                "description": description,
                "source": rec.source,
                "enabled": rec.enabled,
                "review_status": rec.review_status,
                "content_hash": rec.content_hash,
                "updated": iso(rec.updated_at),
                "pending_proposal": pending.get(rec.slug),
                "last_approved": None
                if last is None
                else {
                    "proposal": last.id,
                    "by": last.decided_by,
                    "at": iso(last.decided_at),
                    "based_on": last.based_on,
                    "model": last.model,
                },
                "switched": None
                if (switch := switches.get(rec.slug)) is None
                else {
                    "enabled": switch.enabled,
                    "by": switch.switched_by,
                    "reason": switch.reason,
                    "at": iso(switch.switched_at),
                },
                "effect": None
                if effect is None
                else {
                    **effect.summary(),
                    "measured_since": iso(effect.since),
                    "under_evaluation": rec.slug in evaluating,
                },
            }
        )
    return web.json_response(out)


async def usage(request: web.Request) -> web.Response:
    """Usage of the last ?days= UTC days (default 30): per day, channel, model, user and chat."""
    days = int_param(request, "days", 30, low=1, high=3660)
    settings = request.config_dict[SETTINGS]
    report = await usage_report(
        request.config_dict[STORE], settings.prices(), days, media=settings.media_prices()
    )
    return web.json_response(report.as_json())


def _user(request: web.Request) -> tuple[str, str]:
    ref = user_ref(request.match_info["channel"], request.match_info["user"])
    if ref is None:
        raise web.HTTPBadRequest(
            text=json.dumps({"error": f"channel is {' or '.join(channel_names())}, and a user id"}),
            content_type="application/json",
        )
    return ref


async def export_user(request: web.Request) -> web.Response:
    """Everything stored about one user, as JSON."""
    return web.json_response(await request.config_dict[STORE].export_user(*_user(request)))


async def forget_user(request: web.Request) -> web.Response:
    """Delete everything stored about one user; what was deleted, counted."""
    ref = _user(request)
    done = await forget(
        request.config_dict[STORE],
        *ref,
        media=request.config_dict[SETTINGS].media_dir,
        review=request.config_dict[REVIEW],
        links=request.config_dict.get(LINKS),
    )
    log.info("admin API: %s deleted a %s user's data", request[API_ADMIN] or "admin", ref[0])
    return web.json_response(done.model_dump())


def admin_api() -> web.Application:
    """The sub-application mounted at /admin/api."""
    api = web.Application(middlewares=[require_token])
    api.router.add_get("/feedback", list_feedback)
    api.router.add_get("/skills", list_skills)
    api.router.add_get("/usage", usage)
    api.router.add_get("/users/{channel}/{user}", export_user)
    api.router.add_delete("/users/{channel}/{user}", forget_user)
    proposals_api.add_routes(api)
    transfer_api.add_routes(api)
    return api
