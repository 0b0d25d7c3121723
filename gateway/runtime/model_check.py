"""At start, one look at the model: a dead URL is a WARNING in the log, not a silent "ready"."""

from __future__ import annotations

import logging
from dataclasses import replace

from gateway.config import Settings
from gateway.core.llm import OpenAIChat
from gateway.errors import ModelError
from gateway.synthesis.calibration import Unreachable
from gateway.synthesis.synthesizer import Synthesizer

log = logging.getLogger("gateway.model")


def _client(settings: Settings) -> OpenAIChat:
    assert settings.llm_base_url is not None and settings.llm_model is not None
    key = settings.llm_api_key.get_secret_value() if settings.llm_api_key else None
    return OpenAIChat(
        settings.llm_base_url,
        settings.llm_model,
        key,
        timeout=settings.llm_timeout_seconds,
        max_retries=0,
        unix_socket=settings.llm_unix_socket,
    )


async def model_error(settings: Settings) -> str | None:
    """Why the model does not answer /models with LLM_MODEL, or None when it does."""
    if settings.llm_base_url is None or settings.llm_model is None:
        return "no model configured"
    llm = _client(settings)
    try:
        await llm.ping()
    except ModelError as exc:
        return str(exc)
    finally:
        await llm.close()
    return None


def what_to_fix(settings: Settings, error: str) -> str:
    """The fix an admin can apply for this model error, in one line."""
    lowered = error.lower()
    if settings.llm_local_model is not None:
        return (
            "the on-board model (LLM_LOCAL_MODEL) stopped answering and was not started again:"
            " the log says why; restart `skillgate serve`, or set LLM_BASE_URL and LLM_MODEL"
            " to a real model (`skillgate init`)"
        )
    if "connection refused" in lowered or "host name not found" in lowered:
        url = settings.llm_base_url
        return f"nothing answers at LLM_BASE_URL ({url}): start the model's server, or fix the URL"
    if "http 401" in lowered or "http 403" in lowered:
        return "the server refuses the key: set LLM_API_KEY to a valid one"
    if "http 404" in lowered or "does not serve model" in lowered:
        return f"the server does not know {settings.llm_model!r}: fix LLM_MODEL or LLM_BASE_URL"
    if "http 429" in lowered or "quota" in lowered or "http 402" in lowered:
        return (
            "the provider's rate limit or quota is exhausted: raise it (billing, plan), or set"
            " LLM_FALLBACK_MODELS to a second model"
        )
    if "timed out" in lowered or "went quiet" in lowered:
        return "the model answers too slowly: check its server's load, or raise LLM_TIMEOUT_SECONDS"
    if "http 5" in lowered or "connection" in lowered:
        return (
            "the model's server fails behind its API (its engine, its GPU, its upstream): read"
            " its log and restart it; `skillgate doctor` checks it from here"
        )
    return "`skillgate doctor` checks the model from here and names the setting to change"


async def probed_context(settings: Settings) -> int | None:
    """The model's context as its server reports it, as doctor reads it (None: unknown)."""
    if settings.llm_base_url is None or settings.llm_model is None:
        return None
    llm = _client(settings)
    try:
        return await llm.context()
    except ModelError:
        return None
    finally:
        await llm.close()


async def check_model_once(settings: Settings) -> bool:
    """True when the model answers /models and serves LLM_MODEL; else a WARNING with the fix."""
    if settings.llm_base_url is None or settings.llm_model is None:
        return False
    error = await model_error(settings)
    if error is not None:
        log.warning(
            "model %s at %s does not answer: %s; answers apologise until it does."
            " Fix LLM_BASE_URL, LLM_MODEL or LLM_API_KEY, or start the server;"
            " `skillgate doctor` checks it",
            settings.llm_model,
            settings.llm_base_url,
            error,
        )
    return error is None


async def look_at_start(settings: Settings, synthesizer: Synthesizer) -> bool:
    """serve's one look at the model; its reported context sizes synthesis unless set."""
    if not await check_model_once(settings):
        return False
    if settings.llm_context_tokens is None and (context := await probed_context(settings)):
        synthesizer.config = replace(synthesizer.config, context_tokens=context)
        log.info("synthesis fits the model's context of %d tokens, as its server reports", context)
    if settings.synthesis_interval_minutes > 0:
        await calibrate_at_start(synthesizer)
    return True


async def calibrate_at_start(synthesizer: Synthesizer) -> None:
    """Try the same-claim judge on the calibration set, unless its result is kept already."""
    try:
        await synthesizer.calibrate()
    except Unreachable as exc:
        log.warning("the same-claim judge could not be calibrated now (tried again later): %s", exc)
