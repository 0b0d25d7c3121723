"""Console pages for review: proposals with their diff and provenance, decisions, skills."""

from __future__ import annotations

import logging

from aiohttp import web

from gateway.admin.console import decider, page, refuse, uploaded_form
from gateway.admin.console_diff import side_by_side
from gateway.admin.params import positive
from gateway.errors import ProposalNotFound, SkillError, SkillNotFound
from gateway.review.answers import MAX_REASON, REVIEW_ERRORS, not_applied_because, refusal
from gateway.review.cards import tool_line, tool_warnings, warning_of
from gateway.review.proposals import Proposal
from gateway.review.reviewer import Reviewer, live_proposal
from gateway.review.trials import trial_lines
from gateway.runtime.keys import CATALOG, REVIEW, STORE, SYNTHESIZER, TRANSFER
from gateway.skills.library import SLUG_RE, Skill, parse_skill
from gateway.store.proposals import ProposalQueries

log = logging.getLogger(__name__)

PER_PAGE = 50
DONE = ("approved", "applied", "rolled_back")
OUTCOMES = ("approved", "applied", "rejected", "stale", "rolled_back", "reopened", "decided")
SWITCHES = ("disabled", "enabled")


def page_number(request: web.Request) -> int:
    """The `page` query parameter, 1 when absent or not a sensible number."""
    return positive(request.query.get("page", "1"), 10**6 - 1) or 1


def proposal_id(request: web.Request) -> int:
    found = positive(request.match_info["id"])
    if found is None:
        raise web.HTTPNotFound()
    return found


# The title of the page that says an operation on a proposal was not carried out.
NOT_DONE = {
    "approve": "Not approved",
    "reject": "Not rejected",
    "reopen": "Not reopened",
    "rollback": "Not rolled back",
}


async def refused(request: web.Request, exc: Exception, pid: int, operation: str) -> web.Response:
    """The review error `exc` as a page (404 for a proposal that is gone), per the review table."""
    found = refusal(exc)
    if found.answer == "gone":
        raise web.HTTPNotFound() from None
    title = NOT_DONE[operation]
    if found.answer == "refused":
        return await refuse(request, found.status, title, str(exc))
    # Nothing changed and the proposal is as it was: try again once there is room.
    log.exception("%s: proposal #%d", title, pid)
    message = f"Not applied: {not_applied_because(exc)} ({exc})."
    return await refuse(request, found.status, title, message)


async def get_proposal(review: Reviewer, pid: int) -> Proposal:
    try:
        return await review.get(pid)
    except ProposalNotFound:
        raise web.HTTPNotFound() from None


async def text_before(review: Reviewer, store: ProposalQueries, p: Proposal) -> str:
    """What the proposal changes: the live text, or what its approval replaced."""
    if p.status in DONE:
        version = await store.replaced_version(p.id)
        return version.content if version else ""  # an approved create replaced nothing
    return review.staging.live_text(p.slug) or ""


async def can_roll_back(review: Reviewer, store: ProposalQueries, p: Proposal) -> bool:
    """True for an approved update that is still the live text and kept what it replaced."""
    if p.kind != "update" or p.status not in ("approved", "applied"):
        return False
    if live_proposal(review.staging.live_text(p.slug)) != p.id:
        return False
    return await store.replaced_version(p.id) is not None


async def proposals(request: web.Request) -> web.Response:
    """Pending proposals first, then the decided ones, newest first."""
    store = request.config_dict[STORE]
    number = page_number(request)
    rows = await store.review_queue(limit=PER_PAGE + 1, offset=(number - 1) * PER_PAGE)
    shown = rows[:PER_PAGE]
    return await page(
        request,
        "proposals.html",
        active="proposals",
        pending=[p for p in shown if p.status == "pending"],
        decided=[p for p in shown if p.status != "pending"],
        page_no=number,
        more=len(rows) > PER_PAGE,
    )


def proposal_tools(review: Reviewer, p: Proposal) -> list[tuple[str, list[str]]]:
    """Each tool the proposed skill names with its live policy, and what to weigh about it."""
    live = review.tool_directory()
    return [(tool_line(n, live.get(n)), tool_warnings(n, live.get(n))) for n in p.allowed_tools]


