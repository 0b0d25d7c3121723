"""`skillgate init`: ask (or take from flags) what a first run needs, check it, write it."""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
from pathlib import Path

from pydantic import ValidationError

from gateway.config import Settings, describe_validation_error
from gateway.errors import ChannelError
from gateway.ops.init.answers import MANAGED, Answers, new_secret
from gateway.ops.init.envfile import read_values, write_private

DEFAULT_WAIT = 120.0


def add_arguments(init: argparse.ArgumentParser) -> None:
    """The flags of `skillgate init`; each value flag defaults to the variable it sets."""
    init.add_argument(
        "--non-interactive",
        action="store_true",
        help="ask nothing: take every value from the flags (or the variables of the same name)",
    )
    init.add_argument("--force", action="store_true", help="replace an existing env file")
    init.add_argument("--no-check", action="store_true", help="write without trying the services")
    for flag, var, what in (
        ("--llm-base-url", "LLM_BASE_URL", "the model's base URL, ending in /v1"),
        ("--llm-model", "LLM_MODEL", "the model's name"),
        ("--llm-api-key", "LLM_API_KEY", "the model's API key, if it needs one"),
        (
            "--local-model",
            "LLM_LOCAL_MODEL",
            "smollm2 (a tiny model on this machine, installed if missing) or a .gguf path",
        ),
        ("--telegram-token", "TELEGRAM_BOT_TOKEN", "the Telegram bot token"),
        ("--telegram-admin-ids", "TELEGRAM_ADMIN_IDS", "comma-separated Telegram user ids"),
        ("--line-channel-secret", "LINE_CHANNEL_SECRET", "the LINE channel secret"),
        ("--line-access-token", "LINE_CHANNEL_ACCESS_TOKEN", "the LINE channel access token"),
        ("--line-admin-ids", "LINE_ADMIN_IDS", "comma-separated LINE user ids"),
        ("--public-url", "SKILLGATE_PUBLIC_URL", "the https address the platforms post to"),
        ("--data-dir", "SKILLGATE_DATA_DIR", "the data dir (written only when given)"),
        ("--admin-token", "SKILLGATE_ADMIN_TOKEN", "the console's token (default: a new one)"),
        ("--webhook-secret", "TELEGRAM_WEBHOOK_SECRET", "Telegram's webhook secret (default: new)"),
    ):
        init.add_argument(flag, metavar=var, help=f"{what} (default ${var})")
    updates = init.add_mutually_exclusive_group()
    updates.add_argument(
        "--polling", dest="polling", action="store_true", default=None, help="Telegram by polling"
    )
    updates.add_argument(
        "--webhook",
        dest="polling",
        action="store_false",
        help="Telegram by webhook (the default when --public-url is given)",
    )
    init.add_argument(
        "--listen",
        default="127.0.0.1:8080",
        metavar="HOST:PORT",
        help="where the proxy forwards SKILLGATE_PUBLIC_URL, to receive the LINE admin's code"
        " (default 127.0.0.1:8080, where `skillgate serve` listens)",
    )
    init.add_argument(
        "--wait",
        type=float,
        default=DEFAULT_WAIT,
        metavar="SECONDS",
        help=f"how long to wait for an admin's /start or code (default {DEFAULT_WAIT:.0f})",
    )


def run_init(args: argparse.Namespace) -> int:
    """Exit status 0 once the env file is written; 1 when nothing was, 130 on Ctrl-C."""
    path: Path = args.env_file or Path(".env")
    try:
        return asyncio.run(_init(args, path))
    except (KeyboardInterrupt, EOFError):
        print(f"\ninit cancelled: {path} was not written", file=sys.stderr)
        return 130


async def _init(args: argparse.Namespace, path: Path) -> int:
    if not args.non_interactive and not sys.stdin.isatty():
        print(
            "skillgate init asks its questions in a terminal; in a script, pass"
            " --non-interactive and the values as flags (skillgate init --help)",
            file=sys.stderr,
        )
        return 2
    old: dict[str, str] = {}
    if path.exists():
        if args.non_interactive and not args.force:
            print(
                f"skillgate init: {path} exists; --force replaces it (the old one is kept as"
                f" {path.name}.bak)",
                file=sys.stderr,
            )
            return 1
        if not args.non_interactive:
            import questionary

            replace = await questionary.confirm(
                f"{path} exists. Replace it? (it is kept as {path.name}.bak, and its values"
                " are offered as the answers)",
                default=False,
            ).unsafe_ask_async()
            if not replace:
                print(f"{path} left as it was.")
                return 1
        old = read_values(path)
    problem = None
    if args.non_interactive:
        answers, problem = _from_flags(args)
    else:
        answers = await _interview(args, old)
    problem = problem or _incomplete(answers) or _invalid(answers)
    if problem is None and args.non_interactive and not args.no_check:
        problem = await _check(answers)
    if problem is not None:
        print(f"skillgate init: {problem}; {path} was not written", file=sys.stderr)
        return 1
    answers.kept = {k: v for k, v in old.items() if k not in MANAGED and v}
    kept = write_private(path, answers.render())
    print(f"wrote {path} (mode 600): {_summary(answers)}")
    if kept is not None:
        print(f"the previous file is {kept}")
    for line in _next_steps(answers, args.env_file):
        print(line)
    return 0


