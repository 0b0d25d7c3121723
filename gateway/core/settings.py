"""The model's section of the settings: its endpoint and bounds, and what each prompt holds.

It lives in the core, which may not import `gateway.config`; `config.Settings` is composed
of it and the other sections, so `settings.llm_model` reads the same and a component that
needs only this section is typed with it. Field names are the environment variables
(docs/SETTINGS.md).
"""

from __future__ import annotations

import re
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator
from pydantic_settings import NoDecode

MB = 1024 * 1024
HTTP_URL = re.compile(r"^https?://[^/\s]+")


def empty_is_unset(value: Any) -> Any:
    """`FOO=` in .env means "not set", as operators expect from .env.example."""
    if isinstance(value, str) and not value.strip():
        return None
    return value


def http_url(value: str | None) -> str | None:
    """An http(s) URL without its trailing slash, or None."""
    if value is None:
        return None
    if not HTTP_URL.match(value):
        raise ValueError("must be an http:// or https:// URL")
    return value.rstrip("/")


class Section(BaseModel):
    """A section of the settings: built from `Settings`, or on its own by field name."""

    model_config = ConfigDict(populate_by_name=True)

    title: ClassVar[str] = ""
    """Its heading in docs/SETTINGS.md and .env.example."""
    operator: ClassVar[frozenset[str]] = frozenset()
    """Its fields an operator sets (the first table of docs/SETTINGS.md); the others are
    listed under `title` with their defaults, which serve unless there is a reason."""