async def proposal(request: web.Request) -> web.Response:
    """One proposal: rationale, provenance, the side-by-side diff and the decision forms."""
    review, store = request.config_dict[REVIEW], request.config_dict[STORE]
    p = await get_proposal(review, proposal_id(request))
    diff = side_by_side(await text_before(review, store, p), await review.proposed_text(p))
    outcome = request.query.get("outcome")
    return await page(
        request,
        "proposal.html",
        active="proposals",
        p=p,
        diff=diff,
        sessions=await store.sessions_by_id(p.based_on),
        deleted=await store.deleted_sessions(p.based_on),
        ratings=await store.feedback_by_session(p.based_on),
        can_roll_back=await can_roll_back(review, store, p),
        repeats=await store.repeats_of(p.id),
        outcome=outcome if outcome in OUTCOMES else None,
        max_reason=MAX_REASON,
        tools=proposal_tools(review, p),
        warning=await warning_of(p, review, store),
        trial_lines=trial_lines(p.trial) if p.trial is not None else [],
        trial_pairs=await store.trial_pairs(p.id) if p.trial is not None else [],
    )


async def form_reason(request: web.Request) -> str | None:
    value = (await request.post()).get("reason")
    if value is not None and (not isinstance(value, str) or len(value) > MAX_REASON):
        raise web.HTTPBadRequest(text=f"a reason is text of at most {MAX_REASON} characters")
    return value


async def approve(request: web.Request) -> web.StreamResponse:
    """Approve: the same review operation as a tap in chat."""
    review = request.config_dict[REVIEW]
    pid = proposal_id(request)
    try:
        result = await review.approve(pid, decider(request))
    except REVIEW_ERRORS as exc:
        return await refused(request, exc, pid, "approve")
    raise web.HTTPSeeOther(f"/admin/proposals/{pid}?outcome={result.outcome}")


async def reject(request: web.Request) -> web.StreamResponse:
    """Reject with an optional reason, once confirmed; the tombstone keeps it out of later passes.

    A rejection stands until reopened, so the first POST only asks: the confirmation page
    carries the reason on to a second POST with `confirmed=yes`.
    """
    review = request.config_dict[REVIEW]
    pid = proposal_id(request)
    reason = await form_reason(request)
    if (await request.post()).get("confirmed") != "yes":
        p = await get_proposal(review, pid)
        if p.status != "pending":
            raise web.HTTPSeeOther(f"/admin/proposals/{pid}?outcome=decided")
        return await page(
            request,
            "confirm_reject.html",
            active="proposals",
            p=p,
            reason=(reason or "").strip(),
            max_reason=MAX_REASON,
        )
    try:
        result = await review.reject(pid, decider(request), reason)
    except REVIEW_ERRORS as exc:
        return await refused(request, exc, pid, "reject")
    raise web.HTTPSeeOther(f"/admin/proposals/{pid}?outcome={result.outcome}")


async def reopen(request: web.Request) -> web.StreamResponse:
    """Take back a rejection with an optional reason: the proposal waits for review again."""
    review = request.config_dict[REVIEW]
    pid = proposal_id(request)
    reason = await form_reason(request)
    try:
        result = await review.reopen(pid, decider(request), reason)
    except REVIEW_ERRORS as exc:
        return await refused(request, exc, pid, "reopen")
    raise web.HTTPSeeOther(f"/admin/proposals/{pid}?outcome={result.outcome}")


async def rollback(request: web.Request) -> web.StreamResponse:
    """Put back the text an approved update replaced."""
    review = request.config_dict[REVIEW]
    pid = proposal_id(request)
    reason = await form_reason(request)
    try:
        result = await review.rollback(pid, decider(request), reason)
    except REVIEW_ERRORS as exc:
        return await refused(request, exc, pid, "rollback")
    raise web.HTTPSeeOther(f"/admin/skills/{result.proposal.slug}?outcome={result.outcome}")


async def skills(request: web.Request) -> web.Response:
    """Every registered skill with its state, use and 👍 rate."""
    store, catalog = request.config_dict[STORE], request.config_dict[CATALOG]
    descriptions: dict[str, str | None] = {}
    records = await store.skill_records()
    for rec in records:
        try:
            descriptions[rec.slug] = catalog.library.read(rec.slug).description
        except SkillError:
            descriptions[rec.slug] = None
    return await page(
        request,
        "skills.html",
        active="skills",
        records=records,
        descriptions=descriptions,
        effects=await request.config_dict[SYNTHESIZER].effects(),
        pending={p.slug: p.id for p in await store.pending_proposals()},
        switches=await store.last_switches(),
    )


