"""Numbered schema migrations, applied in order and recorded in `schema_migrations`.

A migration is never edited once released; change the schema by appending one.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable

from sqlite_utils import Database

Migration = tuple[int, str, Callable[[Database], None]]


def _initial(db: Database) -> None:
    db.execute(
        """
        create table inbox (
            id integer primary key autoincrement,
            channel text not null,
            update_id text not null,
            chat_key text not null,
            payload text not null,
            received_at real not null,
            processed_at real,
            attempts integer not null default 0,
            last_error text,
            unique (channel, update_id)
        )
        """
    )
    db.execute("create index inbox_pending on inbox (processed_at, id)")
    db.execute(
        """
        create table sessions (
            id integer primary key autoincrement,
            channel text not null,
            chat_id text not null,
            user_id text,
            started_at real not null,
            last_activity_at real not null,
            finished_at real,
            finish_reason text
        )
        """
    )
    db.execute("create index sessions_chat on sessions (channel, chat_id, finished_at)")
    db.execute("create index sessions_finished on sessions (finished_at)")
    db.execute(
        """
        create table messages (
            id integer primary key autoincrement,
            session_id integer not null references sessions(id),
            role text not null check (role in ('user', 'assistant')),
            text text not null,
            kind text not null default 'normal' check (kind in ('normal', 'error', 'notice')),
            platform_message_ids text not null default '[]',
            inbox_id integer,
            created_at real not null
        )
        """
    )
    db.execute("create index messages_session on messages (session_id, id)")
    db.execute("create index messages_inbox on messages (inbox_id, role)")
    db.execute(
        """
        create table traces (
            message_id integer primary key references messages(id),
            skills_offered text not null default '[]',
            skills_loaded text not null default '[]',
            tools_used text not null default '[]',
            completed integer not null,
            error text,
            latency_ms integer not null default 0,
            prompt_tokens integer not null default 0,
            completion_tokens integer not null default 0,
            model text
        )
        """
    )
    db.execute(
        """
        create table feedback (
            id integer primary key autoincrement,
            message_id integer not null references messages(id),
            channel text not null,
            chat_id text not null,
            user_id text not null,
            rating integer not null check (rating in (-1, 1)),
            comment text,
            created_at real not null,
            updated_at real not null,
            unique (message_id, user_id)
        )
        """
    )
    db.execute(
        """
        create table skills (
            slug text primary key,
            source text not null check (source in ('bundled', 'custom', 'auto')),
            enabled integer not null default 1,
            review_status text not null default 'live',
            content_hash text not null,
            created_at real not null,
            updated_at real not null
        )
        """
    )
    db.execute("create table meta (key text primary key, value text not null)")


def _awaiting(db: Database) -> None:
    # A question the bot asked and whose answer must not be treated as a normal turn
    # (what went wrong after 👎, a rejection's reason). One open question per user and chat.
    db.execute(
        """
        create table awaiting (
            channel text not null,
            chat_id text not null,
            user_id text not null,
            purpose text not null,
            ref text not null,
            prompt_message_id text,
            expires_at real not null,
            created_at real not null,
            primary key (channel, chat_id, user_id)
        )
        """
    )


def _deliveries(db: Database) -> None:
    # One row per batch of messages sent for one answer or notice. The push retry key is
    # stored before the call, so a retry after a crash reuses it (the platform answers 409
    # instead of sending twice), and a batch marked sent is never sent again.
    db.execute(
        """
        create table deliveries (
            channel text not null,
            ref text not null,
            batch integer not null,
            retry_key text not null,
            sent_at real,
            platform_ids text not null default '[]',
            created_at real not null,
            primary key (channel, ref, batch)
        )
        """
    )


def _synthesis(db: Database) -> None:
    # Review state must outlive restarts: proposals and their decisions, tombstones
    # (never deleted), replaced skill texts for rollback, consumed sessions, runs and
    # a leased lock so that two processes never synthesize at once.
    db.execute(
        """
        create table synthesis_runs (
            id integer primary key autoincrement,
            trigger text not null,
            status text not null default 'running'
                check (status in ('running', 'ok', 'failed')),
            started_at real not null,
            finished_at real,
            sessions integer not null default 0,
            skipped integer not null default 0,
            batches integer not null default 0,
            proposed integer not null default 0,
            suppressed integer not null default 0,
            refused integer not null default 0,
            model text,
            prompt_tokens integer not null default 0,
            completion_tokens integer not null default 0,
            error text
        )
        """
    )
    db.execute(
        """
        create table proposals (
            id integer primary key autoincrement,
            run_id integer references synthesis_runs(id),
            kind text not null check (kind in ('create', 'update')),
            target text,
            name text not null,
            description text not null,
            content text not null,
            content_hash text not null,
            change_text text not null default '',
            base_hash text,
            based_on text not null default '[]',
            rationale text not null default '',
            model text,
            generated_at real not null,
            status text not null default 'pending' check (status in
                ('pending', 'approved', 'applied', 'rejected', 'stale', 'rolled_back')),
            decided_by text,
            decided_at real,
            reason text,
            promoted_at real
        )
        """
    )
    db.execute("create index proposals_status on proposals (status, id)")
    db.execute("create index proposals_name on proposals (name, status)")
    db.execute(
        """
        create table rejections (
            id integer primary key autoincrement,
            proposal_id integer references proposals(id),
            kind text not null,
            target text,
            name text not null,
            description text not null,
            content_hash text not null,
            change_text text not null default '',
            reason text,
            decided_by text,
            rejected_at real not null
        )
        """
    )
    db.execute("create index rejections_hash on rejections (content_hash)")
    db.execute(
        """
        create table skill_versions (
            id integer primary key autoincrement,
            slug text not null,
            content text not null,
            content_hash text not null,
            replaced_at real not null,
            proposal_id integer references proposals(id)
        )
        """
    )
    db.execute("create index skill_versions_proposal on skill_versions (proposal_id, id)")
    db.execute(
        """
        create table consumed_sessions (
            session_id integer primary key references sessions(id),
            run_id integer references synthesis_runs(id),
            consumed_at real not null
        )
        """
    )
    db.execute(
        "create table locks (name text primary key, holder text not null, expires_at real not null)"
    )


def _cards(db: Database) -> None:
    # One row per proposal card per admin chat. The row is written before the card is
    # sent (claimed_at) and marked after (delivered_at, the platform's message id), so a
    # restart never sends a delivered card again; `shown_*` is what that copy shows now,
    # so a decision (or a reason given later) is reflected on every copy exactly once.
    db.execute(
        """
        create table card_deliveries (
            id integer primary key autoincrement,
            proposal_id integer not null references proposals(id),
            channel text not null,
            chat_id text not null,
            platform_message_id text,
            claimed_at real not null,
            delivered_at real,
            shown_status text,
            shown_reason text,
            unique (proposal_id, channel, chat_id)
        )
        """
    )
    db.execute("create index card_deliveries_sent on card_deliveries (delivered_at)")
    # Readable names of the people who decide ("telegram:123" -> "Alice (@alice)").
    db.execute(
        """
        create table reviewer_names (
            decider text primary key,
            name text not null,
            updated_at real not null
        )
        """
    )


_KIND_CHECK = "check (kind in ('create', 'update'))"
_KIND_CHECK_V6 = "check (kind in ('create', 'update', 'retire'))"


def _skill_effects(db: Database) -> None:
    # The trace records the skills the holdout withheld from a turn.
    db.execute("alter table traces add column skills_withheld text not null default '[]'")
    # A skill is measured from when its current text took effect. Triggers keep that time,
    # so every writer of registry rows (sync, review, rollback) keeps it without knowing.
    db.execute("alter table skills add column content_since real")
    db.execute("update skills set content_since = updated_at")
    db.execute(
        """
        create trigger skills_content_since_insert after insert on skills
        begin
            update skills set content_since = coalesce(new.content_since, new.updated_at)
            where slug = new.slug;
        end
        """
    )
    db.execute(
        """
        create trigger skills_content_since_update after update of content_hash on skills
        when old.content_hash is not new.content_hash
        begin
            update skills set content_since = new.updated_at where slug = new.slug;
        end
        """
    )
    _allow_retire(db)


def _allow_retire(db: Database) -> None:
    """Rebuild `proposals` with the `retire` kind: same columns, rows, ids, sequence, indexes."""
    # SQLite cannot change a CHECK constraint in place, and foreign keys cannot be turned
    # off inside this transaction. So: copy the rows aside, drop the table (the references
    # of rejections, skill_versions and any other table are violated, deferred), create it
    # again from its stored definition with the new check (columns added by other
    # migrations survive), and put the rows back, which satisfies those references again.
    table_sql = db.execute(
        "select sql from sqlite_master where type = 'table' and name = 'proposals'"
    ).fetchone()[0]
    if _KIND_CHECK not in table_sql:
        raise sqlite3.DatabaseError("unexpected definition of the proposals table")
    extras = [
        r[0]
        for r in db.execute(
            "select sql from sqlite_master where tbl_name = 'proposals'"
            " and type in ('index', 'trigger') and sql is not null"
        ).fetchall()
    ]
    for (table,) in db.execute("select name from sqlite_master where type = 'table'").fetchall():
        for fk in db.execute(f"pragma foreign_key_list('{table}')").fetchall():
            # Dropping the table would fire such actions on rows that must stay.
            if fk[2] == "proposals" and fk[6].upper() not in ("NO ACTION", "RESTRICT"):
                raise sqlite3.DatabaseError(f"{table} references proposals with on delete {fk[6]}")
    seq = db.execute("select seq from sqlite_sequence where name = 'proposals'").fetchone()
    db.execute("pragma defer_foreign_keys = on")
    db.execute("create temp table proposals_rows as select * from proposals")
    db.execute("drop table proposals")
    db.execute(table_sql.replace(_KIND_CHECK, _KIND_CHECK_V6))
    db.execute("insert into proposals select * from temp.proposals_rows order by id")
    db.execute("drop table temp.proposals_rows")
    if seq is not None:
        db.execute(
            "update sqlite_sequence set seq = max(seq, ?) where name = 'proposals'", [seq[0]]
        )
    for sql in extras:
        db.execute(sql)
    if db.execute("pragma foreign_key_check").fetchall():
        raise sqlite3.IntegrityError("foreign keys broken while rebuilding proposals")


def _inbox_claims(db: Database) -> None:
    # Several replicas on one database claim updates: who works on one, and until when
    # (a replica that dies leaves its claim to expire). Unused while one process runs.
    db.execute("alter table inbox add column claimed_by text")
    db.execute("alter table inbox add column lease_until real")
    db.execute(
        "create index inbox_chat_pending on inbox (chat_key, channel, id)"
        " where processed_at is null"
    )


MIGRATIONS: list[Migration] = [
    (1, "initial schema", _initial),
    (2, "questions awaiting an answer", _awaiting),
    (
        3,
        "proposals, rejections, synthesis runs, skill versions, consumed sessions, run lock",
        _synthesis,
    ),
    (4, "outgoing message batches and their retry keys", _deliveries),
    (5, "proposal cards sent to admins, and reviewers' names", _cards),
    (
        6,
        "skill effects: withheld skills in traces, measurement start, retire proposals",
        _skill_effects,
    ),
    (7, "inbox claims: which replica works on an update, and until when", _inbox_claims),
]


def migrate(db: Database, migrations: list[Migration] | None = None) -> list[int]:
    """Apply every migration not yet recorded; returns the versions applied now."""
    steps = MIGRATIONS if migrations is None else migrations
    db.execute(
        "create table if not exists schema_migrations ("
        "version integer primary key, name text not null, applied_at real not null)"
    )
    done = {row["version"] for row in db.query("select version from schema_migrations")}
    applied = []
    for version, name, step in sorted(steps, key=lambda m: m[0]):
        if version in done:
            continue
        with db.atomic():
            step(db)
            db.table("schema_migrations").insert(
                {"version": version, "name": name, "applied_at": time.time()}
            )
        applied.append(version)
    return applied
