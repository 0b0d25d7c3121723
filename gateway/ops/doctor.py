"""`skillgate doctor`: one line per check, with the fix when it fails."""

from __future__ import annotations

import json
import os
import stat
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

from gateway.channels.registry import configured_platforms, platforms, secrets
from gateway.config import Settings
from gateway.core.llm import OpenAIChat
from gateway.errors import ConfigError, SkillgateError
from gateway.operator import Check
from gateway.ops.model_probe import probe
from gateway.ops.repair import fix_files, fix_secrets, fix_webhooks, persona_path
from gateway.ops.served_model import check_served_model
from gateway.ops.spelling import check_spelling
from gateway.ops.unit import DEFAULT_UNIT, check_service_data_dir
from gateway.runtime.assembly import chat_client
from gateway.store import store_for
from gateway.synthesis.calibration import (
    ONBOARD_FIX,
    PAIRS_FILE,
    Calibration,
    Calibrator,
    Model,
    Question,
    Unreachable,
    judge_line,
    load_pairs,
)
from gateway.synthesis.comparison import TRIAL_QUESTION, builtin_compare_pairs
from gateway.synthesis.judge import SAME_CLAIM
from gateway.tools.build import build_tools

DISK_FAIL_MB = 50
DISK_WARN_MB = 500


def check_data_dir(settings: Settings) -> Check:
    path = settings.data_dir
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path, prefix=".doctor-"):
            pass
    except OSError as exc:
        return Check(
            "data dir",
            "fail",
            f"{path} is not writable: {exc.strerror}",
            f"`sudo install -d -m 700 -o $(id -un) {path.absolute()}`, or set SKILLGATE_DATA_DIR"
            " to a folder this user can write",
        )
    mode = path.stat().st_mode
    if mode & stat.S_IWOTH:
        return Check(
            "data dir",
            "fail",
            f"{path.resolve()} is world-writable: anyone on the machine can change skills",
            f"run `skillgate doctor --fix` (or `chmod 750 {path.resolve()}`)",
        )
    db = settings.db_path
    others_enter = mode & stat.S_IXOTH
    if others_enter and db.exists() and db.stat().st_mode & stat.S_IROTH:
        return Check(
            "data dir",
            "warn",
            f"{db.resolve()} is readable by every user on the machine (conversations)",
            f"run `skillgate doctor --fix` (or `chmod 750 {path.resolve()}`)",
        )
    return Check("data dir", "ok", f"{path.resolve()} writable, not world-writable")


def check_persona(settings: Settings) -> Check:
    """A SKILLGATE_PERSONA_FILE that is missing stops the server at start."""
    path = persona_path(settings)
    if path.is_file():
        return Check("persona", "ok", f"{path}")
    if settings.persona_file is None:
        return Check("persona", "ok", f"{path} is written with the default at the first start")
    return Check(
        "persona",
        "fail",
        f"SKILLGATE_PERSONA_FILE {path} does not exist: `skillgate serve` stops at start",
        "run `skillgate doctor --fix` (writes the default persona there to edit)",
    )


def check_disk(settings: Settings) -> Check:
    free = os.statvfs(settings.data_dir)
    mb = free.f_bavail * free.f_frsize // (1024 * 1024)
    detail = f"{mb} MB free for {settings.data_dir.resolve()}"
    if mb < DISK_FAIL_MB:
        return Check(
            "disk",
            "fail",
            detail,
            f"free disk space: SQLite stops writing when full (`du -sh {settings.data_dir}/*`)",
        )
    if mb < DISK_WARN_MB:
        return Check("disk", "warn", detail, "free some disk space soon")
    return Check("disk", "ok", detail)


async def check_database(settings: Settings) -> Check:
    fix = (
        "check SKILLGATE_DATABASE_URL: host, port, user, password, database; is the server up?"
        if settings.shared_database
        else "check the file's permissions and free disk:"
        f" `ls -l {settings.db_path.absolute()}; df -h {settings.data_dir.absolute()}`"
    )
    try:
        async with store_for(settings) as store:
            versions = await store.schema_versions()
            pending = await store.inbox_pending_count()
    except SkillgateError as exc:
        return Check("database", "fail", str(exc), fix)
    return Check(
        "database", "ok", f"{store.location} schema v{max(versions)}, {pending} update(s) pending"
    )


def check_server(settings: Settings) -> Check:
    """With SQLite: which `skillgate serve` holds the data dir, if one does."""
    from gateway.runtime.datadir import LOCK_FILE, lock_holder

    holder = lock_holder(settings.data_dir)
    if holder is None:
        return Check("server", "ok", f"no skillgate serve holds {settings.data_dir.resolve()}")
    return Check(
        "server",
        "ok",
        f"{holder} serves this data dir (it holds {LOCK_FILE}); a second serve is refused",
    )


