"""Settings from the environment and `.env` (pydantic-settings); docs/SETTINGS.md for each one."""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, Self, TypeVar, cast, get_args
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import (
    Field,
    PrivateAttr,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, SettingsConfigDict

from gateway.core.settings import (
    MB,
    ModelSettings,
    Section,
    empty_is_unset,
    http_url,
)
from gateway.errors import ConfigError
from gateway.i18n import LANGUAGES, language_of
from gateway.usage import MediaPrices, parse_prices, price_of

ADMIN_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,31}$")
"""A named admin: lower-case letters, digits, `_` and `-`, at most 32 characters."""


def parse_admin_tokens(value: str) -> dict[str, str]:
    """`name:token,name:token` as {name: token}; ValueError naming the entry, never a token."""
    admins: dict[str, str] = {}
    for position, entry in enumerate((e.strip() for e in value.split(",")), start=1):
        if not entry:
            continue
        name, sep, token = entry.partition(":")
        name, token = name.strip(), token.strip()
        if not sep or not token:
            raise ValueError(f"entry {position} is not name:token")
        if not ADMIN_NAME.match(name):
            raise ValueError(
                f"entry {position}: an admin name is 1-32 of a-z, 0-9, _ and -, starting"
                " with a letter or digit"
            )
        if name in admins:
            raise ValueError(f"admin {name} is named twice")
        if token in admins.values():
            raise ValueError(f"admin {name} has the same token as another admin")
        admins[name] = token
    return admins


SETTINGS_CONFIG = SettingsConfigDict(
    env_file=".env",
    env_file_encoding="utf-8",
    extra="ignore",
    populate_by_name=True,
    case_sensitive=True,
)
"""How every settings class is read: the environment, then `.env`; names as written."""

SectionT = TypeVar("SectionT", bound=BaseSettings)


@functools.cache
def names_of(model: type[BaseSettings]) -> frozenset[str]:
    """What a settings class is given values by: its field names and their variables."""
    fields = model.model_fields
    return frozenset((*fields, *(str(f.validation_alias) for f in fields.values())))


class QuotaSettings(Section):
    """Usage and the daily quotas: limits count per UTC day, 0 is no limit. Admins are exempt
    from the limits (their answers still count towards the gateway's budget)."""

    title = "Usage and daily limits"

    llm_prices: str = Field("", validation_alias="LLM_PRICES")
    """Price per million tokens, input/output, per model: `gpt-4o-mini=0.15/0.60,*=1/2`."""
    user_daily_answers: int = Field(0, ge=0, validation_alias="SKILLGATE_USER_DAILY_ANSWERS")
    user_daily_tokens: int = Field(0, ge=0, validation_alias="SKILLGATE_USER_DAILY_TOKENS")
    chat_daily_answers: int = Field(0, ge=0, validation_alias="SKILLGATE_CHAT_DAILY_ANSWERS")
    chat_daily_tokens: int = Field(0, ge=0, validation_alias="SKILLGATE_CHAT_DAILY_TOKENS")
    daily_token_budget: int = Field(0, ge=0, validation_alias="SKILLGATE_DAILY_TOKEN_BUDGET")
    daily_cost_budget: float = Field(0.0, ge=0, validation_alias="SKILLGATE_DAILY_COST_BUDGET")
    stt_price_per_minute: float = Field(0.0, ge=0, le=1000, validation_alias="STT_PRICE_PER_MINUTE")
    """What a minute of speech-to-text costs, counted with the answer under the daily cost
    budget (`SKILLGATE_DAILY_COST_BUDGET`)."""
    tts_price_per_minute: float = Field(0.0, ge=0, le=1000, validation_alias="TTS_PRICE_PER_MINUTE")
    """What a minute of spoken answer costs, counted under the daily cost budget."""
    user_daily_spoken_seconds: int = Field(
        0, ge=0, le=86_400, validation_alias="SKILLGATE_USER_DAILY_SPOKEN_SECONDS"
    )
    """Seconds of answers spoken to one user a day (checked before each); 0: no limit."""
    user_daily_images: int = Field(
        0, ge=0, le=10_000, validation_alias="SKILLGATE_USER_DAILY_IMAGES"
    )
    """Images `generate_image` makes for one user a day (checked before each); 0: no limit."""
    image_price: float = Field(0.0, ge=0, le=1000, validation_alias="IMAGE_PRICE")
    """What one picture costs, counted with its answer under the daily cost budget."""

    @field_validator("llm_prices")
    @classmethod
    def _prices(cls, value: str) -> str:
        parse_prices(value)
        return value

    def prices(self) -> dict[str, tuple[float, float]]:
        """LLM_PRICES as {model: (input, output)} per million tokens."""
        return parse_prices(self.llm_prices)

    def media_prices(self) -> MediaPrices:
        """What speech transcribed and spoken, and pictures, cost besides tokens."""
        return MediaPrices(self.stt_price_per_minute, self.tts_price_per_minute, self.image_price)

    @property
    def user_answers(self) -> int | None:
        """A user's answers a day; None: no limit."""
        return self.user_daily_answers or None

    @property
    def user_tokens(self) -> int | None:
        return self.user_daily_tokens or None

    @property
    def chat_answers(self) -> int | None:
        """A group chat's answers a day; None: no limit."""
        return self.chat_daily_answers or None

    @property
    def chat_tokens(self) -> int | None:
        return self.chat_daily_tokens or None

    @property
    def user_images(self) -> int | None:
        """Images a user may have made a day; None: no limit."""
        return self.user_daily_images or None

    @property
    def user_spoken(self) -> int | None:
        """Seconds of spoken answers a user hears a day; None: no limit."""
        return self.user_daily_spoken_seconds or None

    @property
    def gateway_tokens(self) -> int | None:
        """The whole gateway's tokens a day; None: no budget."""
        return self.daily_token_budget or None

    @property
    def gateway_cost(self) -> float | None:
        """The whole gateway's cost a day (LLM_PRICES, STT_PRICE_PER_MINUTE); None: no budget."""
        return self.daily_cost_budget or None

    @property
    def limited(self) -> bool:
        """Whether any daily limit is set (else nothing is counted against one)."""
        return any(
            limit is not None
            for limit in (
                self.user_answers,
                self.user_tokens,
                self.chat_answers,
                self.chat_tokens,
                self.gateway_tokens,
                self.gateway_cost,
            )
        )


