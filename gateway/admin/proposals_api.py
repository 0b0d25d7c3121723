"""Admin API routes for proposals, decisions and synthesis runs (under /admin/api)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from aiohttp import web

from gateway.admin.auth import API_ADMIN
from gateway.admin.console_auth import decider
from gateway.admin.params import int_param, positive
from gateway.errors import ProposalNotFound, SkillNotFound
from gateway.review.answers import MAX_REASON, REVIEW_ERRORS, not_applied_because, refusal
from gateway.review.cards import warning_of
from gateway.review.proposals import STATUSES, Proposal
from gateway.review.reviewer import Decision
from gateway.review.staging import iso
from gateway.review.trials import TrialPair, TrialSummary, trial_lines
from gateway.runtime.keys import REVIEW, STORE, SYNTHESIZER
from gateway.skills.library import SLUG_RE
from gateway.web import jsonlimits

log = logging.getLogger(__name__)

# What a proposal is not, when an operation on it could not be carried out.
NOT_DONE = {
    "approve": "applied",
    "reject": "rejected",
    "reopen": "reopened",
    "rollback": "rolled back",
}


def _decider(request: web.Request) -> str:
    """ "web", or "web:<name>" when a named admin's token made the call."""
    return decider(request.get(API_ADMIN, ""))


def error(status: int, message: str, **extra: Any) -> web.Response:
    return web.json_response({"error": message, **extra}, status=status)


def proposal_json(p: Proposal, *, full: bool = False) -> dict[str, Any]:
    """A proposal for the API; `full` adds the body."""
    out: dict[str, Any] = {
        "id": p.id,
        "kind": p.kind,
        "target": p.target,
        "name": p.name,
        "description": p.description,
        "status": p.status,
        "based_on": p.based_on,
        "rationale": p.rationale,
        "statement": p.statement,
        "model": p.model,
        "generated": iso(p.generated_at),
        "decided_by": p.decided_by,
        "decided": iso(p.decided_at),
        "reason": p.reason,
        "run": p.run_id,
        "reopened_by": p.reopened_by,
        "reopened": iso(p.reopened_at),
        "reopen_reason": p.reopen_reason,
        "possibly_same": p.possibly_same,
        "origin": p.origin,
        "files": sorted(p.files),
    }
    if full:
        out["files"] = p.files
        out["content"] = p.content
        out["content_hash"] = p.content_hash
        out["base_hash"] = p.base_hash
    return out


def _id(request: web.Request) -> int | None:
    return positive(request.match_info["id"])


def refused(exc: Exception, pid: int, operation: str) -> web.Response:
    """The review error `exc` as a JSON error, with the status the review table gives it."""
    found = refusal(exc)
    if found.answer != "not_applied":
        return error(found.status, str(exc))
    # The files did not change and the proposal is as it was: try once there is room.
    not_done = f"proposal #{pid} was not {NOT_DONE[operation]}"
    log.exception("%s", not_done)
    return error(found.status, f"{not_done}: {not_applied_because(exc)} ({exc})")


def _decision(result: Decision) -> web.Response:
    """200 for a decision made here; 409 when it was stale or someone else decided first."""
    p = result.proposal
    body = {"outcome": result.outcome, "proposal": proposal_json(p)}
    if result.outcome == "decided":
        message = (
            f"proposal #{p.id} was already {p.status} by {p.decided_by} at {iso(p.decided_at)}"
        )
        return error(409, message, **body, decided_by=p.decided_by, decided=iso(p.decided_at))
    if result.outcome == "stale":
        return error(409, f"{p.slug} changed after proposal #{p.id} was made; it is stale", **body)
    return web.json_response(body)


