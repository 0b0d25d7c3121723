"""Admin API routes for skills from elsewhere: import as a proposal, export an approved one.

`POST /admin/api/skills/import`: a JSON body `{"url": "https://..."}`, or the file itself (a
SKILL.md or a .zip/.skill archive, `?name=` naming it) within the admin body limit. 201 with
the proposal waiting for review; 422 with the reason when it was refused or repeats a known
claim; nothing is written then. `GET /admin/api/skills/{name}/export`: the approved skill as
a .zip of its folder; 404 for no such skill, 409 for one no admin approved.
"""

from __future__ import annotations

from aiohttp import web

from gateway.admin.auth import API_ADMIN
from gateway.admin.console_auth import decider
from gateway.errors import SkillError, SkillNotFound
from gateway.runtime.keys import TRANSFER
from gateway.runtime.transfer import Imported, NotApproved
from gateway.skills.library import SLUG_RE
from gateway.web import jsonlimits


def via(request: web.Request, where: str) -> str:
    """How an import is told apart on its card: `API (web:alice)`."""
    return f"{where} ({decider(request.get(API_ADMIN, ''))})"


def imported_json(done: Imported) -> web.Response:
    if done.proposal_id is not None:
        return web.json_response(done.as_json(), status=201)
    body = {**done.as_json(), "error": f"not imported: {done.refusal}"}
    return web.json_response(body, status=422)


async def import_skill(request: web.Request) -> web.Response:
    """Import a skill as a proposal: it waits for an admin like a learned one."""
    transfer = request.config_dict[TRANSFER]
    raw = await request.read()
    try:
        if request.content_type == "application/json":
            try:
                body = jsonlimits.loads(raw)
            except ValueError:
                return web.json_response({"error": "the body is not JSON"}, status=400)
            url = body.get("url") if isinstance(body, dict) else None
            if not isinstance(url, str) or not url.startswith(("https://", "http://")):
                return web.json_response(
                    {"error": 'give {"url": "https://..."} or send the file itself'},
                    status=400,
                )
            done = await transfer.import_url(url, via(request, "API"))
        else:
            if not raw:
                return web.json_response({"error": "the body is empty"}, status=400)
            name = request.query.get("name", "upload")[:200]
            done = await transfer.import_bytes(raw, name, via(request, "API"))
    except SkillError as exc:  # ImportRefused and the library's own refusals
        return web.json_response({"error": f"not imported: {exc}"}, status=422)
    return imported_json(done)


async def export_skill(request: web.Request) -> web.Response:
    """An approved skill as a .zip of its folder, provenance in its front matter."""
    slug = request.match_info["name"]
    if not SLUG_RE.match(slug):
        return web.json_response({"error": f"no skill {slug!r}"}, status=404)
    try:
        data = await request.config_dict[TRANSFER].export_zip(slug)
    except SkillNotFound:
        return web.json_response({"error": f"no skill {slug!r}"}, status=404)
    except NotApproved as exc:
        return web.json_response({"error": str(exc)}, status=409)
    return web.Response(
        body=data,
        content_type="application/zip",
        headers={"Content-Disposition": f'attachment; filename="{slug}.zip"'},
    )


def add_routes(api: web.Application) -> None:
    """Register these routes on the admin sub-application."""
    api.router.add_post("/skills/import", import_skill)
    api.router.add_get("/skills/{name}/export", export_skill)
