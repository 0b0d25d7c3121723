"""Variables that look like settings but are not: a typo is named, with what it may mean.

Every name with a prefix the gateway owns, in the environment or the env file, that no
setting reads is reported with difflib's closest setting: `LLM_MODLE` would otherwise be
"no model configured", and `TELEGRAM_POLING` a silent webhook.
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path

from dotenv import dotenv_values
from pydantic_settings import BaseSettings

from gateway.config import Settings
from gateway.operator import Check


def prefixes() -> tuple[str, ...]:
    """The prefixes the gateway owns: its own, the model's, speech-to-text's, each platform's."""
    from gateway.channels.registry import platforms

    return ("SKILLGATE_", "LLM_", "STT_", *(p.settings_prefix for p in platforms()))


# Read by deploy/'s Caddyfiles and by this project's own test runs, not by the gateway.
OTHER_USES = frozenset(
    {
        "SKILLGATE_DOMAIN",
        "SKILLGATE_UPSTREAM",
        "SKILLGATE_UPSTREAMS",
        "SKILLGATE_TEST_POSTGRES_URL",
        "SKILLGATE_REQUIRE_REAL_MODEL",
        "SKILLGATE_REAL_MODEL_RECORD",
    }
)


def setting_names() -> set[str]:
    """Every variable a setting reads: the gateway's and each platform's."""
    from gateway.channels.registry import platforms

    models: list[type[BaseSettings]] = [Settings, *(p.section for p in platforms())]
    fields = (f for model in models for f in model.model_fields.values())
    return {str(f.validation_alias) for f in fields if f.validation_alias}


def unknown_settings(env_file: Path | None) -> list[str]:
    """One line per unknown variable, with "did you mean" when a setting is close."""
    names = set(os.environ)
    if env_file is not None and env_file.is_file():
        names |= set(dotenv_values(env_file))
    known = setting_names()
    lines = []
    for name in sorted(n for n in names if n.startswith(prefixes())):
        if name in known or name in OTHER_USES:
            continue
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.75)
        where = _where(name, env_file)
        hint = f"; did you mean {close[0]}?" if close else "; .env.example lists every setting"
        lines.append(f"{name} ({where}) is not a setting{hint}")
    return lines


def _where(name: str, env_file: Path | None) -> str:
    return "the environment" if name in os.environ else str(env_file)


def check_spelling(env_file: Path | None) -> Check:
    """doctor's line: FAIL naming each unknown variable, or OK."""
    unknown = unknown_settings(env_file)
    if not unknown:
        return Check(
            "setting names",
            "ok",
            f"every {', '.join(prefixes())} name is a setting",
        )
    return Check(
        "setting names",
        "fail",
        "; ".join(unknown),
        "rename it (or remove it): an unknown name is ignored, and its setting keeps its default",
    )