async def reason_of(request: web.Request) -> str | None:
    """The optional reason from a JSON or form body; 400 when the body is malformed."""
    if not request.body_exists or not await request.read():
        return None
    if request.content_type == "application/json":
        try:
            data = jsonlimits.loads(await request.read())
        except ValueError:  # not JSON, not UTF-8, or nested too deep
            raise web.HTTPBadRequest(text="body is not valid JSON") from None
        if data is None:
            return None
        if not isinstance(data, dict):
            raise web.HTTPBadRequest(text='body must be a JSON object like {"reason": "..."}')
        value = data.get("reason")
    else:
        try:
            value = (await request.post()).get("reason")
        except ValueError:
            raise web.HTTPBadRequest(text="body is not a valid form") from None
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > MAX_REASON:
        raise web.HTTPBadRequest(text=f"reason must be text of at most {MAX_REASON} characters")
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise web.HTTPBadRequest(
                text="reason is not valid Unicode (a lone surrogate)"
            ) from None
    return value


async def list_proposals(request: web.Request) -> web.Response:
    """Proposals newest first: ?status=pending|approved|...&limit=&offset=."""
    status = request.query.get("status") or None
    if status is not None and status not in STATUSES:
        return error(400, f"status must be one of {', '.join(STATUSES)}")
    limit = int_param(request, "limit", 100, low=1, high=1000)
    offset = int_param(request, "offset", 0, low=0, high=10**9)
    store = request.config_dict[STORE]
    rows = await store.list_proposals(status, limit=limit, offset=offset)
    return web.json_response([proposal_json(p) for p in rows])


def trial_json(summary: TrialSummary | None, pairs: Sequence[TrialPair]) -> dict[str, Any] | None:
    """A proposal's trial: turns tried per side, each arm's verdicts, the verdict, the pairs."""
    if summary is None:
        return None
    return {
        "verdict": summary.verdict,
        "reason": summary.reason,
        "lines": trial_lines(summary),
        "judge": summary.judge,
        "calls": summary.calls,
        **{side: getattr(summary, side).model_dump() for side in ("fixes", "guards", "liked")},
        "pairs": [pair.model_dump() for pair in pairs],
    }


async def get_proposal(request: web.Request) -> web.Response:
    """One proposal with its body and the unified diff against the live skill."""
    pid = _id(request)
    if pid is None:
        return error(400, "a proposal id is a positive integer")
    review = request.config_dict[REVIEW]
    try:
        p = await review.get(pid)
    except ProposalNotFound as exc:
        return refused(exc, pid, "get")
    store = request.config_dict[STORE]
    deleted = await store.deleted_sessions(p.based_on)
    warning = await warning_of(p, review, store)
    pairs = await store.trial_pairs(p.id) if p.trial is not None else []
    return web.json_response(
        {
            **proposal_json(p, full=True),
            "diff": await review.diff(p),
            # What the trial before the card measured (null: not tried, e.g. a retirement).
            "trial": trial_json(p.trial, pairs),
            # An update that removes most of its skill or shares almost nothing with it.
            "warning": warning.as_json() if warning is not None else None,
            # Source sessions deleted since (retention, a user's /forget): why and when.
            "deleted_sources": [
                {"session": d.session_id, "reason": d.reason, "at": iso(d.deleted_at)}
                for d in sorted(deleted.values(), key=lambda d: d.session_id)
            ],
        }
    )


async def approve(request: web.Request) -> web.Response:
    """Promote a pending proposal."""
    pid = _id(request)
    if pid is None:
        return error(400, "a proposal id is a positive integer")
    try:
        result = await request.config_dict[REVIEW].approve(pid, _decider(request))
    except REVIEW_ERRORS as exc:
        return refused(exc, pid, "approve")
    return _decision(result)


async def reject(request: web.Request) -> web.Response:
    """Reject a pending proposal, with an optional reason (JSON or form field `reason`)."""
    pid = _id(request)
    if pid is None:
        return error(400, "a proposal id is a positive integer")
    reason = await reason_of(request)
    try:
        result = await request.config_dict[REVIEW].reject(pid, _decider(request), reason)
    except REVIEW_ERRORS as exc:
        return refused(exc, pid, "reject")
    return _decision(result)