class ConversationSettings(QuotaSettings):
    """What each channel's conversation reads: a group's context for its next question, how
    long a tool's confirmation waits, and the daily quotas it enforces (`QuotaSettings`)."""

    title = "Conversation"

    group_context_messages: int = Field(
        0, ge=0, le=200, validation_alias="SKILLGATE_GROUP_CONTEXT_MESSAGES"
    )
    """A group's last unaddressed messages that go with its next question; 0: none kept."""
    group_context_tokens: int = Field(
        1500, ge=50, le=100_000, validation_alias="SKILLGATE_GROUP_CONTEXT_TOKENS"
    )
    group_context_minutes: float = Field(
        120.0, gt=0, le=10_080, validation_alias="SKILLGATE_GROUP_CONTEXT_MINUTES"
    )
    tool_confirm_seconds: float = Field(
        120.0, gt=0, le=3600, validation_alias="SKILLGATE_TOOL_CONFIRM_SECONDS"
    )
    """How long a tool that needs the asker's consent waits for their ✅ (no press: no)."""

    @property
    def group_context_seconds(self) -> float:
        """How old a kept group line may be when the next question takes it."""
        return self.group_context_minutes * 60


class MediaSettings(Section):
    """Media in: voice notes (speech-to-text), photos (vision) and documents, and their bounds."""

    title = "Media in"

    stt_base_url: str | None = Field(None, validation_alias="STT_BASE_URL")
    """An OpenAI-compatible /v1 with /audio/transcriptions; unset: LLM_BASE_URL."""
    stt_model: str | None = Field(None, validation_alias="STT_MODEL")
    stt_api_key: SecretStr | None = Field(None, validation_alias="STT_API_KEY")
    stt_timeout_seconds: float = Field(60.0, gt=0, le=600, validation_alias="STT_TIMEOUT_SECONDS")
    max_voice_mb: float = Field(20.0, gt=0, le=1024, validation_alias="SKILLGATE_MAX_VOICE_MB")
    max_image_mb: float = Field(10.0, gt=0, le=1024, validation_alias="SKILLGATE_MAX_IMAGE_MB")
    max_document_mb: float = Field(
        20.0, gt=0, le=1024, validation_alias="SKILLGATE_MAX_DOCUMENT_MB"
    )
    media_timeout_seconds: float = Field(
        30.0, gt=0, le=600, validation_alias="SKILLGATE_MEDIA_TIMEOUT_SECONDS"
    )
    """The most one download may take."""
    max_image_pixels: int = Field(
        40_000_000, ge=1_000_000, le=1_000_000_000, validation_alias="SKILLGATE_MAX_IMAGE_PIXELS"
    )
    """An image with more pixels is refused before it is decoded (a decompression bomb)."""
    max_pdf_pages: int = Field(100, ge=1, le=10_000, validation_alias="SKILLGATE_MAX_PDF_PAGES")
    document_tokens: int = Field(
        2000, ge=100, le=1_000_000, validation_alias="SKILLGATE_DOCUMENT_TOKENS"
    )
    """The most estimated tokens of a document's text the model gets."""
    keep_media: bool = Field(False, validation_alias="SKILLGATE_KEEP_MEDIA")
    decode_memory_mb: int = Field(
        1024, ge=128, le=65_536, validation_alias="SKILLGATE_DECODE_MEMORY_MB"
    )
    """The address space of the child process that decodes one image or document."""
    decode_seconds: float = Field(20.0, gt=0, le=600, validation_alias="SKILLGATE_DECODE_SECONDS")
    """The wall (and CPU) time that child may take."""
    max_voice_seconds: float = Field(
        600.0, gt=0, le=86_400, validation_alias="SKILLGATE_MAX_VOICE_SECONDS"
    )
    """The longest recording transcribed: as declared (before the download), then as its
    bytes say."""
    max_downloads: int = Field(8, ge=1, le=1024, validation_alias="SKILLGATE_MAX_DOWNLOADS")
    """Downloads of users' files at once, across all chats."""
    download_memory_mb: int = Field(
        256, ge=1, le=65_536, validation_alias="SKILLGATE_DOWNLOAD_MEMORY_MB"
    )
    """Bytes of downloads held in memory at once, across all chats (each counts its cap)."""

    _media_unset = field_validator("stt_base_url", "stt_model", "stt_api_key", mode="before")(
        empty_is_unset
    )
    _media_url = field_validator("stt_base_url")(http_url)

    def download_cap(self, kind: Literal["voice", "image", "document"]) -> int:
        """The most bytes of one attachment of `kind` downloaded."""
        megabytes = {
            "voice": self.max_voice_mb,
            "image": self.max_image_mb,
            "document": self.max_document_mb,
        }[kind]
        return int(megabytes * MB)

    @property
    def decode_memory_bytes(self) -> int:
        return self.decode_memory_mb * MB

    @property
    def download_memory_bytes(self) -> int:
        return self.download_memory_mb * MB


