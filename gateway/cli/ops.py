"""The operator's commands: doctor, set-webhook, backup, restore, migrate-to-postgres."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

from gateway.cli.common import load, settings_of
from gateway.errors import ConfigError, SkillgateError

Command = Callable[[str, Callable[[argparse.Namespace], int]], argparse.ArgumentParser]


def cmd_doctor(args: argparse.Namespace) -> int:
    """Check settings, data dir, disk, database, model and the bots' webhooks; say how to fix."""
    from gateway.operator import Check
    from gateway.ops.doctor import run_doctor

    try:
        settings = load(args)
    except ConfigError as exc:
        where = args.env_file or ".env"
        check = Check(
            "settings",
            "fail",
            str(exc),
            f"correct it in {where} (or the environment), or run `skillgate init`",
        )
        if args.json:
            print(json.dumps([asdict(check)], indent=2))
        else:
            print("\n".join(check.lines()))
        return 1
    return asyncio.run(
        run_doctor(
            settings,
            as_json=args.json,
            fix=args.fix,
            env_file=args.env_file or Path(".env"),
            unit=args.unit,
            reload=lambda: settings_of(args),
        )
    )


def cmd_set_webhook(args: argparse.Namespace) -> int:
    """Register the configured platforms' webhooks at SKILLGATE_PUBLIC_URL (only what differs)."""
    from gateway.ops.webhooks import run_set_webhook

    settings = settings_of(args)
    return asyncio.run(
        run_set_webhook(
            settings,
            delete=args.delete,
            max_connections=args.max_connections,
            force=args.force,
        )
    )


def cmd_backup(args: argparse.Namespace) -> int:
    """Write the database (online copy), skills and persona to one .tar.gz archive."""
    from gateway.ops.backup import create_backup

    settings = settings_of(args)
    try:
        summary = create_backup(settings, args.path)
    except SkillgateError as exc:
        print(f"skillgate backup: {exc}", file=sys.stderr)
        return 1
    size = summary.path.stat().st_size
    print(f"wrote {summary.path} ({size // 1024 + 1} KB): {summary.describe()}")
    return 0


def cmd_restore(args: argparse.Namespace) -> int:
    """Unpack a backup archive into SKILLGATE_DATA_DIR (stop the gateway first)."""
    from gateway.ops.backup import restore_backup

    settings = settings_of(args)
    try:
        summary, aside = restore_backup(settings, args.archive, force=args.force)
    except SkillgateError as exc:
        print(f"skillgate restore: {exc}", file=sys.stderr)
        return 1
    made = f" (made {summary.created})" if summary.created else ""
    print(f"restored {summary.path}{made} into {settings.data_dir}: {summary.describe()}")
    if aside is not None:
        print(f"the previous data is in {aside}")
    return 0


def _connections(value: str) -> int:
    number = int(value)
    if not 1 <= number <= 100:
        raise argparse.ArgumentTypeError("must be between 1 and 100")
    return number


def cmd_migrate_to_postgres(args: argparse.Namespace) -> int:
    """Copy the SQLite database of SKILLGATE_DATA_DIR into an empty PostgreSQL database."""
    from gateway.ops.migrate import migrate_to_postgres

    settings = settings_of(args)
    url = args.url or (
        settings.database_url.get_secret_value() if settings.database_url is not None else None
    )
    if url is None:
        print(
            "skillgate migrate-to-postgres: set SKILLGATE_DATABASE_URL or give --url",
            file=sys.stderr,
        )
        return 2
    source = args.source or settings.db_path
    try:
        copied = asyncio.run(migrate_to_postgres(source, url))
    except SkillgateError as exc:
        print(f"skillgate migrate-to-postgres: {exc}", file=sys.stderr)
        return 1
    print(copied.describe())
    return 0


def add_ops(command: Command) -> None:
    """The operator's commands and their arguments, through the parser's `command` helper."""
    doctor = command("doctor", cmd_doctor)
    doctor.add_argument("--json", action="store_true", help="print the checks as a JSON list")
    doctor.add_argument(
        "--fix",
        action="store_true",
        help="first fix what is safe to fix (data dir mode, persona, secrets, webhooks)",
    )
    doctor.add_argument(
        "--unit",
        type=Path,
        default=Path("/etc/systemd/system/skillgate.service"),
        metavar="PATH",
        help="the systemd unit whose data dir is compared (default: %(default)s, if present)",
    )

    hook = command("set-webhook", cmd_set_webhook)
    hook.add_argument("--delete", action="store_true", help="remove the webhooks instead")
    hook.add_argument(
        "--max-connections",
        type=_connections,
        default=40,
        help="simultaneous webhook connections, where the platform has the setting, 1-100"
        " (default 40)",
    )
    hook.add_argument("--force", action="store_true", help="set everything even if unchanged")

    backup = command("backup", cmd_backup)
    backup.add_argument("path", type=Path, help="archive to write, or a folder for a dated one")

    restore = command("restore", cmd_restore)
    restore.add_argument("archive", type=Path, help="archive written by `skillgate backup`")
    restore.add_argument(
        "--force", action="store_true", help="move existing data aside instead of refusing"
    )

    migrate = command("migrate-to-postgres", cmd_migrate_to_postgres)
    migrate.add_argument("--url", help="target postgresql:// URL (default SKILLGATE_DATABASE_URL)")
    migrate.add_argument(
        "--from",
        dest="source",
        type=Path,
        metavar="PATH",
        help="SQLite file to copy (default SKILLGATE_DATA_DIR/skillgate.db)",
    )