async def reopen(request: web.Request) -> web.Response:
    """Take back a rejection, with an optional reason: the proposal waits for review again."""
    pid = _id(request)
    if pid is None:
        return error(400, "a proposal id is a positive integer")
    reason = await reason_of(request)
    try:
        result = await request.config_dict[REVIEW].reopen(pid, _decider(request), reason)
    except REVIEW_ERRORS as exc:
        return refused(exc, pid, "reopen")
    return _decision(result)


async def rollback(request: web.Request) -> web.Response:
    """Restore the text an approved update replaced."""
    pid = _id(request)
    if pid is None:
        return error(400, "a proposal id is a positive integer")
    reason = await reason_of(request)
    try:
        result = await request.config_dict[REVIEW].rollback(pid, _decider(request), reason)
    except REVIEW_ERRORS as exc:
        return refused(exc, pid, "rollback")
    return _decision(result)


async def synthesize(request: web.Request) -> web.Response:
    """Run one synthesis pass now; 409 while another pass runs."""
    summary = await request.config_dict[SYNTHESIZER].run("api")
    return web.json_response(summary.model_dump(), status=409 if summary.status == "busy" else 200)


async def list_runs(request: web.Request) -> web.Response:
    """Recent synthesis runs, newest first: ?limit=."""
    limit = int_param(request, "limit", 20, low=1, high=500)
    runs = await request.config_dict[STORE].list_runs(limit)
    return web.json_response(
        [
            {
                **r.model_dump(exclude={"started_at", "finished_at"}),
                "started": iso(r.started_at),
                "finished": iso(r.finished_at),
            }
            for r in runs
        ]
    )


async def switch_skill(request: web.Request) -> web.Response:
    """Disable or enable a registered skill by hand, with an optional reason."""
    name = request.match_info["name"]
    enabled = request.match_info["action"] == "enable"
    if not SLUG_RE.match(name):
        return error(400, "a skill name is lower-case letters, digits and hyphens")
    reason = await reason_of(request)
    try:
        record = await request.config_dict[REVIEW].switch(name, enabled, _decider(request), reason)
    except SkillNotFound as exc:
        return error(404, str(exc))
    return web.json_response(
        {
            "name": record.slug,
            "enabled": record.enabled,
            "source": record.source,
            "by": _decider(request),
            "reason": (reason or "").strip() or None,
            "updated": iso(record.updated_at),
        }
    )


async def get_run(request: web.Request) -> web.Response:
    """One synthesis run: its counts, the proposals it made, what it suppressed and refused."""
    rid = _id(request)
    if rid is None:
        return error(400, "a run id is a positive integer")
    store = request.config_dict[STORE]
    run = await store.get_run(rid)
    if run is None:
        return error(404, f"no synthesis run #{rid}")
    dropped = await store.run_dropped(rid)
    return web.json_response(
        {
            **run.model_dump(exclude={"started_at", "finished_at"}),
            "started": iso(run.started_at),
            "finished": iso(run.finished_at),
            "proposals": [proposal_json(p) for p in await store.run_proposals(rid)],
            "suppressed_items": [
                d.model_dump(exclude={"kind"}) for d in dropped if d.kind == "suppressed"
            ],
            "refused_items": [
                d.model_dump(include={"name", "reason"}) for d in dropped if d.kind == "refused"
            ],
            "same_claim_checks": [k.model_dump() for k in await store.run_checks(rid)],
        }
    )


def add_routes(api: web.Application) -> None:
    """Register these routes on the admin sub-application."""
    api.router.add_get("/proposals", list_proposals)
    api.router.add_get("/proposals/{id}", get_proposal)
    api.router.add_post("/proposals/{id}/approve", approve)
    api.router.add_post("/proposals/{id}/reject", reject)
    api.router.add_post("/proposals/{id}/rollback", rollback)
    api.router.add_post("/proposals/{id}/reopen", reopen)
    api.router.add_post("/synthesize", synthesize)
    api.router.add_get("/runs", list_runs)
    api.router.add_get("/runs/{id}", get_run)
    api.router.add_post("/skills/{name}/{action:disable|enable}", switch_skill)
