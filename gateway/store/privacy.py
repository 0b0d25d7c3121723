"""Deleting conversations: by age (retention) or everything about one user (forget), and export.

A deleted session leaves one row in `deleted_sessions` (its id, why, when) and nothing
else, so the provenance of proposals and decisions keeps its ids and says what became
of them. A user's private chat has the user's id as its chat id on both platforms; in a
group, a message belongs to the user who wrote it or was answered (`messages.user_id`),
and an older one to the user whose stored update carried it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from gateway.conversation.content import ALBUM_META, MEDIA_META, MEDIA_SENDER
from gateway.core.records import DeletedSession, DeleteReason, Forgotten
from gateway.store.memory import delete_user_memory
from gateway.store.proposals import redact
from gateway.store.sql import Conn, QueriesBase, decode_json_fields, marks, query, transaction

BATCH = 500
"""Sessions one retention transaction deletes; the pass repeats until none is left."""
RETAINED_TEXT = "[removed: decided longer ago than the retention period allows words to be kept]"
"""What a rejected or stale proposal's words become once retention's cutoff has passed."""
SCRUBBED = "{}"
"""What the payload of the update being handled becomes when its sender is forgotten."""


def _holds(value: Any, user_id: str) -> bool:
    """Whether a decoded JSON value holds the user's id anywhere, as text or as a number."""
    if isinstance(value, dict):
        return any(_holds(v, user_id) for v in value.values())
    if isinstance(value, list):
        return any(_holds(v, user_id) for v in value)
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return str(value) == user_id
    return isinstance(value, str) and value == user_id


def _notes_without(value: str, user_id: str) -> list[Any] | None:
    """A chat's file notes (`MEDIA_META`) less the user's and any naming no sender; None
    when none of them goes."""
    try:
        notes = json.loads(value)
    except ValueError:
        return []
    if not isinstance(notes, list):
        return []
    kept = [
        n
        for n in notes
        if isinstance(n, dict) and n.get(MEDIA_SENDER) and n.get(MEDIA_SENDER) != user_id
    ]
    return None if len(kept) == len(notes) else kept


def _mentions(payload: str, user_id: str) -> bool:
    try:
        return _holds(json.loads(payload), user_id)
    except ValueError:
        return False


async def _user_updates(c: Conn, channel: str, user_id: str) -> list[dict[str, Any]]:
    """The stored updates of the channel that carry the user's id."""
    rows = await c.fetch(
        "select id, processed_at, payload from inbox where channel = ? and payload like ?",
        channel,
        f"%{user_id}%",
    )
    return [r for r in rows if _mentions(r["payload"], user_id)]


async def _delete_messages(c: Conn, ids: Sequence[int], files: list[str]) -> int:
    """Messages with their traces, attachments, ratings and delivery records.

    The kept media files (SKILLGATE_KEEP_MEDIA) that no other attachment names any more
    are added to `files`, for the caller to remove once this has committed.
    """
    if not ids:
        return 0
    wanted = list(ids)
    await c.execute(f"delete from traces where message_id in ({marks(wanted)})", *wanted)
    kept = {
        str(r["kept"])
        for r in await c.fetch(
            f"select kept from attachments where message_id in ({marks(wanted)})"
            " and kept is not null",
            *wanted,
        )
    }
    await c.execute(f"delete from attachments where message_id in ({marks(wanted)})", *wanted)
    if kept:
        names = sorted(kept)
        still = await c.fetch(
            f"select distinct kept from attachments where kept in ({marks(names)})", *names
        )
        files.extend(sorted(kept - {str(r["kept"]) for r in still}))
    await c.execute(f"delete from feedback where message_id in ({marks(wanted)})", *wanted)
    # A trial's pair holds the rated answer and the question before it.
    await c.execute(f"delete from trial_pairs where message_id in ({marks(wanted)})", *wanted)
    await c.execute(
        f"delete from deliveries where ref in ({marks(wanted)})", *(f"answer:{i}" for i in wanted)
    )
    return await c.execute(f"delete from messages where id in ({marks(wanted)})", *wanted)