def _platform_urls() -> tuple[str, str]:
    defaults = Answers()
    return (
        os.environ.get("TELEGRAM_API_BASE_URL") or defaults.telegram_api_base_url,
        os.environ.get("LINE_API_BASE_URL") or defaults.line_api_base_url,
    )


async def _interview(args: argparse.Namespace, old: dict[str, str]) -> Answers:
    from gateway.ops.init.flow import Interview, Where

    telegram_api, line_api = _platform_urls()
    host, _, port = str(args.listen).rpartition(":")
    where = Where(telegram_api, line_api, host or "127.0.0.1", int(port), args.wait)
    answers = await Interview(where, old).run()
    return _normalised(answers)


def _value(args: argparse.Namespace, name: str, var: str) -> str:
    given = getattr(args, name)
    return str(given if given is not None else os.environ.get(var, "")).strip()


def _from_flags(args: argparse.Namespace) -> tuple[Answers, str | None]:
    """The answers the flags (or the variables) give, and what is wrong with them."""
    telegram_api, line_api = _platform_urls()
    public_url = _value(args, "public_url", "SKILLGATE_PUBLIC_URL").rstrip("/")
    polling = args.polling if args.polling is not None else not public_url
    answers = Answers(
        llm_base_url=_value(args, "llm_base_url", "LLM_BASE_URL").rstrip("/"),
        llm_model=_value(args, "llm_model", "LLM_MODEL"),
        llm_api_key=_value(args, "llm_api_key", "LLM_API_KEY"),
        llm_local_model=_value(args, "local_model", "LLM_LOCAL_MODEL"),
        telegram_token=_value(args, "telegram_token", "TELEGRAM_BOT_TOKEN"),
        telegram_polling=polling,
        telegram_api_base_url=telegram_api,
        line_secret=_value(args, "line_channel_secret", "LINE_CHANNEL_SECRET"),
        line_token=_value(args, "line_access_token", "LINE_CHANNEL_ACCESS_TOKEN"),
        line_api_base_url=line_api,
        public_url=public_url,
        data_dir=_value(args, "data_dir", "SKILLGATE_DATA_DIR"),
        admin_token=_value(args, "admin_token", "SKILLGATE_ADMIN_TOKEN") or new_secret(),
    )
    problem = None
    ids = [p.strip() for p in _value(args, "telegram_admin_ids", "TELEGRAM_ADMIN_IDS").split(",")]
    if not all(p.isascii() and p.isdigit() for p in ids if p):
        problem = "TELEGRAM_ADMIN_IDS: comma-separated numeric Telegram user ids"
    answers.telegram_admin_ids = [int(p) for p in ids if p.isascii() and p.isdigit()]
    line_ids = _value(args, "line_admin_ids", "LINE_ADMIN_IDS")
    answers.line_admin_ids = [p.strip() for p in line_ids.split(",") if p.strip()]
    if answers.telegram_token and not polling:
        answers.telegram_webhook_secret = (
            _value(args, "webhook_secret", "TELEGRAM_WEBHOOK_SECRET") or new_secret()
        )
    return _normalised(answers), problem


def _normalised(answers: Answers) -> Answers:
    if not answers.telegram_token:
        answers.telegram_admin_ids, answers.telegram_webhook_secret = [], ""
    if answers.telegram_token and answers.telegram_polling:
        answers.telegram_webhook_secret = ""
    return answers


