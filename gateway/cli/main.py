"""The `skillgate` command: serving, chatting, synthesis, review, and operator tools."""

from __future__ import annotations

import argparse
import asyncio
import getpass
import logging
import os
import socket
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from gateway import __version__
from gateway.channels.registry import polling
from gateway.cli.common import cli_decider, quiet, settings_of, start_logging
from gateway.cli.ops import add_ops
from gateway.config import Settings
from gateway.errors import SkillgateError
from gateway.runtime.settle import pause_collection


def listen(host: str, port: int) -> socket.socket:
    """The server's socket, bound and listening; OSError when the address is taken or bad."""
    family, _, _, _, address = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )[0]
    return socket.create_server(address, family=family, backlog=1024)


def cmd_serve(args: argparse.Namespace) -> int:
    """Run the HTTP server (webhooks, health, metrics, admin)."""
    pause_collection()  # until the server has settled
    settings = settings_of(args)
    # Bind first, then hold the data dir, then start: a taken port or a data dir in use
    # stops here with one line, before anything touches the database or the skills.
    url = f"http://{args.host}:{args.port}"
    try:
        sock = listen(args.host, args.port)
    except OSError as exc:
        # create_server adds the address to the text; the bare reason reads better.
        why = os.strerror(exc.errno) if exc.errno and exc.errno > 0 else exc.strerror or exc
        print(f"skillgate: cannot listen on {url}: {why}", file=sys.stderr)
        return 1
    from gateway.runtime.datadir import lock_data_dir

    try:
        # Where doctor on this machine reaches this server (any address: loopback).
        local = "127.0.0.1" if args.host in ("0.0.0.0", "::", "") else args.host
        host = f"[{local}]" if ":" in local else local
        here = f"http://{host}:{sock.getsockname()[1]}"
        held = None if settings.shared_database else lock_data_dir(settings.data_dir, here)
    except BaseException:
        sock.close()
        raise
    try:
        return _serve(args, settings, sock)
    finally:
        if held is not None:
            held.release()


def _serve(args: argparse.Namespace, settings: Settings, sock: socket.socket) -> int:
    from gateway.app import build_app
    from gateway.web import serving

    if args.polling:
        settings = polling(settings, on=True)
    start_logging(settings, settings.log_level, args.log_format or settings.log_format)
    from gateway.cli.banner import next_steps, show_token
    from gateway.ops.repair import console_token
    from gateway.ops.spelling import unknown_settings
    from gateway.runtime.local_model import on_board_default, supervised_model

    port = sock.getsockname()[1]
    log = logging.getLogger("gateway")
    env_file = args.env_file or Path(".env")
    for unknown in unknown_settings(env_file):
        log.warning("%s", unknown)
    settings, on_board = on_board_default(settings)
    token = None
    if args.generate_token:
        settings, token = console_token(settings, env_file)
        # The new token joins the secrets the log masks before anything is logged.
        start_logging(settings, settings.log_level, args.log_format or settings.log_format)
    with supervised_model(settings) as (settings, process):
        log.info("skillgate %s listening on http://%s:%s", __version__, args.host, port)
        for line in next_steps(settings, args.host, port, on_board=on_board):
            log.info("%s", line)
        if token is not None:
            show_token(token, env_file)
        serving.run(
            build_app(settings, settle_after_start=True, watch=True, model_process=process),
            sock,
            limits=serving.Limits(),
            shutdown_timeout=settings.shutdown_timeout_seconds,
        )
    return 0


def cmd_init(args: argparse.Namespace) -> int:
    """Set up a first run: ask for the model and the bots, check them, write a private .env."""
    from gateway.cli.init import run_init

    return run_init(args)


def cmd_chat(args: argparse.Namespace) -> int:
    """Talk to the agent in the terminal, through the same core and store."""
    from gateway.cli.chat import run_chat
    from gateway.runtime.local_model import local_model, on_board_default

    settings, _ = on_board_default(settings_of(args))
    start_logging(settings)
    with local_model(settings) as settings:
        return asyncio.run(run_chat(settings, user=args.user or getpass.getuser()))