async def check_skills_volume(settings: Settings) -> Check:
    """With PostgreSQL: is this data dir the skills volume the replicas share?"""
    from gateway.runtime.replicas import VOLUME_KEY, volume_marker

    try:
        async with store_for(settings) as store:
            stored = await store.get_meta(VOLUME_KEY)
    except SkillgateError as exc:
        return Check("skills volume", "fail", str(exc), "fix the database first")
    found = volume_marker(settings.skills_dir)
    if stored is None:
        return Check("skills volume", "ok", "no replica has started yet; the first one claims it")
    if found != stored:
        return Check(
            "skills volume",
            "fail",
            f"{settings.skills_dir} is not the skills volume the replicas share",
            "mount the shared volume at SKILLGATE_DATA_DIR (docs/SCALING.md)",
        )
    return Check("skills volume", "ok", f"{settings.skills_dir} is the shared volume")


async def check_model(settings: Settings) -> list[Check]:
    """The model's reachability, context size, chat, tools and JSON mode (model_probe); with a
    running server, the model that server uses, as it finds it."""
    served = await check_served_model(settings)
    if settings.llm_local_model is not None:
        if served is not None:
            # Its own copy would be a second model, not the one the users' answers come from.
            return [_trying(settings), served]
        return await check_local_model(settings)
    checks = await _check_configured_model(settings)
    return checks if served is None else [*checks, served]


async def _check_configured_model(settings: Settings, *, on_board: bool = False) -> list[Check]:
    if not settings.model_configured:
        return [
            Check(
                "model",
                "fail",
                "no model configured: replies will say so",
                "run `skillgate init` (or set LLM_BASE_URL ending in /v1, LLM_MODEL and, if"
                " needed, LLM_API_KEY)",
            )
        ]
    assert settings.llm_base_url is not None and settings.llm_model is not None
    # As the gateway's own client: a slow model is not a dead one, a dropped connection is
    # tried again, and the probes wait as long as an answer would.
    llm = chat_client(settings, settings.llm_base_url, settings.llm_model, settings.llm_key, None)
    try:
        checks = await probe(llm, on_board=on_board)
    finally:
        await llm.close()
    if any(c.status == "fail" for c in checks):
        return checks
    return [*checks, await check_judge(settings), await check_trial_judge(settings)]


JUDGE_FIX = (
    "set LLM_SAME_CLAIM_MODEL (or LLM_LEARNING_MODEL, which synthesis uses too) to a model able"
    " to judge (a capable instruction model at the same endpoint), or declare this one"
    " trusted with SKILLGATE_TRUSTED_JUDGES; until then"
    " each candidate that needs a judgement goes to a person marked as possibly a repeat"
)


TRIAL_JUDGE_FIX = (
    "set LLM_SAME_CLAIM_MODEL (or LLM_LEARNING_MODEL) to a model able to compare answers, or"
    " declare this one trusted with SKILLGATE_TRUSTED_JUDGES; until then each proposal's"
    ' trial says "not measured" on its card, and the proposal still goes to review'
)


async def check_judge(settings: Settings) -> Check:
    """The same-claim judge tried on the calibration set now, and the result kept."""
    try:
        pairs = load_pairs(settings.data_dir)
    except ConfigError as exc:
        where = settings.data_dir / PAIRS_FILE
        return Check(
            "calibration set", "fail", str(exc), f"correct {where} (docs/LEARNING.md) or remove it"
        )
    onboard = settings.llm_local_model is not None
    calibrator = Calibrator(Unkept(), pairs, clock=time.time, onboard=onboard)
    return await _calibrated(settings, "same-claim judge", calibrator, SAME_CLAIM, JUDGE_FIX)


async def check_trial_judge(settings: Settings) -> Check:
    """The trial's judge (the same model) tried on the comparison's calibration set now."""
    onboard = settings.llm_local_model is not None
    calibrator = Calibrator(Unkept(), builtin_compare_pairs(), clock=time.time, onboard=onboard)
    return await _calibrated(settings, "trial judge", calibrator, TRIAL_QUESTION, TRIAL_JUDGE_FIX)