DEFAULT_VOICES: dict[str, str] = {"*": "alloy", "ja": "nova", "zh_TW": "nova", "th": "shimmer"}
"""The voice each bot language is spoken in (OpenAI's names; "*": any other language).
TTS_VOICES overrides entries: a server with voices of its own (Kokoro, speaches) names them."""


def parse_voices(value: str) -> dict[str, str]:
    """`ja=jf_alpha,*=af_heart` as {language: voice}; ValueError naming the bad entry."""
    voices: dict[str, str] = {}
    for position, entry in enumerate((e.strip() for e in value.split(",")), start=1):
        if not entry:
            continue
        language, sep, voice = (part.strip() for part in entry.partition("="))
        if not sep or not language or not voice:
            raise ValueError(f"entry {position} is not language=voice")
        if language != "*" and language_of(language) != language:
            names = ", ".join(LANGUAGES)
            raise ValueError(f"entry {position}: {language!r} is not * or one of {names}")
        if not re.fullmatch(r"[A-Za-z0-9_.:-]{1,64}", voice):
            raise ValueError(f"entry {position}: a voice is 1-64 of A-Z, a-z, 0-9, _ . : -")
        voices[language] = voice
    return voices


class SpeechSettings(Section):
    """Answers spoken (text-to-speech at an OpenAI-compatible /audio/speech), and the signed
    links that serve them (and other media the gateway sends) to platforms that fetch by URL."""

    title = "Spoken answers"

    tts_model: str | None = Field(None, validation_alias="TTS_MODEL")
    """The speech model (`tts-1`, `kokoro`, ...); unset: answers are never spoken."""
    tts_base_url: str | None = Field(None, validation_alias="TTS_BASE_URL")
    """An OpenAI-compatible /v1 with /audio/speech; unset: LLM_BASE_URL."""
    tts_api_key: SecretStr | None = Field(None, validation_alias="TTS_API_KEY")
    tts_voices: str = Field("", validation_alias="TTS_VOICES")
    """Voices per bot language over `DEFAULT_VOICES`: `ja=jf_alpha,*=af_heart`."""
    tts_timeout_seconds: float = Field(30.0, gt=0, le=600, validation_alias="TTS_TIMEOUT_SECONDS")
    """The most one spoken answer may take, its whole body read."""
    tts_max_chars: int = Field(600, ge=20, le=4096, validation_alias="TTS_MAX_CHARS")
    """The most characters of an answer spoken; the rest stays text only."""
    tts_max_mb: float = Field(5.0, gt=0, le=50, validation_alias="TTS_MAX_MB")
    """The most audio read from the server for one answer (more: not spoken); at most 50,
    what a bot may upload to Telegram."""
    media_link_minutes: float = Field(
        60.0, ge=1, le=10_080, validation_alias="SKILLGATE_MEDIA_LINK_MINUTES"
    )
    """How long a signed link to a file the gateway sent (LINE fetches audio by URL) works;
    the file is deleted when it expires."""

    _speech_unset = field_validator("tts_model", "tts_base_url", "tts_api_key", mode="before")(
        empty_is_unset
    )
    _speech_url = field_validator("tts_base_url")(http_url)

    @field_validator("tts_voices")
    @classmethod
    def _voices(cls, value: str) -> str:
        parse_voices(value)
        return value

    def voices(self) -> dict[str, str]:
        """The voice map: `DEFAULT_VOICES` with TTS_VOICES over it."""
        return {**DEFAULT_VOICES, **parse_voices(self.tts_voices)}

    def voice_for(self, language: str) -> str:
        """The voice an answer in `language` (a bot language) is spoken in."""
        voices = self.voices()
        return voices.get(language) or voices["*"]

    @property
    def tts_max_bytes(self) -> int:
        return int(self.tts_max_mb * MB)

    @property
    def media_link_seconds(self) -> float:
        return self.media_link_minutes * 60