def cmd_synthesize(args: argparse.Namespace) -> int:
    """Run one synthesis pass now and list the proposals it made and suppressed."""
    from gateway.cli.synthesize import run_synthesize
    from gateway.runtime.local_model import local_model, on_board_default

    settings, _ = on_board_default(settings_of(args))
    start_logging(settings)
    with local_model(settings) as settings:
        return asyncio.run(run_synthesize(settings))


def cmd_proposals(args: argparse.Namespace) -> int:
    """List, show, approve, reject, roll back or reopen proposals; chat cards follow."""
    from gateway.cli import review as cli_review

    settings = settings_of(args)
    start_logging(settings)
    if args.action == "list":
        return asyncio.run(cli_review.list_proposals(settings, args.status, args.limit))
    if args.action == "show":
        return asyncio.run(cli_review.show_proposal(settings, args.id))
    decider = cli_decider()
    reason = getattr(args, "reason", None)
    if args.action == "rollback":
        return asyncio.run(cli_review.rollback(settings, args.id, decider, reason))
    if args.action == "reopen":
        return asyncio.run(cli_review.reopen(settings, args.id, decider, reason))
    return asyncio.run(
        cli_review.decide(settings, args.id, decider, reject=args.action == "reject", reason=reason)
    )


def cmd_skills(args: argparse.Namespace) -> int:
    """List the registered skills, disable or enable one by hand (recorded with who and why),
    import one from elsewhere as a proposal, or export those the admins approved."""
    from gateway.cli import review as cli_review

    settings = settings_of(args)
    start_logging(settings)
    if args.action == "import":
        from gateway.cli import transfer

        return asyncio.run(transfer.run_import(settings, args.source, cli_decider()))
    if args.action == "export":
        from gateway.cli import transfer

        if bool(args.all) == bool(args.name):
            print("skillgate skills export: give NAME or --all, then DIR", file=sys.stderr)
            return 2
        names = [args.name] if args.name else []
        return asyncio.run(transfer.run_export(settings, names, args.all, Path(args.dir)))
    if args.action in ("disable", "enable"):
        enabled = args.action == "enable"
        return asyncio.run(
            cli_review.switch_skill(settings, args.name, enabled, cli_decider(), args.reason)
        )
    return asyncio.run(cli_review.list_skills(settings))


def cmd_tools(args: argparse.Namespace) -> int:
    """List the tool servers (started now), their tools, each tool's policy and any error."""
    from gateway.cli.tools import list_tools

    settings = settings_of(args)
    start_logging(settings, "ERROR")
    return asyncio.run(list_tools(settings))


def cmd_tasks(args: argparse.Namespace) -> int:
    """Scheduled tasks (reminders): list them, add one to a chat, or cancel one."""
    from gateway.cli import tasks

    settings = quiet(args)
    if args.action == "add":
        return asyncio.run(
            tasks.add_task(
                settings,
                args.channel,
                args.chat,
                args.text,
                at=args.at,
                every=args.every,
                cron=args.cron,
                timezone=args.timezone,
            )
        )
    if args.action == "cancel":
        return asyncio.run(tasks.cancel_task(settings, args.id))
    return asyncio.run(tasks.list_tasks(settings, args.all))


