"""`skillgate doctor`: one line per check, with the fix when it fails."""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass

from gateway.config import Settings
from gateway.core.llm import OpenAIChat
from gateway.errors import SkillgateError
from gateway.store import Store


@dataclass
class Check:
    name: str
    status: str  # ok | warn | fail
    detail: str
    fix: str = ""


def check_data_dir(settings: Settings) -> Check:
    try:
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=settings.data_dir, prefix=".doctor-"):
            pass
    except OSError as exc:
        return Check(
            "data dir",
            "fail",
            f"{settings.data_dir} is not writable: {exc.strerror}",
            "create it and give the gateway's user write access, or set SKILLGATE_DATA_DIR",
        )
    free = os.statvfs(settings.data_dir)
    mb = free.f_bavail * free.f_frsize // (1024 * 1024)
    status = "ok" if mb >= 100 else "warn"
    return Check(
        "data dir",
        status,
        f"{settings.data_dir.resolve()} writable, {mb} MB free",
        "" if status == "ok" else "free some disk space",
    )


async def check_database(settings: Settings) -> Check:
    try:
        async with Store(settings.db_path) as store:
            versions = await store.schema_versions()
            pending = await store.inbox_pending_count()
    except SkillgateError as exc:
        return Check("database", "fail", str(exc), "check the file's permissions and free disk")
    return Check(
        "database", "ok", f"{settings.db_path} schema v{max(versions)}, {pending} update(s) pending"
    )


async def check_model(settings: Settings) -> Check:
    if not settings.model_configured:
        return Check(
            "model",
            "fail",
            "no model configured: replies will say so",
            "set LLM_BASE_URL (ending in /v1), LLM_MODEL and, if needed, LLM_API_KEY",
        )
    assert settings.llm_base_url is not None and settings.llm_model is not None
    key = settings.llm_api_key.get_secret_value() if settings.llm_api_key else None
    llm = OpenAIChat(settings.llm_base_url, settings.llm_model, key, timeout=10, max_retries=0)
    try:
        detail = await llm.ping()
    except SkillgateError as exc:
        return Check(
            "model",
            "fail",
            f"{settings.llm_base_url}: {exc}",
            "check LLM_BASE_URL, LLM_MODEL and LLM_API_KEY, and that the server is running",
        )
    finally:
        await llm.close()
    return Check("model", "ok", f"{settings.llm_model} at {settings.llm_base_url}: {detail}")


def check_channels(settings: Settings) -> list[Check]:
    checks = []
    if not settings.telegram_enabled and not settings.line_enabled:
        checks.append(
            Check(
                "channels",
                "warn",
                "no channel configured: only `skillgate chat` can talk to the agent",
                "set TELEGRAM_BOT_TOKEN and/or LINE_CHANNEL_SECRET + LINE_CHANNEL_ACCESS_TOKEN",
            )
        )
    if settings.telegram_enabled:
        if settings.telegram_polling:
            checks.append(Check("telegram", "ok", "bot token set; updates by polling"))
        elif settings.telegram_webhook_secret is None:
            checks.append(
                Check(
                    "telegram",
                    "fail",
                    "TELEGRAM_WEBHOOK_SECRET is not set: webhooks get 401",
                    "set TELEGRAM_WEBHOOK_SECRET to 1-256 characters of A-Z a-z 0-9 _ -",
                )
            )
        else:
            checks.append(Check("telegram", "ok", "bot token and webhook secret set"))
    if settings.line_enabled:
        checks.append(Check("line", "ok", "channel secret and access token set"))
    if settings.admin_token is None:
        checks.append(
            Check(
                "admin",
                "warn",
                "SKILLGATE_ADMIN_TOKEN not set: admin API and console are off",
                "set SKILLGATE_ADMIN_TOKEN to a long random string",
            )
        )
    return checks


async def collect(settings: Settings) -> list[Check]:
    checks = [Check("settings", "ok", "loaded"), check_data_dir(settings)]
    if checks[-1].status != "fail":
        checks.append(await check_database(settings))
    checks.append(await check_model(settings))
    checks.extend(check_channels(settings))
    return checks


async def run_doctor(settings: Settings) -> int:
    """Print the checks; exit status 1 when any failed."""
    checks = await collect(settings)
    for check in checks:
        print(f"{check.status.upper():4} {check.name}: {check.detail}")
        if check.fix and check.status != "ok":
            print(f"     fix: {check.fix}")
    return 1 if any(c.status == "fail" for c in checks) else 0