async def _delete_sessions(
    c: Conn, ids: Sequence[int], reason: DeleteReason, at: float, files: list[str]
) -> tuple[int, int]:
    """Sessions and all they hold; each leaves its id in `deleted_sessions`."""
    if not ids:
        return 0, 0
    wanted = list(ids)
    messages = [
        int(r["id"])
        for r in await c.fetch(
            f"select id from messages where session_id in ({marks(wanted)})", *wanted
        )
    ]
    gone = await _delete_messages(c, messages, files)
    await c.execute(f"delete from consumed_sessions where session_id in ({marks(wanted)})", *wanted)
    await c.execute(f"delete from session_showings where session_id in ({marks(wanted)})", *wanted)
    await c.execute(f"delete from sessions where id in ({marks(wanted)})", *wanted)
    await c.executemany(
        "insert into deleted_sessions (session_id, reason, deleted_at) values (?, ?, ?)"
        " on conflict (session_id) do nothing",
        [(sid, reason, at) for sid in wanted],
    )
    return len(wanted), gone


class PrivacyQueries(QueriesBase):
    """Retention, forgetting a user, and one user's data as JSON."""

    @transaction
    async def delete_old_sessions(
        self, c: Conn, before: float, at: float
    ) -> tuple[int, int, list[str]]:
        """Delete up to BATCH sessions last active before `before`.

        Returns (sessions, messages, kept media files no attachment names any more).
        """
        ids = [
            int(r["id"])
            for r in await c.fetch(
                "select id from sessions where last_activity_at < ? order by id limit ?",
                before,
                c.dialect.limit(BATCH),
            )
        ]
        await c.execute("delete from awaiting where expires_at < ?", before)
        # Memory is kept by user, not session: an entry older than the cutoff goes by its age.
        await c.execute("delete from user_memory where created_at < ?", before)
        await c.execute("delete from group_lines where created_at < ?", before)
        # A task's record of past occurrences goes by its age; a finished task with it. A task
        # still active stays: it is what the user asked for, not a conversation.
        await c.execute("delete from task_runs where ran_at < ?", before)
        await c.execute(
            "delete from scheduled_tasks where status in ('done', 'cancelled')"
            " and coalesce(last_run_at, created_at) < ?"
            " and not exists (select 1 from task_runs r where r.task_id = scheduled_tasks.id)",
            before,
        )
        chats = (
            await c.fetch(
                f"select distinct channel, chat_id from sessions where id in ({marks(ids)})", *ids
            )
            if ids
            else []
        )
        files: list[str] = []
        sessions, messages = await _delete_sessions(c, ids, "retention", at, files)
        for chat in chats:  # a chat with no session left keeps no notes on its files either
            left = await c.fetchval(
                "select count(*) from sessions where channel = ? and chat_id = ?",
                chat["channel"],
                chat["chat_id"],
            )
            if not left:
                at_chat = {"channel": chat["channel"], "chat": chat["chat_id"]}
                keys = [meta.format(**at_chat) for meta in (ALBUM_META, MEDIA_META)]
                await c.execute(f"delete from meta where key in ({marks(keys)})", *keys)
        # The language the platform said of a user who has no conversation left.
        await c.execute(
            "delete from user_languages where checked_at < ? and not exists (select 1 from"
            " sessions s where s.channel = user_languages.channel"
            " and (s.user_id = user_languages.user_id or s.chat_id = user_languages.user_id))",
            before,
        )
        # And what else names such a user, or holds words of theirs, past the cutoff: their
        # display name, their memory opt-ins (once no memory of theirs is left either), a
        # chat's persona where the chat has no conversation left, and every tool
        # confirmation (the arguments a user was asked about) older than the cutoff.
        await c.execute(
            "delete from user_names where updated_at < ? and not exists (select 1 from"
            " sessions s where s.channel = user_names.channel"
            " and (s.user_id = user_names.user_id or s.chat_id = user_names.user_id))",
            before,
        )
        await c.execute(
            "delete from memory_opt_ins where created_at < ? and not exists (select 1 from"
            " sessions s where s.channel = memory_opt_ins.channel"
            " and (s.user_id = memory_opt_ins.user_id or s.chat_id = memory_opt_ins.user_id))"
            " and not exists (select 1 from user_memory m where m.channel ="
            " memory_opt_ins.channel and m.user_id = memory_opt_ins.user_id)",
            before,
        )
        await c.execute(
            "delete from chat_personas where set_at < ? and not exists (select 1 from"
            " sessions s where s.channel = chat_personas.channel"
            " and s.chat_id = chat_personas.chat_id)",
            before,
        )
        await c.execute("delete from tool_confirmations where created_at < ?", before)
        # A user's /voice and /timezone, and a chat's /language, set before the cutoff by a
        # user or chat with no conversation left (nor, for a timezone, a reminder to come).
        await c.execute(
            "delete from user_voices where set_at < ? and not exists (select 1 from"
            " sessions s where s.channel = user_voices.channel"
            " and (s.user_id = user_voices.user_id or s.chat_id = user_voices.user_id))",
            before,
        )
        await c.execute(
            "delete from user_timezones where set_at < ? and not exists (select 1 from"
            " sessions s where s.channel = user_timezones.channel"
            " and (s.user_id = user_timezones.user_id or s.chat_id = user_timezones.user_id))"
            " and not exists (select 1 from scheduled_tasks t where t.channel ="
            " user_timezones.channel and t.user_id = user_timezones.user_id"
            " and t.status not in ('done', 'cancelled'))",
            before,
        )
        await c.execute(
            "delete from chat_languages where set_at < ? and not exists (select 1 from"
            " sessions s where s.channel = chat_languages.channel"
            " and s.chat_id = chat_languages.chat_id)",
            before,
        )
        # A proposal rejected, or stale (withdrawn among them), before the cutoff: its words
        # (made from sessions) go, with its repeat notices'; the decision stays as a record.
        # Live skills keep theirs: an applied proposal's text is the skill's provenance.
        while ended := [
            int(r["id"])
            for r in await c.fetch(
                "select id from proposals where status in ('rejected', 'stale')"
                " and decided_at < ? and description <> ? order by id limit ?",
                before,
                RETAINED_TEXT,
                c.dialect.limit(BATCH),
            )
        ]:
            await redact(c, ended, RETAINED_TEXT)
        return sessions, messages, files

    @transaction
    async def forget_user(
        self,
        c: Conn,
        channel: str,
        user_id: str,
        at: float,
        *,
        meta_keys: Sequence[str] = (),
        handling: int | None = None,
    ) -> Forgotten:
        """Delete everything stored about one user of a channel.

        `handling`: the inbox id of the update being handled now (the confirmation), whose
        payload is blanked, since it is marked processed after this returns.
        """
        done = Forgotten()
        await c.lock(f"chat\0{channel}\0{user_id}")
        private = [
            int(r["id"])
            for r in await c.fetch(
                "select id from sessions where channel = ? and chat_id = ?", channel, user_id
            )
        ]
        updates = await _user_updates(c, channel, user_id)
        update_ids = [int(u["id"]) for u in updates]
        found = await c.fetch(
            "select m.id, m.session_id from messages m join sessions s on s.id = m.session_id"
            " where s.channel = ? and (m.user_id = ?"
            + (f" or m.inbox_id in ({marks(update_ids)})" if update_ids else "")
            + ")",
            channel,
            user_id,
            *update_ids,
        )
        theirs = [int(r["id"]) for r in found]
        done.session_ids = sorted({*private, *(int(r["session_id"]) for r in found)})
        done.sessions, in_private = await _delete_sessions(c, private, "forget", at, done.files)
        done.messages = in_private + await _delete_messages(c, theirs, done.files)
        await c.execute(
            "update sessions set user_id = null where channel = ? and user_id = ?",
            channel,
            user_id,
        )
        done.feedback = await c.execute(
            "delete from feedback where channel = ? and (user_id = ? or chat_id = ?)",
            channel,
            user_id,
            user_id,
        )
        await c.execute(
            "delete from awaiting where channel = ? and (user_id = ? or chat_id = ?)",
            channel,
            user_id,
            user_id,
        )
        subject = f"{channel}:{user_id}"
        await c.execute(
            "delete from quota_counts where (scope in ('user', 'chat') and subject = ?)"
            " or (scope = 'flag' and subject = ?)",
            subject,
            f"spoken:{subject}",
        )
        await c.execute(
            "delete from user_languages where channel = ? and user_id = ?", channel, user_id
        )
        await c.execute(
            "delete from user_voices where channel = ? and user_id = ?", channel, user_id
        )
        await c.execute(
            "delete from user_timezones where channel = ? and user_id = ?", channel, user_id
        )
        await c.execute(
            "delete from user_names where channel = ? and user_id = ?", channel, user_id
        )
        await c.execute(
            "delete from chat_languages where channel = ? and chat_id = ?", channel, user_id
        )
        await c.execute(
            "update chat_languages set set_by = null where channel = ? and set_by = ?",
            channel,
            user_id,
        )
        await c.execute("delete from reviewer_names where decider = ?", subject)
        done.memory = await delete_user_memory(c, channel, user_id)
        await c.execute(
            "delete from group_lines where channel = ? and user_id = ?", channel, user_id
        )
        await c.execute(
            "delete from chat_personas where channel = ? and chat_id = ?", channel, user_id
        )
        await c.execute("update chat_personas set set_by = null where set_by = ?", subject)
        # A tool confirmation names the user and the arguments they were asked about.
        await c.execute(
            "delete from tool_confirmations where channel = ? and (user_id = ? or chat_id = ?)",
            channel,
            user_id,
            user_id,
        )
        await c.execute(
            "delete from card_deliveries where channel = ? and chat_id = ?", channel, user_id
        )
        await c.execute(
            "delete from repeat_notice_copies where channel = ? and chat_id = ?", channel, user_id
        )
        # Scheduled tasks the user made, or that go to their private chat, with their runs.
        owned = "select id from scheduled_tasks where channel = ? and (user_id = ? or chat_id = ?)"
        await c.execute(
            f"delete from task_runs where task_id in ({owned})", channel, user_id, user_id
        )
        done.tasks = await c.execute(
            "delete from scheduled_tasks where channel = ? and (user_id = ? or chat_id = ?)",
            channel,
            user_id,
            user_id,
        )
        if meta_keys:
            keys = list(meta_keys)
            await c.execute(f"delete from meta where key in ({marks(keys)})", *keys)
        # In a group's notes on its files, the member's go (and any that name no sender).
        notes = MEDIA_META.format(channel=channel, chat="%")
        for row in await c.fetch("select key, value from meta where key like ?", notes):
            kept = _notes_without(row["value"], user_id)
            if kept is None:
                continue
            if kept:
                value = json.dumps(kept, ensure_ascii=False)
                await c.execute("update meta set value = ? where key = ?", value, row["key"])
            else:
                await c.execute("delete from meta where key = ?", row["key"])
        old = [u["id"] for u in updates if u["processed_at"] is not None and u["id"] != handling]
        if old:
            done.updates = await c.execute(f"delete from inbox where id in ({marks(old)})", *old)
        if handling is not None:
            await c.execute(
                "update inbox set payload = ?, chat_key = ? where id = ?",
                SCRUBBED,
                f"forgotten:{handling}",
                handling,
            )
        return done

    @transaction
    async def export_user(self, c: Conn, channel: str, user_id: str) -> dict[str, Any]:
        """Everything stored about one user of a channel, as JSON-ready data."""
        if c.dialect.snapshot:
            await c.execute(c.dialect.snapshot)
        messages = await c.fetch(
            "select m.id, m.session_id, s.chat_id, m.role, m.text, m.kind, m.created_at,"
            " m.unsent_at from messages m join sessions s on s.id = m.session_id"
            " where s.channel = ? and (m.user_id = ? or s.chat_id = ?) order by m.id",
            channel,
            user_id,
            user_id,
        )
        ids = [int(m["id"]) for m in messages]
        traces = (
            await c.fetch(
                "select message_id, model, prompt_tokens, completion_tokens, tokens_known,"
                " skills_loaded, completed from traces"
                f" where message_id in ({marks(ids)}) order by message_id",
                *ids,
            )
            if ids
            else []
        )
        sessions = await c.fetch(
            "select id, chat_id, started_at, last_activity_at, finished_at, finish_reason"
            " from sessions where channel = ? and (chat_id = ? or user_id = ?) order by id",
            channel,
            user_id,
            user_id,
        )
        feedback = await c.fetch(
            "select message_id, chat_id, rating, comment, created_at, updated_at from feedback"
            " where channel = ? and user_id = ? order by id",
            channel,
            user_id,
        )
        awaiting = await c.fetch(
            "select chat_id, purpose, created_at, expires_at from awaiting"
            " where channel = ? and user_id = ?",
            channel,
            user_id,
        )
        counts = await c.fetch(
            "select day, answers, tokens, cost from quota_counts where scope = 'user'"
            " and subject = ? order by day",
            f"{channel}:{user_id}",
        )
        languages = await c.fetch(
            "select tag, checked_at from user_languages where channel = ? and user_id = ?",
            channel,
            user_id,
        )
        names = await c.fetch(
            "select name, updated_at from user_names where channel = ? and user_id = ?",
            channel,
            user_id,
        )
        chosen = await c.fetch(
            "select chat_id, language, set_at from chat_languages where channel = ?"
            " and (chat_id = ? or set_by = ?)",
            channel,
            user_id,
            user_id,
        )
        memory = await c.fetch(
            "select text, created_at from user_memory where channel = ? and user_id = ?"
            " order by id",
            channel,
            user_id,
        )
        attachments = (
            await c.fetch(
                "select message_id, kind, source, mime, size, name, duration, width, height,"
                " pages, text_chars, content, sent_as, note, kept from attachments"
                f" where message_id in ({marks(ids)}) order by id",
                *ids,
            )
            if ids
            else []
        )
        tasks = await c.fetch(
            "select id, chat_id, kind, text, repeat, cron, timezone, next_at, status,"
            " created_at, last_run_at, last_outcome from scheduled_tasks"
            " where channel = ? and (user_id = ? or chat_id = ?) order by id",
            channel,
            user_id,
            user_id,
        )
        runs = (
            await c.fetch(
                "select task_id, due_at, outcome, ran_at from task_runs"
                f" where task_id in ({marks([t['id'] for t in tasks])}) order by task_id, due_at",
                *(t["id"] for t in tasks),
            )
            if tasks
            else []
        )
        zones = await c.fetch(
            "select timezone from user_timezones where channel = ? and user_id = ?",
            channel,
            user_id,
        )
        for task in tasks:
            task["runs"] = [r for r in runs if r["task_id"] == task["id"]]
        for t in traces:
            decode_json_fields(t, "skills_loaded")
            t["tokens_known"] = bool(t["tokens_known"])
            t["completed"] = bool(t["completed"])
        return {
            "channel": channel,
            "user_id": user_id,
            "display_names": names,
            "sessions": sessions,
            "messages": messages,
            "traces": traces,
            "attachments": attachments,
            "feedback": feedback,
            "awaiting": awaiting,
            "daily_counts": counts,
            "language": {"as_the_platform_says": languages, "chosen": chosen},
            "memory": memory,
            "scheduled_tasks": tasks,
            "timezone": zones[0]["timezone"] if zones else None,
        }

    @query
    async def deleted_sessions(self, c: Conn, ids: Sequence[int]) -> dict[int, DeletedSession]:
        """Which of these sessions were deleted, why and when."""
        wanted = [int(i) for i in ids if 0 < int(i) < 1 << 63]
        if not wanted:
            return {}
        rows = await c.fetch(
            f"select * from deleted_sessions where session_id in ({marks(wanted)})", *wanted
        )
        return {int(r["session_id"]): DeletedSession.model_validate(r) for r in rows}
