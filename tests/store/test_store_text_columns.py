"""Every text column of the schema, on SQLite and PostgreSQL, is reviewed for users' words.

A column that can hold what a user wrote, or who they are, must be covered by /forget and
retention (`FORGOTTEN`: the row goes, or the value is blanked, with the user or with the
sessions retention deletes; proved by the every-row searches of tests/conversation/
test_forget.py, test_forget_leaves_nothing.py and tests/runtime/test_retention.py).
`LEARNED` holds text the learning loop derived from conversations: /forget withdraws a
pending proposal's words, retention takes those of a proposal rejected or stale before its
cutoff (and their repeat notices'); a live skill's text, its versions and the rejections'
tombstones (what keeps a rejected idea from being proposed again) stay as provenance
(docs/SECURITY.md, T5). Everything else is on the reviewed allowlist `NO_USER_WORDS`.

A new table or column holding text fails this test until it is put in one of the three,
so a future table that holds users' words cannot be added without /forget and retention
being thought of.
"""

from __future__ import annotations

from gateway.store import Store
from gateway.store.sql import Conn

FORGOTTEN = {
    # A trial's pair: the rated answer, its question and comment, the new answer, the judge's
    # reason; deleted with the rated answer (store/privacy.py, with the user or retention).
    "trial_pairs.question",
    "trial_pairs.before_text",
    "trial_pairs.after_text",
    "trial_pairs.comment",
    "trial_pairs.why",
    # A conversation and what it holds: deleted with its session (retention) or the user.
    "sessions.channel",
    "sessions.chat_id",
    "sessions.user_id",
    "messages.text",
    "messages.user_id",
    "messages.platform_message_id",
    "messages.platform_message_ids",
    "attachments.name",
    "attachments.note",
    "attachments.content",
    "attachments.source",
    "attachments.kept",
    "traces.notes",
    "traces.tool_calls",
    "traces.error",
    "deliveries.ref",
    "deliveries.platform_ids",
    "deliveries.retry_key",
    "feedback.chat_id",
    "feedback.user_id",
    "feedback.comment",
    "feedback.comment_message_id",
    "awaiting.chat_id",
    "awaiting.user_id",
    "awaiting.ref",
    "awaiting.prompt_message_id",
    "inbox.update_id",
    "inbox.chat_key",
    "inbox.payload",
    "inbox.last_error",
    "group_lines.chat_id",
    "group_lines.user_id",
    "group_lines.user_name",
    "group_lines.text",
    "quota_counts.subject",
    # What a user set or the platform said of them.
    "user_memory.user_id",
    "user_memory.text",
    "memory_opt_ins.chat_id",
    "memory_opt_ins.user_id",
    "user_names.user_id",
    "user_names.name",
    "user_languages.user_id",
    "user_voices.user_id",
    "user_timezones.user_id",
    "user_timezones.timezone",
    "chat_languages.chat_id",
    "chat_languages.set_by",
    "chat_personas.chat_id",
    "chat_personas.text",
    "chat_personas.set_by",
    "reviewer_names.decider",
    "reviewer_names.name",
    # Tools, cards and reminders in a user's chat.
    "tool_confirmations.chat_id",
    "tool_confirmations.user_id",
    "tool_confirmations.arguments",
    "card_deliveries.chat_id",
    "card_deliveries.platform_message_id",
    "repeat_notice_copies.chat_id",
    "repeat_notice_copies.platform_message_id",
    "scheduled_tasks.chat_id",
    "scheduled_tasks.user_id",
    "scheduled_tasks.text",
    "task_runs.detail",
    # Notes keyed by chat: a LINE chat's files (by sender), the last album.
    "meta.key",
    "meta.value",
}

LEARNED = {
    "proposals.name",
    "proposals.description",
    "proposals.content",
    "proposals.change_text",
    "proposals.rationale",
    "proposals.based_on",
    "proposals.possibly_same",
    "proposals.reason",
    "proposals.reopen_reason",
    "proposals.statement",
    "rejections.name",
    "rejections.description",
    "rejections.change_text",
    "rejections.reason",
    "rejections.reopen_reason",
    "rejections.statement",
    "repeat_notice_items.name",
    "repeat_notice_items.description",
    "repeat_notice_items.content",
    "run_dropped.name",
    "run_dropped.detail",
    "run_dropped.reason",
    "same_claim_checks.name",
    "same_claim_checks.compared",
    "same_claim_checks.reason",
    "skill_versions.content",
    "skill_files.description",
    "skill_switches.reason",
    "deleted_sessions.reason",
}