def _incomplete(answers: Answers) -> str | None:
    if bool(answers.line_secret) != bool(answers.line_token):
        return "LINE needs both LINE_CHANNEL_SECRET and LINE_CHANNEL_ACCESS_TOKEN"
    if answers.llm_local_model and answers.llm_base_url:
        return "choose one model: --local-model, or --llm-base-url and --llm-model"
    if bool(answers.llm_base_url) != bool(answers.llm_model):
        return "the model needs both LLM_BASE_URL and LLM_MODEL"
    if answers.webhook and not answers.public_url:
        return (
            "webhooks (LINE, or Telegram without --polling) need SKILLGATE_PUBLIC_URL,"
            " the https address of this server (--public-url)"
        )
    return None


def _invalid(answers: Answers) -> str | None:
    """What Settings would refuse in the file, said by variable, before anything is written."""
    values = {k: v for _, lines in answers.sections() for k, v in lines}
    try:
        answers.render()
    except ValueError as exc:
        return str(exc)
    try:
        Settings.model_validate(values)  # the file alone, not the environment
    except ValidationError as exc:
        return describe_validation_error(exc)
    return None


async def _check(answers: Answers) -> str | None:
    """Try what was given against the real services: the model, the bots."""
    if answers.llm_local_model:
        from gateway.ops.init.model import check_local, install_local
        from gateway.runtime.local_model import BUNDLED

        if answers.llm_local_model == BUNDLED and (problem := install_local()) is not None:
            return problem
        checks = await check_local(answers.llm_local_model)
        for check in checks:
            print("\n".join(check.lines()))
        if bad := [c for c in checks if c.status == "fail"]:
            return f"the local model check failed ({bad[0].detail})"
    if answers.llm_base_url:
        from gateway.ops.init.model import check_model

        checks = await check_model(answers.llm_base_url, answers.llm_model, answers.llm_api_key)
        for check in checks:
            print("\n".join(check.lines()))
        failed = [c for c in checks if c.status == "fail"]
        if failed:
            return f"the model check failed ({failed[0].detail}); --no-check writes it anyway"
    try:
        if answers.telegram_token:
            from gateway.channels.telegram import setup as tg

            bot = await tg.bot_info(answers.telegram_token, answers.telegram_api_base_url)
            answers.telegram_bot = bot.username
            print(f"OK   telegram bot: @{bot.username} ({bot.name})")
        if answers.line_token:
            from gateway.channels.line import setup as ln

            info = await ln.bot_info(answers.line_token, answers.line_api_base_url)
            answers.line_bot = info.name
            print(f"OK   line bot: {info.name} ({info.basic_id})")
    except ChannelError as exc:
        return f"{exc}; --no-check writes it anyway"
    return None


def _summary(answers: Answers) -> str:
    parts = [f"model {answers.llm_model}" if answers.llm_model else "no model yet"]
    if answers.llm_local_model:
        parts = [f"the local model {answers.llm_local_model} (tiny, for trying)"]
    if answers.telegram_token:
        how = "polling" if answers.telegram_polling else "webhook"
        bot = f"@{answers.telegram_bot}" if answers.telegram_bot else "Telegram"
        parts.append(f"{bot} ({how}, {len(answers.telegram_admin_ids)} admin(s))")
    if answers.line_token:
        parts.append(f"LINE {answers.line_bot} ({len(answers.line_admin_ids)} admin(s))".strip())
    parts.append("the console token")
    return ", ".join(p for p in parts if p)


def _next_steps(answers: Answers, env_file: Path | None) -> list[str]:
    checkout = env_file is None and Path("scripts/serve").is_file()
    local = Path(".venv/bin/skillgate")
    found = shutil.which("skillgate")
    # Bare `skillgate` only where the shell finds this one (scripts/install links it).
    on_path = found is not None and Path(found).resolve() == local.resolve()
    command = str(local) if checkout and local.exists() and not on_path else ""
    skillgate = command or "skillgate"
    if env_file is not None:
        skillgate += f" --env-file {env_file}"
    serve = "./scripts/serve" if checkout else f"{skillgate} serve"
    steps = ["next:"]
    if not answers.llm_model and not answers.llm_local_model:
        steps.append(f"  set the model later: {skillgate} init (or LLM_BASE_URL and LLM_MODEL)")
    if answers.webhook:
        steps.append(f"  {serve}                 # in one terminal (or the service)")
        steps.append(f"  {skillgate} set-webhook   # once: registers the webhook(s)")
        steps.append(f"  {skillgate} doctor        # every check should say OK")
    else:
        steps.append(f"  {serve}")
        if answers.telegram_bot:
            steps.append(f"  then write to https://t.me/{answers.telegram_bot}")
        elif not answers.telegram_token:
            steps.append(f"  or talk to it here: {skillgate} chat")
    return steps