async def _calibrated(
    settings: Settings,
    label: str,
    calibrator: Calibrator[Model],
    question: Question[Model],
    fix: str,
) -> Check:
    """The judge calibrated on `question` now, kept in the database when it opens."""
    assert settings.llm_base_url is not None and settings.llm_model is not None
    name = settings.llm_same_claim_model or settings.llm_learning_model or settings.llm_model
    if name in settings.trusted_judge_models:
        return Check(label, "ok", f"{name}: declared trusted, not calibrated")
    key = settings.llm_api_key.get_secret_value() if settings.llm_api_key else None
    llm = OpenAIChat(
        settings.llm_base_url,
        name,
        key,
        timeout=settings.llm_timeout_seconds,
        max_retries=0,
        unix_socket=settings.llm_unix_socket,
    )
    store = store_for(settings) if settings.data_dir.is_dir() else None
    try:
        if store is not None:
            try:
                calibrator.store = await store.open()
            except SkillgateError:
                store = None  # the database check says why; the result is only printed
        try:
            result = await calibrator.result(llm, question, again=True)
        except Unreachable as exc:
            return Check(
                label,
                "fail",
                f"{name} could not be asked: {exc}",
                "check that the endpoint serves it"
                " (LLM_SAME_CLAIM_MODEL, else LLM_LEARNING_MODEL, else LLM_MODEL)",
            )
    finally:
        await llm.close()
        if store is not None:
            await store.close()
    if result.verdict == "unable":
        fix = ONBOARD_FIX if result.onboard else fix
        return Check(label, "warn", judge_line(result, fix=False), fix)
    return Check(label, "ok", judge_line(result))


class Unkept:
    """Where a result goes when the database cannot be opened: nowhere."""

    async def calibration(self, model: str, kind: str) -> Calibration | None:
        return None

    async def record_calibration(self, result: Calibration) -> None:
        return None


async def check_local_model(settings: Settings) -> list[Check]:
    """LLM_LOCAL_MODEL: start llama.cpp's server as serve would, and probe it."""
    from gateway.runtime.local_model import local_model

    try:
        with local_model(settings) as started:
            unset = started.model_copy(update={"llm_local_model": None})
            checks = await _check_configured_model(unset, on_board=True)
    except ConfigError as exc:
        return [Check("model", "fail", str(exc), "install what it names, or `skillgate init`")]
    return [_trying(settings), *checks]


def _trying(settings: Settings) -> Check:
    from gateway.runtime.local_model import TRYING

    return Check(
        "local model",
        "warn",
        f"{settings.llm_local_model}: {TRYING}",
        "for users, a real model: `skillgate init` (or LLM_BASE_URL and LLM_MODEL)",
    )


async def check_speech(settings: Settings) -> Check:
    """Speech-to-text: a half second of silence sent to the transcription endpoint."""
    from gateway.media.stt import silence
    from gateway.runtime.assembly import make_transcriber

    transcriber = make_transcriber(settings)
    if transcriber is None:
        return Check("speech-to-text", "ok", "not set up (STT_MODEL): voice messages get a notice")
    try:
        await transcriber.transcribe(silence(), "audio/wav")
    except SkillgateError as exc:
        return Check(
            "speech-to-text",
            "fail",
            str(exc),
            "check STT_BASE_URL (an OpenAI-compatible /v1 with /audio/transcriptions),"
            " STT_MODEL and STT_API_KEY",
        )
    finally:
        await transcriber.close()
    return Check("speech-to-text", "ok", f"{settings.stt_model} transcribes")


async def check_voice(settings: Settings) -> Check:
    """Text-to-speech: one word spoken as OGG/Opus, as a voice message takes it."""
    from gateway.runtime.assembly import make_speaker

    speaker = make_speaker(settings)
    if speaker is None:
        return Check("text-to-speech", "ok", "not set up (TTS_MODEL): answers are text only")
    voice = settings.voice_for("en")
    try:
        speech = await speaker.speak("Hello.", voice, "opus")
    except SkillgateError as exc:
        return Check(
            "text-to-speech",
            "fail",
            str(exc),
            "check TTS_BASE_URL (an OpenAI-compatible /v1 with /audio/speech), TTS_MODEL,"
            " TTS_API_KEY and the voices in TTS_VOICES",
        )
    finally:
        await speaker.close()
    return Check(
        "text-to-speech",
        "ok",
        f"{settings.tts_model} speaks ({voice}: {speech.seconds:.1f} s, {len(speech.audio)} bytes)",
    )


async def check_image(settings: Settings) -> Check:
    """Pictures: one small drawing asked of the image server (it is billed like any other)."""
    from gateway.tools.build import image_tool
    from gateway.tools.policy import CallFailed

    if settings.image_model is None:
        return Check("pictures", "ok", "not set up (IMAGE_MODEL): generate_image is off")
    tool = image_tool(settings)
    await tool.start()
    try:
        drawn = await tool.draw({"prompt": "a small red circle on white"})
    except CallFailed as exc:
        return Check(
            "pictures",
            "fail",
            str(exc),
            "check IMAGE_BASE_URL (an OpenAI-compatible /v1 with /images/generations),"
            " IMAGE_MODEL and IMAGE_API_KEY",
        )
    finally:
        await tool.stop()
    picture = drawn.picture
    return Check(
        "pictures",
        "ok",
        f"{settings.image_model} draws ({picture.mime}, {len(picture.data):,} bytes)",
    )


