"""`skillgate usage`, `forget`, `export`, `retention`: usage, a user's data, old sessions."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from gateway.config import Settings
from gateway.conversation.privacy import forget
from gateway.runtime.assembly import chat_cards, close_parts, open_parts
from gateway.runtime.retention import purge_old
from gateway.store import store_for
from gateway.usage import usage_report, usage_text


async def run_usage(settings: Settings, days: int, as_json: bool) -> int:
    """Print the usage of the last `days` UTC days."""
    async with store_for(settings) as store:
        report = await usage_report(store, settings.prices(), days, media=settings.media_prices())
    print(json.dumps(report.as_json(), indent=2) if as_json else usage_text(report, top=10))
    return 0


async def run_export(settings: Settings, channel: str, user: str, out: Path | None) -> int:
    """Write one user's data as JSON to `out` (or print it)."""
    async with store_for(settings) as store:
        data = await store.export_user(channel, user)
    text = json.dumps(data, indent=2, ensure_ascii=False)
    if out is None:
        print(text)
    else:
        out.write_text(text + "\n", encoding="utf-8")
        print(f"wrote {len(data['messages'])} message(s) of {channel} user {user} to {out}")
    return 0


async def run_forget(settings: Settings, channel: str, user: str, yes: bool) -> int:
    """Delete everything about one user, after a confirmation unless `yes`."""
    if not yes:
        if not sys.stdin.isatty():
            print("skillgate forget: confirm with --yes (no terminal to ask)", file=sys.stderr)
            return 2
        answer = input(f"Delete everything stored about {channel} user {user}? [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            print("nothing deleted")
            return 1
    # The gateway's parts, not the store alone: pending proposals made from the user's
    # sessions are withdrawn, and the admins' cards say so, as from the chat or the console.
    parts = await open_parts(settings)
    try:
        async with chat_cards(parts):
            done = await forget(
                parts.store,
                channel,
                user,
                media=settings.media_dir,
                review=parts.review,
                links=parts.links,
            )
    finally:
        await close_parts(parts)
    print(
        f"deleted {channel} user {user}: {done.sessions} session(s), {done.messages} message(s),"
        f" {done.feedback} rating(s), {done.updates} stored update(s)"
    )
    return 0


async def run_retention(settings: Settings) -> int:
    """Apply SKILLGATE_RETENTION_DAYS now."""
    if settings.retention_days <= 0:
        print("SKILLGATE_RETENTION_DAYS is not set: conversations are kept")
        return 0
    # The gateway's parts, as for forget: a pending proposal whose every session goes is
    # withdrawn, and the admins' cards say so.
    parts = await open_parts(settings)
    try:
        async with chat_cards(parts):
            purged = await purge_old(
                parts.store, settings.retention_days, media=settings.media_dir, review=parts.review
            )
    finally:
        await close_parts(parts)
    print(
        f"deleted {purged.sessions} session(s) with {purged.messages} message(s)"
        f" older than {settings.retention_days} day(s)"
    )
    if purged.withdrawn:
        print(
            f"withdrew {len(purged.withdrawn)} pending proposal(s) whose every source session"
            " is deleted"
        )
    return 0
