"""At start, one look at the model: a dead URL is a WARNING in the log, not a silent "ready"."""

from __future__ import annotations

import logging

from gateway.config import Settings
from gateway.core.llm import OpenAIChat
from gateway.errors import ModelError

log = logging.getLogger("gateway.model")


async def model_error(settings: Settings) -> str | None:
    """Why the model does not answer /models with LLM_MODEL, or None when it does."""
    if settings.llm_base_url is None or settings.llm_model is None:
        return "no model configured"
    key = settings.llm_api_key.get_secret_value() if settings.llm_api_key else None
    llm = OpenAIChat(
        settings.llm_base_url,
        settings.llm_model,
        key,
        timeout=settings.llm_timeout_seconds,
        max_retries=0,
    )
    try:
        await llm.ping()
    except ModelError as exc:
        return str(exc)
    finally:
        await llm.close()
    return None


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