def _add_tasks(cmd: argparse.ArgumentParser) -> None:
    from gateway.channels.registry import platforms
    from gateway.core.task_times import REPEATS

    actions = cmd.add_subparsers(dest="action", metavar="ACTION", required=True)
    listing = actions.add_parser("list", help="tasks next due first: next and last run, outcome")
    listing.add_argument("--all", action="store_true", help="finished and cancelled ones too")
    add = actions.add_parser("add", help="a reminder sent to a chat at a time, once or repeated")
    add.add_argument("channel", choices=[p.name for p in platforms()], help="the chat's platform")
    add.add_argument("chat", help="the platform's chat id (a user's id for a private chat)")
    add.add_argument("text", help="what the reminder says")
    add.add_argument("--at", help="first time, local to --timezone: 2026-12-08T09:00")
    add.add_argument(
        "--every",
        choices=[r for r in REPEATS if r != "cron"],
        default="once",
        help="repeat from --at (default once)",
    )
    add.add_argument("--cron", help='five crontab fields, e.g. "0 8 * * 1-5" (0 or 7: Sunday)')
    add.add_argument("--timezone", help="IANA name (default SKILLGATE_DEFAULT_TIMEZONE)")
    cancel = actions.add_parser("cancel", help="cancel a task by its id")
    cancel.add_argument("id", type=int, help="the task's id (tasks list shows it)")


def _proposal_id(value: str) -> int:
    if not (value.isascii() and value.isdigit()) or int(value) < 1:
        raise argparse.ArgumentTypeError("a proposal id is a positive integer")
    return int(value)


def _add_proposals(proposals: argparse.ArgumentParser) -> None:
    from gateway.review.proposals import STATUSES

    actions = proposals.add_subparsers(dest="action", metavar="ACTION", required=True)
    listing = actions.add_parser("list", help="proposals newest first, one per line")
    listing.add_argument("--status", choices=STATUSES, help="only proposals with this status")
    listing.add_argument("--limit", type=int, default=50, help="at most this many (default 50)")
    show = actions.add_parser("show", help="the card's text and the full diff")
    show.add_argument("id", type=_proposal_id)
    approve = actions.add_parser("approve", help="promote a pending proposal")
    approve.add_argument("id", type=_proposal_id)
    reject = actions.add_parser("reject", help="reject a pending proposal (until reopened)")
    reject.add_argument("id", type=_proposal_id)
    reject.add_argument("--reason", metavar="TEXT", help="why; kept with the rejection")
    rollback = actions.add_parser(
        "rollback", help="undo an approved update (its old text back) or retirement"
    )
    rollback.add_argument("id", type=_proposal_id)
    rollback.add_argument("--reason", metavar="TEXT", help="why; kept with the rollback")
    reopen = actions.add_parser(
        "reopen", help="take back a rejection: the proposal waits for review again"
    )
    reopen.add_argument("id", type=_proposal_id)
    reopen.add_argument("--reason", metavar="TEXT", help="why; kept with the reopening")


def _add_skills(skills: argparse.ArgumentParser) -> None:
    actions = skills.add_subparsers(dest="action", metavar="ACTION", required=True)
    actions.add_parser("list", help="every registered skill with its source, status and 👍 rate")
    for action, what in (("disable", "stop offering and loading"), ("enable", "offer again")):
        switch = actions.add_parser(action, help=f"{what} a skill by hand; its files stay")
        switch.add_argument("name", help="the skill's name (its folder)")
        switch.add_argument("--reason", metavar="TEXT", help="why; kept with the switch")
    take = actions.add_parser(
        "import",
        help="a skill from elsewhere as a proposal, reviewed like a learned one",
    )
    take.add_argument(
        "source", metavar="PATH|URL", help="a skill folder, a SKILL.md, a .zip/.skill, an address"
    )
    out = actions.add_parser("export", help="write skills the admins approved as skill folders")
    out.add_argument("name", nargs="?", metavar="NAME", help="one skill (or --all)")
    out.add_argument("--all", action="store_true", help="every skill an admin approved")
    out.add_argument("dir", metavar="DIR", help="the folder to write each skill's folder in")


def cmd_usage(args: argparse.Namespace) -> int:
    """Answers, tokens and cost per day, user, chat, channel and model, and synthesis's share."""
    from gateway.cli.privacy import run_usage

    return asyncio.run(run_usage(quiet(args), args.days, args.json))


def cmd_forget(args: argparse.Namespace) -> int:
    """Delete everything stored about one user (messages, answers, ratings, stored updates)."""
    from gateway.cli.privacy import run_forget

    return asyncio.run(run_forget(quiet(args), args.channel, args.user, args.yes))