class SynthesisSettings(Section):
    """Synthesis: how often a pass runs, how much it reads and proposes, and when a skill's
    measured effect proposes retiring it."""

    title = "Synthesis"

    synthesis_interval_minutes: float = Field(
        60.0, ge=0, validation_alias="SKILLGATE_SYNTHESIS_INTERVAL_MINUTES"
    )
    max_proposals_per_run: int = Field(
        3, ge=1, le=50, validation_alias="SKILLGATE_MAX_PROPOSALS_PER_RUN"
    )
    similarity_threshold: float = Field(
        0.85, gt=0, le=1, validation_alias="SKILLGATE_SIMILARITY_THRESHOLD"
    )
    synthesis_batch_sessions: int = Field(
        20, ge=1, le=500, validation_alias="SKILLGATE_SYNTHESIS_BATCH_SESSIONS"
    )
    synthesis_batch_tokens: int = Field(
        6000, ge=500, le=1_000_000, validation_alias="SKILLGATE_SYNTHESIS_BATCH_TOKENS"
    )
    max_skill_bytes: int = Field(
        16_384, ge=1024, le=1_048_576, validation_alias="SKILLGATE_MAX_SKILL_BYTES"
    )
    # Synthesis samples near-greedily: a proposal is drafted from evidence, not invented.
    synthesis_temperature: float = Field(
        0.2, ge=0, le=2, validation_alias="SKILLGATE_SYNTHESIS_TEMPERATURE"
    )
    # Learning on real conversations: the known claims each candidate is compared with, and
    # how long evidence accumulates across passes.
    same_claim_comparands: int = Field(
        4, ge=1, le=20, validation_alias="SKILLGATE_SAME_CLAIM_COMPARANDS"
    )
    evidence_window_days: float = Field(
        14.0, ge=0, le=3650, validation_alias="SKILLGATE_EVIDENCE_WINDOW_DAYS"
    )
    # Tokens learning (synthesis and judging) may spend a UTC day; 0: no budget.
    learning_daily_tokens: int = Field(
        0, ge=0, le=10_000_000_000, validation_alias="SKILLGATE_LEARNING_DAILY_TOKENS"
    )
    # The trial before the card: rated turns answered again with a proposal and without it,
    # per side (what it claims to fix, what it might break; 0: no trials), and its most
    # model calls (answers and comparisons) per proposal.
    trial_turns_per_side: int = Field(
        3, ge=0, le=20, validation_alias="SKILLGATE_TRIAL_TURNS_PER_SIDE"
    )
    trial_calls: int = Field(40, ge=6, le=500, validation_alias="SKILLGATE_TRIAL_CALLS")
    # Judges declared able by the operator: not calibrated, shown as declared.
    trusted_judges: str = Field("", max_length=2000, validation_alias="SKILLGATE_TRUSTED_JUDGES")
    # Skill effects: when a skill is proposed for retirement.
    retire_min_evidence: int = Field(
        5, ge=3, le=100_000, validation_alias="SKILLGATE_RETIRE_MIN_EVIDENCE"
    )
    retire_margin: float = Field(0.15, gt=0, lt=1, validation_alias="SKILLGATE_RETIRE_MARGIN")
    retire_false_alarms: float = Field(
        0.05, gt=0, le=0.5, validation_alias="SKILLGATE_RETIRE_FALSE_ALARMS"
    )

    @property
    def trusted_judge_models(self) -> tuple[str, ...]:
        """The model names in SKILLGATE_TRUSTED_JUDGES (comma-separated)."""
        return tuple(n.strip() for n in self.trusted_judges.split(",") if n.strip())


class ReviewSettings(Section):
    """Review: whether automation's proposals wait for an admin."""

    title = "Review"

    require_approval: bool = Field(True, validation_alias="SKILLGATE_REQUIRE_APPROVAL")
    # Repeat notices: at most this many to one admin in 24 hours; the rest wait (3 days).
    repeat_notices_per_day: int = Field(
        3, ge=1, le=100, validation_alias="SKILLGATE_REPEAT_NOTICES_PER_DAY"
    )