async def skill(request: web.Request) -> web.Response:
    """One skill: its live text, use, proposals and replaced versions, with rollback."""
    review, store = request.config_dict[REVIEW], request.config_dict[STORE]
    slug = request.match_info["slug"]
    if not SLUG_RE.match(slug):
        raise web.HTTPNotFound()
    record = await store.get_skill_record(slug)
    text = review.staging.live_text(slug)
    history = await store.skill_proposals(slug)
    if record is None and text is None and not history:
        raise web.HTTPNotFound()
    rollback_id = None
    for p in history:
        if await can_roll_back(review, store, p):
            rollback_id = p.id
            break
    parsed: Skill | None = None
    if text is not None:
        try:
            parsed = parse_skill(text)
        except SkillError:
            parsed = None  # shown as its source only
    outcome = request.query.get("outcome")
    return await page(
        request,
        "skill.html",
        parsed=parsed,
        active="skills",
        slug=slug,
        record=record,
        text=text,
        history=history,
        deleted=await store.deleted_sessions([sid for p in history for sid in p.based_on]),
        versions=await store.skill_versions(slug),
        switches=await store.skill_switches(slug),
        effect=(await request.config_dict[SYNTHESIZER].effects()).get(slug),
        thresholds=request.config_dict[SYNTHESIZER].config.effect,
        rollback_id=rollback_id,
        outcome=outcome if outcome in OUTCOMES + SWITCHES else None,
        max_reason=MAX_REASON,
    )


async def switch(request: web.Request) -> web.StreamResponse:
    """Disable or enable a skill by hand; only its registry row changes, never its files."""
    slug = request.match_info["slug"]
    if not SLUG_RE.match(slug):
        raise web.HTTPNotFound()
    enabled = request.match_info["action"] == "enable"
    reason = await form_reason(request)
    try:
        await request.config_dict[REVIEW].switch(slug, enabled, decider(request), reason)
    except SkillNotFound:
        raise web.HTTPNotFound() from None
    raise web.HTTPSeeOther(f"/admin/skills/{slug}?outcome={'enabled' if enabled else 'disabled'}")


async def import_skill(request: web.Request) -> web.StreamResponse:
    """An uploaded SKILL.md or .zip/.skill as a proposal; its page, or why it was refused."""
    try:
        upload = (await uploaded_form(request)).get("file")
    except ValueError:
        upload = None
    if not isinstance(upload, tuple) or not upload[1]:
        return await refuse(request, 400, "Not imported", "Choose a SKILL.md or a .zip to upload.")
    name, data = (upload[0] or "upload")[:200], upload[1]
    try:
        done = await request.config_dict[TRANSFER].import_bytes(
            data, name, f"console ({decider(request)})"
        )
    except SkillError as exc:
        return await refuse(request, 422, "Not imported", f"{name}: {exc}")
    if done.proposal_id is None:
        return await refuse(request, 422, "Not imported", f"{name}: {done.refusal}")
    raise web.HTTPSeeOther(f"/admin/proposals/{done.proposal_id}")


async def export_skill(request: web.Request) -> web.StreamResponse:
    """An approved skill as a .zip of its folder, to carry to another install."""
    slug = request.match_info["slug"]
    if not SLUG_RE.match(slug):
        raise web.HTTPNotFound()
    try:
        data = await request.config_dict[TRANSFER].export_zip(slug)
    except SkillNotFound:
        raise web.HTTPNotFound() from None
    except SkillError as exc:
        return await refuse(request, 409, "Not exported", str(exc))
    return web.Response(
        body=data,
        content_type="application/zip",
        headers={"Content-Disposition": f'attachment; filename="{slug}.zip"'},
    )


def add_routes(app: web.Application) -> None:
    app.router.add_get("/proposals", proposals)
    app.router.add_get("/proposals/{id}", proposal)
    app.router.add_post("/proposals/{id}/approve", approve)
    app.router.add_post("/proposals/{id}/reject", reject)
    app.router.add_post("/proposals/{id}/rollback", rollback)
    app.router.add_post("/proposals/{id}/reopen", reopen)
    app.router.add_get("/skills", skills)
    app.router.add_post("/skills/import", import_skill)
    app.router.add_get("/skills/{slug}/export", export_skill)
    app.router.add_get("/skills/{slug}", skill)
    app.router.add_post("/skills/{slug}/{action:disable|enable}", switch)