def cmd_export(args: argparse.Namespace) -> int:
    """One user's stored data as JSON (for an access request)."""
    from gateway.cli.privacy import run_export

    return asyncio.run(run_export(quiet(args), args.channel, args.user, args.output))


def cmd_retention(args: argparse.Namespace) -> int:
    """Delete conversations older than SKILLGATE_RETENTION_DAYS now (the server does it hourly)."""
    from gateway.cli.privacy import run_retention

    return asyncio.run(run_retention(quiet(args)))


def _days(value: str) -> int:
    if not value.isdigit() or not 1 <= int(value) <= 3660:
        raise argparse.ArgumentTypeError("a number of days from 1 to 3660")
    return int(value)


def _add_user(cmd: argparse.ArgumentParser) -> None:
    from gateway.channels.registry import platforms

    known = platforms()
    shapes = "; ".join(f"{p.label}: {p.user_id_hint}" for p in known)
    cmd.add_argument("channel", choices=[p.name for p in known], help="the user's platform")
    cmd.add_argument("user", help=f"the platform's user id ({shapes})")


def _labels(labels: list[str]) -> str:
    """ "A", "A and B", "A, B and C"."""
    return " and ".join(filter(None, (", ".join(labels[:-1]), labels[-1] if labels else "")))


def build_parser() -> argparse.ArgumentParser:
    from gateway.channels.registry import platforms

    known = platforms()
    parser = argparse.ArgumentParser(
        prog="skillgate",
        description=f"{_labels([p.label for p in known])} chat-bot gateway that learns skills"
        " under human review.",
    )
    parser.add_argument("--version", action="version", version=f"skillgate {__version__}")
    parser.add_argument(
        "--env-file",
        type=Path,
        metavar="PATH",
        help="read settings from this file instead of .env (e.g. /etc/skillgate/skillgate.env)",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def command(name: str, func: Callable[[argparse.Namespace], int]) -> argparse.ArgumentParser:
        cmd = sub.add_parser(name, help=func.__doc__, description=func.__doc__)
        cmd.set_defaults(func=func)
        return cmd

    from gateway.cli.init import add_arguments as init_arguments

    init_arguments(command("init", cmd_init))

    serve = command("serve", cmd_serve)
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8080, help="port to bind (default 8080)")
    serve.add_argument(
        "--polling",
        action="store_true",
        help=f"receive {_labels([p.label for p in known if p.can_poll])} updates by polling"
        " instead of the webhook (development)",
    )
    serve.add_argument(
        "--generate-token",
        action="store_true",
        help="with no SKILLGATE_ADMIN_TOKEN set: generate one into the env file and show it"
        " once, so that the console is on (./scripts/serve passes it)",
    )
    serve.add_argument(
        "--log-format",
        choices=["text", "json"],
        help="log lines as readable text or one JSON object each (default SKILLGATE_LOG_FORMAT)",
    )

    chat = command("chat", cmd_chat)
    chat.add_argument("--user", help="who you are in the stored conversation (default: login name)")

    command("synthesize", cmd_synthesize)

    usage = command("usage", cmd_usage)
    usage.add_argument("--days", type=_days, default=30, help="UTC days, today included (30)")
    usage.add_argument("--json", action="store_true", help="print the report as JSON")
    forget = command("forget", cmd_forget)
    _add_user(forget)
    forget.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    export = command("export", cmd_export)
    _add_user(export)
    export.add_argument("-o", "--output", type=Path, help="write to this file instead")
    command("retention", cmd_retention)

    _add_proposals(command("proposals", cmd_proposals))
    _add_skills(command("skills", cmd_skills))
    tools = command("tools", cmd_tools).add_subparsers(dest="action", metavar="ACTION")
    tools.required = True
    tools.add_parser("list", help="servers, tools, policies and last errors")

    _add_tasks(command("tasks", cmd_tasks))

    add_ops(command)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        return 130
    except SkillgateError as exc:  # e.g. the database unreachable at start
        print(f"skillgate: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