class ToolsSettings(Section):
    """Tools: MCP servers and web tools listed in a file; each call bounded in time and size."""

    title = "Tools"

    tools_file: Path | None = Field(None, validation_alias="SKILLGATE_TOOLS_FILE")
    tool_connect_timeout_seconds: float = Field(
        10.0, gt=0, le=300, validation_alias="SKILLGATE_TOOL_CONNECT_TIMEOUT_SECONDS"
    )
    """How long a server may take to start and list its tools."""
    tool_call_timeout_seconds: float = Field(
        30.0, gt=0, le=600, validation_alias="SKILLGATE_TOOL_CALL_TIMEOUT_SECONDS"
    )
    tool_result_chars: int = Field(
        16384, ge=256, le=1_000_000, validation_alias="SKILLGATE_TOOL_RESULT_CHARS"
    )
    tool_result_max_mb: float = Field(
        2.0, gt=0, le=100, validation_alias="SKILLGATE_TOOL_RESULT_MAX_MB"
    )
    """The most read of one message from a tool server, bounded while it is read."""
    tool_calls_per_round: int = Field(
        3, ge=1, le=32, validation_alias="SKILLGATE_TOOL_CALLS_PER_ROUND"
    )
    """How many tool calls one answer of the model may make at once; the rest are refused."""
    tool_calls_per_turn: int = Field(
        8, ge=1, le=100, validation_alias="SKILLGATE_TOOL_CALLS_PER_TURN"
    )
    """How many tool calls one user message may lead to, over all rounds."""
    tool_admin_confirm: bool = Field(True, validation_alias="SKILLGATE_TOOL_ADMIN_CONFIRM")
    """Whether an `admin` tool asks the admin with a card first, as a `confirm` one does."""
    searxng_url: str | None = Field(None, validation_alias="SEARXNG_URL")
    brave_api_key: SecretStr | None = Field(None, validation_alias="BRAVE_API_KEY")
    brave_search_url: str = Field(
        "https://api.search.brave.com/res/v1/web/search", validation_alias="BRAVE_SEARCH_URL"
    )
    web_fetch_max_bytes: int = Field(
        2 * 1024 * 1024,
        ge=1024,
        le=100 * 1024 * 1024,
        validation_alias="SKILLGATE_WEB_FETCH_MAX_BYTES",
    )

    image_model: str | None = Field(None, validation_alias="IMAGE_MODEL")
    """The image model (`gpt-image-1`, `dall-e-3`, a local one); unset: no `generate_image`."""
    image_base_url: str | None = Field(None, validation_alias="IMAGE_BASE_URL")
    """An OpenAI-compatible /v1 with /images/generations; unset: LLM_BASE_URL."""
    image_api_key: SecretStr | None = Field(None, validation_alias="IMAGE_API_KEY")
    image_timeout_seconds: float = Field(
        120.0, gt=0, le=600, validation_alias="IMAGE_TIMEOUT_SECONDS"
    )
    """The most one image may take, its whole answer read."""
    image_max_mb: float = Field(8.0, gt=0, le=50, validation_alias="IMAGE_MAX_MB")
    """The most bytes read of the server's answer for one image (more: no image)."""

    _tools_unset = field_validator(
        "tools_file",
        "searxng_url",
        "brave_api_key",
        "image_model",
        "image_base_url",
        "image_api_key",
        mode="before",
    )(empty_is_unset)
    _image_url = field_validator("image_base_url")(http_url)


class AlertSettings(Section):
    """Alerts to the admins' private chats and the log, once per incident; 0 turns one off."""

    title = "Alerts"

    alert_model_minutes: float = Field(
        10.0, ge=0, le=10_080, validation_alias="SKILLGATE_ALERT_MODEL_MINUTES"
    )
    alert_webhook_hours: float = Field(
        24.0, ge=0, le=8_760, validation_alias="SKILLGATE_ALERT_WEBHOOK_HOURS"
    )
    alert_disk_mb: int = Field(500, ge=0, le=10_000_000, validation_alias="SKILLGATE_ALERT_DISK_MB")
    alert_synthesis_failures: int = Field(
        3, ge=0, le=1000, validation_alias="SKILLGATE_ALERT_SYNTHESIS_FAILURES"
    )
    alert_tool_minutes: float = Field(
        5.0, ge=0, le=10_080, validation_alias="SKILLGATE_ALERT_TOOL_MINUTES"
    )
    alert_model_window_minutes: float = Field(
        5.0, gt=0, le=1_440, validation_alias="SKILLGATE_ALERT_MODEL_WINDOW_MINUTES"
    )
    alert_model_failed_share: float = Field(
        0.5, gt=0, le=1, validation_alias="SKILLGATE_ALERT_MODEL_FAILED_SHARE"
    )
    alert_model_min_calls: int = Field(
        3, ge=1, le=10_000, validation_alias="SKILLGATE_ALERT_MODEL_MIN_CALLS"
    )

    @property
    def model_window_seconds(self) -> float:
        return self.alert_model_window_minutes * 60