def check_channels(settings: Settings) -> list[Check]:
    checks = []
    configured = configured_platforms(settings)
    if not configured:
        needs = " and/or ".join(p.needs for p in platforms())
        checks.append(
            Check(
                "channels",
                "warn",
                "no channel configured: only `skillgate chat` can talk to the agent",
                f"set {needs}",
            )
        )
    for platform in configured:
        checks.extend(platform.load().settings_checks(settings))
    if not settings.admins():
        checks.append(
            Check(
                "admin",
                "warn",
                "neither SKILLGATE_ADMIN_TOKEN nor SKILLGATE_ADMIN_TOKENS set:"
                " admin API and console are off",
                "run `skillgate doctor --fix` (generates SKILLGATE_ADMIN_TOKEN into the env file)",
            )
        )
    return checks


async def collect(
    settings: Settings, unit: Path = DEFAULT_UNIT, env_file: Path | None = None
) -> list[Check]:
    checks = [Check("settings", "ok", "loaded"), check_spelling(env_file), check_data_dir(settings)]
    if (service := check_service_data_dir(unit, settings.data_dir)) is not None:
        checks.append(service)
    checks.append(check_persona(settings))
    if settings.data_dir.is_dir():
        checks.append(check_disk(settings))
        checks.append(await check_database(settings))
        if settings.shared_database:
            checks.append(await check_skills_volume(settings))
        else:
            checks.append(check_server(settings))
    checks.extend(await check_model(settings))
    checks.append(await check_speech(settings))
    checks.append(await check_voice(settings))
    checks.append(await check_image(settings))
    checks.extend(check_channels(settings))
    for platform in configured_platforms(settings):
        checks.extend(await platform.load().live_checks(settings))
    checks.extend(await check_tools(settings))
    return checks


async def check_tools(settings: Settings) -> list[Check]:
    """Each tool server starts and lists its tools in time (none: no check)."""
    try:
        tools = build_tools(settings, secrets(settings))
    except ConfigError as exc:
        return [Check("tools", "fail", str(exc), "correct the tools file")]
    if tools is None:
        return []
    await tools.start()
    try:
        statuses = tools.status()
    finally:
        await tools.stop()
    return [
        Check(f"tool server {s.name}", "ok", f"{s.transport}, {len(s.tools)} tools listed")
        if s.alive
        else Check(
            f"tool server {s.name}",
            "fail",
            f"{s.transport}: {s.error}",
            "check its command or URL in the tools file; `skillgate tools list` shows the rest",
        )
        for s in statuses
    ]


async def run_doctor(
    settings: Settings,
    *,
    as_json: bool = False,
    fix: bool = False,
    env_file: Path = Path(".env"),
    unit: Path = DEFAULT_UNIT,
    reload: Callable[[], Settings] | None = None,
) -> int:
    """Print the checks (text or a JSON list); exit status 1 when any failed.

    With `fix`, what is safe to fix is fixed first (each said as a `FIXED` line, its
    failures as `FAIL`), then everything is checked again and that is what counts.
    """
    checks = await collect(settings, unit, env_file)
    fixed: list[Check] = []
    if fix:
        failed = {c.name for c in checks if c.status != "ok"}
        fixed += fix_files(settings, failed)
        fixed += fix_secrets(settings, failed, env_file)
        if fixed and reload is not None:
            settings = reload()  # a generated secret is in the env file now
        fixed += await fix_webhooks(settings, failed | _needs_webhook(fixed))
        if fixed:
            checks = await collect(settings, unit, env_file)
        elif not as_json:
            print("nothing doctor can fix by itself")
    if as_json:
        print(json.dumps([asdict(c) for c in fixed + checks], indent=2, ensure_ascii=False))
    else:
        for check in fixed:
            print(
                f"{'FIXED' if check.status == 'fixed' else check.status.upper()} "
                f"{check.name}: {check.detail}"
            )
        if fixed:
            print("checked again:")
        for check in checks:
            print("\n".join(check.lines()))
    return 1 if any(c.status == "fail" for c in checks) else 0


def _needs_webhook(fixed: list[Check]) -> set[str]:
    """A generated webhook secret must be registered with its platform too."""
    return {
        f"{p.name} webhook"
        for p in platforms()
        if p.webhook_secret and any(p.webhook_secret in c.detail for c in fixed)
    }