NO_USER_WORDS = {
    # A trial's counts, verdict and reason with its proposal; which side, arm and outcome.
    "proposals.trial",
    "trial_pairs.side",
    "trial_pairs.arm",
    "trial_pairs.outcome",
    # An imported skill's address and files: what an operator brought in, not users' words.
    "proposals.origin",
    "proposals.files",
    # Which platform, kinds, states and outcomes: words of the code, not of users.
    *(
        f"{table}.channel"
        for table in (
            "awaiting",
            "card_deliveries",
            "chat_languages",
            "chat_personas",
            "deliveries",
            "feedback",
            "group_lines",
            "inbox",
            "memory_opt_ins",
            "repeat_notice_copies",
            "scheduled_tasks",
            "tool_confirmations",
            "user_languages",
            "user_memory",
            "user_names",
            "user_timezones",
            "user_voices",
        )
    ),
    "attachments.kind",
    "attachments.mime",
    "attachments.sent_as",
    "awaiting.purpose",
    "card_deliveries.shown_status",
    "card_deliveries.shown_reason",
    "chat_languages.language",
    "user_languages.tag",
    "user_voices.mode",
    "messages.role",
    "messages.kind",
    "sessions.finish_reason",
    "quota_counts.day",
    "quota_counts.scope",
    "inbox.claimed_by",
    "locks.name",
    "locks.holder",
    "console_signouts.nonce",
    "schema_migrations.name",
    "judge_calibrations.model",
    "judge_calibrations.kind",
    "judge_calibrations.pairs_hash",
    # Tool calls: the tool's name and the call's state (the arguments are FORGOTTEN).
    "tool_confirmations.tool",
    "tool_confirmations.decision",
    "tool_confirmations.arguments_digest",
    "tool_usage.day",
    "tool_usage.tool",
    "tool_usage.status",
    # A trace's names of skills and tools, the model, hashes.
    "traces.skills_offered",
    "traces.skills_loaded",
    "traces.skills_withheld",
    "traces.skills_unavailable",
    "traces.tools_used",
    "traces.model",
    "traces.finish_reason",
    "traces.persona_hash",
    # Reminders: when and how they repeat, their state.
    "scheduled_tasks.kind",
    "scheduled_tasks.repeat",
    "scheduled_tasks.cron",
    "scheduled_tasks.timezone",
    "scheduled_tasks.status",
    "scheduled_tasks.claimed_by",
    "scheduled_tasks.last_outcome",
    "task_runs.outcome",
    "task_runs.holder",
    # The skill library and the review's bookkeeping: slugs, hashes, states, admins' names
    # of themselves (an admin's decision is the gateway's record, not a user's words).
    "proposals.kind",
    "proposals.target",
    "proposals.content_hash",
    "proposals.base_hash",
    "proposals.model",
    "proposals.status",
    "proposals.decided_by",
    "proposals.reopened_by",
    "proposals.allowed_tools",
    "rejections.kind",
    "rejections.target",
    "rejections.content_hash",
    "rejections.decided_by",
    "rejections.reopened_by",
    "same_claim_checks.decision",
    "same_claim_checks.matched_skill",
    "run_dropped.kind",
    "run_dropped.matched_skill",
    "skills.slug",
    "skills.source",
    "skills.review_status",
    "skills.content_hash",
    "skill_files.slug",
    "skill_files.content_hash",
    "skill_files.allowed_tools",
    "skill_looks.slug",
    "skill_looks.content_hash",
    "skill_looks.verdict",
    "skill_switches.slug",
    "skill_switches.switched_by",
    "skill_versions.slug",
    "skill_versions.content_hash",
    "synthesis_runs.trigger",
    "synthesis_runs.status",
    "synthesis_runs.model",
    "synthesis_runs.error",
    "synthesis_runs.stopped",
}


async def text_columns(store: Store) -> set[str]:
    """`table.column` of every column of the schema that can hold text."""

    async def work(c: Conn) -> set[str]:
        if c.dialect.name == "sqlite":
            found = set()
            tables = await c.fetch(
                "select name from sqlite_master where type = 'table' and name not like 'sqlite_%'"
            )
            for table in tables:
                for column in await c.fetch(
                    "select name, type from pragma_table_info(?)", table["name"]
                ):
                    kind = str(column["type"]).lower()
                    if kind == "" or any(t in kind for t in ("text", "char", "clob", "json")):
                        found.add(f"{table['name']}.{column['name']}")
            return found
        rows = await c.fetch(
            "select c.table_name, c.column_name from information_schema.columns c"
            " join information_schema.tables t on t.table_name = c.table_name"
            " and t.table_schema = c.table_schema"
            " where c.table_schema = current_schema() and t.table_type = 'BASE TABLE'"
            " and c.data_type in ('text', 'character varying', 'character', 'json', 'jsonb',"
            " 'bytea', 'ARRAY')"
        )
        return {f"{r['table_name']}.{r['column_name']}" for r in rows}

    return await store._run(work, transaction=False)


def test_the_three_lists_do_not_overlap() -> None:
    assert not FORGOTTEN & LEARNED
    assert not FORGOTTEN & NO_USER_WORDS
    assert not LEARNED & NO_USER_WORDS


async def test_every_text_column_is_reviewed_for_users_words(any_store: Store) -> None:
    columns = await text_columns(any_store)
    reviewed = FORGOTTEN | LEARNED | NO_USER_WORDS
    unreviewed = sorted(columns - reviewed)
    assert unreviewed == [], (
        "text columns nobody has reviewed for users' words: cover them in /forget and"
        " retention (store/privacy.py) and list them in FORGOTTEN, or list them in"
        f" NO_USER_WORDS if they can hold none: {unreviewed}"
    )
    assert sorted(reviewed - columns) == []  # no stale entry