class ScheduleSettings(Section):
    """Scheduled tasks: each user's timezone by default, how late a missed task may run, how
    many tasks a user may hold, how often one may repeat, and who may set them in groups."""

    title = "Scheduled tasks"

    default_timezone: str = Field("UTC", validation_alias="SKILLGATE_DEFAULT_TIMEZONE")
    """The timezone of a user who has not set one (an IANA name: Asia/Tokyo)."""
    task_grace_minutes: float = Field(
        60.0, ge=0, le=10_080, validation_alias="SKILLGATE_TASK_GRACE_MINUTES"
    )
    """A task found overdue by less than this (the bot was down) runs, marked late; later than
    this it is reported missed, never fired."""
    user_max_tasks: int = Field(20, ge=0, le=10_000, validation_alias="SKILLGATE_USER_MAX_TASKS")
    """The most active or paused tasks one user may hold on a channel (0: no limit); a new
    one past it is refused in the chat, and the model's `schedule` call is told why."""
    task_min_repeat_minutes: int = Field(
        60, ge=1, le=44_640, validation_alias="SKILLGATE_TASK_MIN_REPEAT_MINUTES"
    )
    """The shortest time between two runs of a repeating task, on the wall clock: a repeat
    (a named one from the chat or the tool, a cron expression from the command line) that
    fires sooner after the last run at any time in the coming year is refused."""
    group_tasks: Literal["everyone", "admins", "off"] = Field(
        "everyone", validation_alias="SKILLGATE_GROUP_TASKS"
    )
    """Who may set a reminder or task in a group: everyone allowed to use the bot, only the
    bot's admins, or nobody."""

    @field_validator("default_timezone")
    @classmethod
    def _timezone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise ValueError(f"{value!r} is not an IANA timezone (such as Asia/Tokyo)") from exc
        return value

    @property
    def task_grace_seconds(self) -> float:
        return self.task_grace_minutes * 60