class ModelSettings(Section):
    """The model: where it is, how long it may take, and how much of a prompt is given to it."""

    title = "Model"
    operator = frozenset({"llm_base_url", "llm_api_key", "llm_model", "llm_local_model"})

    llm_base_url: str | None = Field(None, validation_alias="LLM_BASE_URL")
    llm_api_key: SecretStr | None = Field(None, validation_alias="LLM_API_KEY")
    llm_model: str | None = Field(None, validation_alias="LLM_MODEL")
    # Answers stream: the first chunk within LLM_TIMEOUT_SECONDS (a server that cannot
    # stream: the whole answer), then never a longer silence than the idle timeout.
    llm_timeout_seconds: float = Field(60.0, gt=0, validation_alias="LLM_TIMEOUT_SECONDS")
    llm_idle_timeout_seconds: float = Field(30.0, gt=0, validation_alias="LLM_IDLE_TIMEOUT_SECONDS")
    llm_max_retries: int = Field(2, ge=0, le=10, validation_alias="LLM_MAX_RETRIES")
    # A bound on each chat answer: real local models otherwise ran to 3,900 tokens.
    llm_max_tokens: int = Field(1024, ge=16, le=1_000_000, validation_alias="LLM_MAX_TOKENS")
    # Whatever `max_tokens` the server honours, a streamed answer is cut (with the cut note,
    # the connection closed) past this long or this many bytes read.
    llm_stream_max_seconds: float = Field(
        300.0, gt=0, le=3600, validation_alias="LLM_STREAM_MAX_SECONDS"
    )
    llm_stream_max_mb: float = Field(8.0, gt=0, le=1024, validation_alias="LLM_STREAM_MAX_MB")
    # Tried in order when the primary fails or refuses: `model` or `model@base_url`.
    llm_fallback_models: Annotated[list[str], NoDecode] = Field(
        default_factory=list, validation_alias="LLM_FALLBACK_MODELS"
    )
    llm_fallback_api_keys: SecretStr | None = Field(None, validation_alias="LLM_FALLBACK_API_KEYS")
    # A model on this machine, for trying: a GGUF path or `smollm2` (the bundled SmolLM2);
    # serve and chat start llama.cpp's server for it and point the client there.
    llm_local_model: str | None = Field(None, validation_alias="LLM_LOCAL_MODEL")
    # The model's server on a unix domain socket (llama.cpp's `--host PATH.sock`): every call
    # to LLM_BASE_URL goes through it, no TCP port, and the URL's host is only a name. The
    # on-board model sets it for its own server.
    llm_unix_socket: str | None = Field(None, validation_alias="LLM_UNIX_SOCKET")
    # With no model configured (no LLM_BASE_URL, no LLM_LOCAL_MODEL), serve, chat and
    # synthesize answer with the on-board model when it is installed (`./scripts/serve`
    # installs it); false: they say that no model is configured.
    llm_on_board_default: bool = Field(True, validation_alias="LLM_ON_BOARD_DEFAULT")
    # The model's context in tokens, when its server does not say (synthesis sizes to it).
    llm_context_tokens: int | None = Field(
        None, ge=512, le=10_000_000, validation_alias="LLM_CONTEXT_TOKENS"
    )
    # Learning on real conversations: recognising a claim in other words.
    llm_embedding_model: str | None = Field(None, validation_alias="LLM_EMBEDDING_MODEL")
    # Whether a candidate repeats a known claim is one question to a model (default LLM_MODEL)
    # about the few known claims most like it.
    llm_same_claim_model: str | None = Field(None, validation_alias="LLM_SAME_CLAIM_MODEL")
    # Learning (synthesis, the same-claim judge unless overridden, trials) may run on a model of
    # its own, cheaper than the chat model (default LLM_MODEL, at the same endpoint).
    llm_learning_model: str | None = Field(None, validation_alias="LLM_LEARNING_MODEL")
    llm_vision: Literal["auto", "on", "off"] = Field("auto", validation_alias="LLM_VISION")

    # What each prompt holds: the skill index, the history, and how often a skill is withheld.
    session_idle_minutes: float = Field(
        30.0, ge=0, validation_alias="SKILLGATE_SESSION_IDLE_MINUTES"
    )
    skill_index_tokens: int = Field(
        800, ge=50, le=100_000, validation_alias="SKILLGATE_SKILL_INDEX_TOKENS"
    )
    history_tokens: int = Field(
        3000, ge=100, le=1_000_000, validation_alias="SKILLGATE_HISTORY_TOKENS"
    )
    skill_holdout: float = Field(0.1, ge=0, le=0.5, validation_alias="SKILLGATE_SKILL_HOLDOUT")
    skill_holdout_start: float = Field(
        0.5, ge=0, le=0.5, validation_alias="SKILLGATE_SKILL_HOLDOUT_START"
    )

    _model_unset = field_validator(
        "llm_base_url",
        "llm_api_key",
        "llm_model",
        "llm_local_model",
        "llm_unix_socket",
        "llm_context_tokens",
        "llm_embedding_model",
        "llm_same_claim_model",
        "llm_learning_model",
        "llm_fallback_api_keys",
        mode="before",
    )(empty_is_unset)
    _model_url = field_validator("llm_base_url")(http_url)

    @field_validator("llm_fallback_models", mode="before")
    @classmethod
    def _model_list(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [v.strip() for v in value.split(",") if v.strip()]
        return value

    @field_validator("llm_fallback_models")
    @classmethod
    def _fallback_urls(cls, value: list[str]) -> list[str]:
        for entry in value:
            model, at, url = entry.partition("@")
            if not model.strip() or (at and not HTTP_URL.match(url.strip())):
                raise ValueError(f"{entry!r}: each entry is a model or model@http(s)://base-url")
        return value

    @model_validator(mode="after")
    def _one_model_server(self) -> ModelSettings:
        if self.llm_local_model is not None and self.llm_base_url is not None:
            raise ValueError(
                "LLM_LOCAL_MODEL starts a model server of its own: unset LLM_BASE_URL, or"
                " LLM_LOCAL_MODEL to use the server at LLM_BASE_URL"
            )
        return self

    @field_validator("llm_unix_socket")
    @classmethod
    def _socket_path(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith("/"):
            raise ValueError(f"{value!r}: the absolute path of the model server's unix socket")
        return value

    def socket_for(self, url: str | None) -> str | None:
        """LLM_UNIX_SOCKET for a call to the model's own server (LLM_BASE_URL), else None."""
        return self.llm_unix_socket if url is not None and url == self.llm_base_url else None

    @property
    def model_configured(self) -> bool:
        return self.llm_base_url is not None and self.llm_model is not None

    @property
    def llm_key(self) -> str | None:
        """LLM_API_KEY's value, or None."""
        return self.llm_api_key.get_secret_value() if self.llm_api_key else None

    def beside_model(self, url: str | None, key: SecretStr | None) -> tuple[str | None, str | None]:
        """An endpoint of its own (speech, voice, pictures): its URL, else the model's; its
        key, else the model's only where it is the model's server (the key never goes to
        another server)."""
        base = url or self.llm_base_url
        if key is None and base is not None and base == self.llm_base_url:
            key = self.llm_api_key
        return base, key.get_secret_value() if key is not None else None

    @property
    def llm_stream_max_bytes(self) -> int:
        return int(self.llm_stream_max_mb * MB)

    @property
    def session_idle_seconds(self) -> float:
        return self.session_idle_minutes * 60
