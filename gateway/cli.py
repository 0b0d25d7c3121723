"""The `skillgate` command: serve, chat, synthesize, doctor."""

from __future__ import annotations

import argparse
import asyncio
import getpass
import sys
from collections.abc import Sequence

from gateway import __version__
from gateway.config import Settings, load_settings
from gateway.errors import ConfigError


def _settings() -> Settings:
    try:
        return load_settings()
    except ConfigError as exc:
        print(f"skillgate: {exc}", file=sys.stderr)
        raise SystemExit(2) from None


def cmd_serve(args: argparse.Namespace) -> int:
    """Run the HTTP server (webhooks, health, admin)."""
    from aiohttp import web

    from gateway.app import build_app
    from gateway.logs import setup_logging

    settings = _settings()
    if args.polling:
        settings = settings.model_copy(update={"telegram_polling": True})
    setup_logging(settings.log_level, settings.secrets())
    print(f"skillgate {__version__} listening on http://{args.host}:{args.port}", file=sys.stderr)
    web.run_app(
        build_app(settings),
        host=args.host,
        port=args.port,
        print=None,
        access_log=None,
        shutdown_timeout=15,
    )
    return 0


def cmd_chat(args: argparse.Namespace) -> int:
    """Talk to the agent in the terminal, through the same core and store."""
    from gateway.cli_chat import run_chat
    from gateway.logs import setup_logging

    settings = _settings()
    setup_logging("WARNING", settings.secrets())
    return asyncio.run(run_chat(settings, user=args.user or getpass.getuser()))


def cmd_synthesize(args: argparse.Namespace) -> int:
    """Run one synthesis pass now and list the proposals it made and suppressed."""
    from gateway.cli_synthesize import run_synthesize
    from gateway.logs import setup_logging

    settings = _settings()
    setup_logging("WARNING", settings.secrets())
    return asyncio.run(run_synthesize(settings))


def cmd_doctor(args: argparse.Namespace) -> int:
    """Check settings, data dir, database, model and channels; say how to fix what is wrong."""
    from gateway.doctor import run_doctor

    try:
        settings = load_settings()
    except ConfigError as exc:
        print(f"FAIL settings: {exc}\n     fix: correct the variable in the environment or .env")
        return 1
    return asyncio.run(run_doctor(settings))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="skillgate",
        description="Telegram and LINE chat-bot gateway that learns skills under human review.",
    )
    parser.add_argument("--version", action="version", version=f"skillgate {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    serve = sub.add_parser("serve", help=cmd_serve.__doc__, description=cmd_serve.__doc__)
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8080, help="port to bind (default 8080)")
    serve.add_argument(
        "--polling",
        action="store_true",
        help="receive Telegram updates by polling instead of the webhook (development)",
    )
    serve.set_defaults(func=cmd_serve)

    chat = sub.add_parser("chat", help=cmd_chat.__doc__, description=cmd_chat.__doc__)
    chat.add_argument("--user", help="who you are in the stored conversation (default: login name)")
    chat.set_defaults(func=cmd_chat)

    synthesize = sub.add_parser(
        "synthesize", help=cmd_synthesize.__doc__, description=cmd_synthesize.__doc__
    )
    synthesize.set_defaults(func=cmd_synthesize)

    doctor = sub.add_parser("doctor", help=cmd_doctor.__doc__, description=cmd_doctor.__doc__)
    doctor.set_defaults(func=cmd_doctor)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