class GatewaySettings(Section):
    """The gateway as a whole: where its data lives, where the platforms reach it, who signs
    in to the console, what it says by default, and what it logs."""

    title = "Gateway"
    operator = frozenset({"data_dir", "public_url", "admin_token"})

    data_dir: Path = Field(Path("./data"), validation_alias="SKILLGATE_DATA_DIR")
    public_url: str | None = Field(None, validation_alias="SKILLGATE_PUBLIC_URL")
    admin_token: SecretStr | None = Field(None, validation_alias="SKILLGATE_ADMIN_TOKEN")
    admin_tokens: SecretStr | None = Field(None, validation_alias="SKILLGATE_ADMIN_TOKENS")
    """Named admins for the console and the admin API: `name:token,name:token`."""
    persona_file: Path | None = Field(None, validation_alias="SKILLGATE_PERSONA_FILE")
    # Per-user memory (group context and per-chat personas: `ConversationSettings`).
    memory: Literal["on", "off"] = Field("on", validation_alias="SKILLGATE_MEMORY")
    """What users ask the bot to remember (/remember, the `remember` tool); off: none."""
    # Bot texts: the language for users whose own is unknown or has no catalog.
    default_language: str = Field("en", validation_alias="SKILLGATE_DEFAULT_LANGUAGE")
    log_level: str = Field("INFO", validation_alias="SKILLGATE_LOG_LEVEL")
    log_format: Literal["text", "json"] = Field("text", validation_alias="SKILLGATE_LOG_FORMAT")

    _gateway_unset = field_validator(
        "public_url", "admin_token", "admin_tokens", "persona_file", mode="before"
    )(empty_is_unset)
    _public_url = field_validator("public_url")(http_url)

    @field_validator("default_language", mode="before")
    @classmethod
    def _language(cls, value: Any) -> Any:
        if value is None or (isinstance(value, str) and not value.strip()):
            return "en"
        chosen = language_of(str(value))
        if chosen is None:
            names = ", ".join(LANGUAGES)
            raise ValueError(f"{value!r} is not one of the bot's languages ({names})")
        return chosen

    @field_validator("admin_tokens")
    @classmethod
    def _admin_tokens(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None:
            parse_admin_tokens(value.get_secret_value())
        return value

    @field_validator("log_level")
    @classmethod
    def _level(cls, value: str) -> str:
        value = value.upper()
        if value not in {"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}:
            raise ValueError("must be one of DEBUG, INFO, WARNING, ERROR, CRITICAL")
        return value


class OperationsSettings(Section):
    """Running it: shutting down, answers at once, retention, and several replicas on a
    shared PostgreSQL database instead of the SQLite file."""

    title = "Operations and replicas"

    shutdown_timeout_seconds: float = Field(
        20.0, ge=0, le=600, validation_alias="SKILLGATE_SHUTDOWN_TIMEOUT_SECONDS"
    )
    # Throughput: chats answered at once (each waits on the model most of its turn).
    max_concurrent_answers: int = Field(
        256, ge=1, le=10_000, validation_alias="SKILLGATE_MAX_CONCURRENT_ANSWERS"
    )
    retention_days: int = Field(0, ge=0, le=100_000, validation_alias="SKILLGATE_RETENTION_DAYS")
    """Conversations last active longer ago than this are deleted; 0 keeps them."""
    database_url: SecretStr | None = Field(None, validation_alias="SKILLGATE_DATABASE_URL")
    inbox_lease_seconds: float = Field(
        30.0, ge=2, le=3600, validation_alias="SKILLGATE_INBOX_LEASE_SECONDS"
    )

    _operations_unset = field_validator("database_url", mode="before")(empty_is_unset)

    @field_validator("database_url")
    @classmethod
    def _postgres_url(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and not re.match(r"^postgres(ql)?://\S+$", value.get_secret_value()):
            raise ValueError("must be a postgresql:// URL (leave it unset for SQLite)")
        return value


class Settings(
    BaseSettings,
    GatewaySettings,
    ModelSettings,
    MediaSettings,
    SpeechSettings,
    SynthesisSettings,
    ReviewSettings,
    ConversationSettings,
    ToolsSettings,
    AlertSettings,
    ScheduleSettings,
    OperationsSettings,
):
    """Every setting Skillgate reads; names are the environment variables.

    Composed of the sections each component takes (`ModelSettings` in the core, the rest
    above) and declaring no setting of its own: every setting is in one section, and
    docs/SETTINGS.md and .env.example list them by section (tests/test_config.py). A
    platform's settings are a
    class of their own, read from the same sources with `section` (its package names them;
    this module names no platform).
    """

    model_config = SETTINGS_CONFIG

    _sources: dict[str, Any] = PrivateAttr(default_factory=dict)
    """The `_env_file`-style arguments these settings were read with."""
    _others: dict[str, Any] = PrivateAttr(default_factory=dict)
    """Values given by keyword that no field here declares: a section's, by its field names."""
    _sections: dict[type[BaseSettings], BaseSettings] = PrivateAttr(default_factory=dict)

    def __init__(self, **values: Any) -> None:
        ours = names_of(type(self))
        super().__init__(**values)
        self._sources = {k: v for k, v in values.items() if k.startswith("_")}
        self._others = {k: v for k, v in values.items() if k[:1] != "_" and k not in ours}

    def section(self, model: type[SectionT]) -> SectionT:
        """`model` read from the sources these settings were (the environment, the same env
        file, the keyword values that are its fields), once; ConfigError naming a bad value."""
        found = self._sections.get(model)
        if found is None:
            names = names_of(model)
            given = {k: v for k, v in self._others.items() if k in names}
            try:
                found = _like(type(self), model)(**self._sources, **given)
            except ValidationError as exc:
                problem = describe_validation_error(exc, model)
                raise ConfigError(f"invalid setting: {problem}") from None
            self._sections[model] = found
        return cast(SectionT, found)

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy with `update` applied: a section's fields too (read again when asked)."""
        update = dict(update or {})
        ours = names_of(type(self))
        others = {k: update.pop(k) for k in list(update) if k not in ours}
        copied = super().model_copy(update=update, deep=deep)
        copied._sources = dict(self._sources)
        copied._others = {**self._others, **others}
        copied._sections = {} if others else dict(self._sections)
        return copied

    @model_validator(mode="after")
    def _budget_needs_prices(self) -> Settings:
        if self.daily_cost_budget > 0 and not self.llm_prices.strip():
            raise ValueError("SKILLGATE_DAILY_COST_BUDGET needs LLM_PRICES to price the tokens")
        # Unpriced, the model's answers would cost nothing and the budget never be reached.
        unpriced = self.llm_model is not None and price_of(self.prices(), self.llm_model) is None
        if self.daily_cost_budget > 0 and unpriced:
            raise ValueError(
                "SKILLGATE_DAILY_COST_BUDGET: LLM_PRICES has no price for LLM_MODEL"
                " (name it, or add *=input/output)"
            )
        return self

    @property
    def media_dir(self) -> Path | None:
        """Where downloads are kept after their turn (SKILLGATE_KEEP_MEDIA), or None."""
        return self.data_dir / "media" if self.keep_media else None

    def admins(self) -> dict[str, str]:
        """Every admin token by name; "" names the single SKILLGATE_ADMIN_TOKEN."""
        named = {}
        if self.admin_tokens is not None:
            named = parse_admin_tokens(self.admin_tokens.get_secret_value())
        if self.admin_token is not None:
            named[""] = self.admin_token.get_secret_value()
        return named

    @property
    def stt_configured(self) -> bool:
        """Voice can be transcribed: a model, and an endpoint of its own or the LLM's."""
        return self.stt_model is not None and (self.stt_base_url or self.llm_base_url) is not None

    @property
    def tts_configured(self) -> bool:
        """Answers can be spoken: a model, and an endpoint of its own or the LLM's."""
        return self.tts_model is not None and (self.tts_base_url or self.llm_base_url) is not None

    @property
    def speech_links_dir(self) -> Path:
        """Where files served by signed link wait until their link expires."""
        return self.data_dir / "links"

    @property
    def shared_database(self) -> bool:
        """PostgreSQL: other replicas may be working on the same data."""
        return self.database_url is not None

    @property
    def db_path(self) -> Path:
        return self.data_dir / "skillgate.db"

    @property
    def skills_dir(self) -> Path:
        return self.data_dir / "skills"

    def gateway_secrets(self) -> list[str]:
        """The gateway's own configured secret values, for redaction; with every platform's
        too (what a log or a stored text is kept from): `registry.secrets(settings)`."""
        # Every SecretStr field (a platform's are its section's: `registry.secrets` adds
        # them); these three are read in parts below.
        parts = ("llm_fallback_api_keys", "admin_tokens", "database_url")
        whole = (v for k, v in self if k not in parts)
        values = [v.get_secret_value() for v in whole if isinstance(v, SecretStr)]
        if self.llm_fallback_api_keys is not None:
            keys = self.llm_fallback_api_keys.get_secret_value().split(",")
            values.extend(k.strip() for k in keys if k.strip())
        if self.admin_tokens is not None:
            values.append(self.admin_tokens.get_secret_value())
            values.extend(parse_admin_tokens(self.admin_tokens.get_secret_value()).values())
        if self.database_url is not None:
            password = urlsplit(self.database_url.get_secret_value()).password
            if password:
                values.append(password)
        return values


@functools.cache
def _like(settings: type[Settings], model: type[SectionT]) -> type[SectionT]:
    """`model`, reading the kinds of sources `settings` reads: a Settings class that chooses
    its sources (`settings_customise_sources`: the run's values only, say) chooses its
    sections' too."""
    chosen = settings.settings_customise_sources.__func__  # type: ignore[attr-defined]
    if chosen is BaseSettings.settings_customise_sources.__func__:  # type: ignore[attr-defined]
        return model

    def sources(cls: type[BaseSettings], *given: Any, **named: Any) -> Any:
        return settings.settings_customise_sources(*given, **named)

    attributes = {"settings_customise_sources": classmethod(sources), "__module__": __name__}
    return cast(type[SectionT], type(model.__name__, (model,), attributes))


def secret_fields(model: type[BaseSettings]) -> frozenset[str]:
    """The variables (and field names) of every SecretStr field: never echoed in an error."""
    return frozenset(
        name
        for key, f in model.model_fields.items()
        if SecretStr in (f.annotation, *get_args(f.annotation))
        for name in (key, str(f.validation_alias))
    )


def describe_validation_error(exc: ValidationError, model: type[BaseSettings] = Settings) -> str:
    """One line per problem, naming the variable; never echoes a secret of `model`."""
    secret = secret_fields(model)
    lines = []
    for err in exc.errors():
        name = str(err["loc"][0]) if err["loc"] else "settings"
        msg = err["msg"].removeprefix("Value error, ")
        if name not in secret and "input" in err and isinstance(err["input"], str):
            msg += f" (got {err['input']!r})"
        lines.append(f"{name}: {msg}")
    return "; ".join(lines)


def load_settings(*, sections: Sequence[type[BaseSettings]] = (), **overrides: Any) -> Settings:
    """Read settings, and `sections` (each platform's) from the same sources, turning every
    validation error of all of them into one readable ConfigError."""
    problems: list[str] = []
    settings: Settings | None = None
    try:
        settings = Settings(**overrides)
    except ValidationError as exc:
        problems.append(describe_validation_error(exc))
    for model in sections:
        try:
            if settings is not None:
                settings.section(model)  # read once, kept for whoever asks
            else:  # the same sources, to name its problems too
                given = {k: v for k, v in overrides.items() if k[:1] == "_" or k in names_of(model)}
                model(**given)
        except ConfigError as exc:
            problems.append(str(exc).removeprefix("invalid setting: "))
        except ValidationError as exc:
            problems.append(describe_validation_error(exc, model))
    if problems or settings is None:
        raise ConfigError(f"invalid setting: {'; '.join(problems)}")
    return settings
