"""What every `skillgate` command shares: its settings, its logging, who it decides as."""

from __future__ import annotations

import argparse
import getpass
import sys
from pathlib import Path
from typing import IO

from gateway.config import Settings, load_settings
from gateway.errors import ConfigError


def load(args: argparse.Namespace) -> Settings:
    """Settings from the environment and the env file (default `.env`); ConfigError if invalid."""
    from gateway.channels.registry import platforms

    # Each platform's settings too, so that every bad value is named at once.
    sections = [p.section for p in platforms()]
    env_file: Path | None = args.env_file
    if env_file is None:
        return load_settings(sections=sections)
    if not env_file.is_file():
        raise ConfigError(f"env file {env_file} not found")
    return load_settings(sections=sections, _env_file=env_file)


def settings_of(args: argparse.Namespace) -> Settings:
    try:
        return load(args)
    except ConfigError as exc:
        print(f"skillgate: {exc}", file=sys.stderr)
        raise SystemExit(2) from None


def start_logging(
    settings: Settings,
    level: str = "WARNING",
    log_format: str = "text",
    stream: IO[str] | None = None,
) -> None:
    """Log (to stderr) with every configured secret, and each platform's token shapes, masked."""
    from gateway.channels.registry import sdk_loggers, secrets, token_shapes
    from gateway.logs import setup_logging

    shapes, quiet = token_shapes(), sdk_loggers()
    setup_logging(level, secrets(settings), log_format, stream, shapes=shapes, quiet=quiet)


def quiet(args: argparse.Namespace) -> Settings:
    settings = settings_of(args)
    start_logging(settings)
    return settings


def cli_decider() -> str:
    """`cli:<login>`: who a decision made in this terminal is recorded as."""
    try:
        login = getpass.getuser()
    except (OSError, KeyError):  # no login name in this environment (a bare container)
        login = "unknown"
    return f"cli:{login}"
