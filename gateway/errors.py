"""Every error Skillgate raises on purpose, as one tree.

    SkillgateError
     ├── ConfigError            a setting is missing or invalid
     ├── StoreError             the database refused or failed an operation
     │    └── StoreBusy         another connection held the lock past the busy timeout
     ├── SkillError
     │    ├── InvalidSlug       a skill name breaks the Agent Skills naming rules
     │    ├── PathEscape        a composed path would leave the skills root
     │    ├── SkillNotFound     no such skill on disk
     │    ├── InvalidSkill      a SKILL.md that cannot be parsed
     │    ├── ProposalNotFound  no proposal with that id
     │    ├── RollbackRefused   the proposal cannot be rolled back (now)
     │    └── ReopenRefused     the proposal is not a rejected one
     ├── SynthesisError         a synthesis pass could not use the model's answer
     ├── ModelError             the LLM call failed
     │    ├── ModelNotConfigured
     │    ├── ModelMisconfigured  refused our key, unknown URL or model, nothing listening
     │    ├── ModelUnavailable  transient failures outlasted the retries (or a timeout)
     │    ├── ContextOverflow   the prompt does not fit the model's context window
     │    ├── ToolsUnsupported  the server or model refuses tool definitions
     │    ├── JsonModeUnsupported  the server refuses the asked response_format
     │    └── VisionUnsupported  the server or model refuses image content parts
     ├── MediaError             a user's voice note, photo or document could not be read
     │    ├── MediaTooBig       larger than its kind's cap (declared or downloaded)
     │    ├── MediaUnavailable  the download failed or took too long
     │    ├── MediaUnsupported  a kind or format the gateway does not read
     │    ├── MediaBomb         more pixels or pages than allowed (a decompression bomb)
     │    └── TranscriptionFailed  the speech-to-text endpoint failed
     ├── ChannelError           a platform API call failed
     │    └── RateLimited       the platform asked us to slow down
     └── ClaimLost              another replica took over the update being handled

Library errors are translated into these at the edge (``raise ... from exc``),
so callers never catch an SDK's exception type.
"""

from __future__ import annotations


class SkillgateError(Exception):
    """Base of every error raised on purpose."""


class ConfigError(SkillgateError):
    """A setting is missing or invalid."""


class StoreError(SkillgateError):
    """The database refused or failed an operation."""


class StoreBusy(StoreError):
    """The database stayed locked by another connection past the busy timeout (transient)."""


class SkillError(SkillgateError):
    """A skill could not be named, found, read or written."""


class InvalidSlug(SkillError):
    """A skill name breaks the Agent Skills naming rules."""


class PathEscape(SkillError):
    """A composed path would leave the skills root."""


class SkillNotFound(SkillError):
    """No skill with that name exists."""


class InvalidSkill(SkillError):
    """A SKILL.md file cannot be parsed or breaks the format."""


class ProposalNotFound(SkillError):
    """No proposal with that id exists."""


class RollbackRefused(SkillError):
    """The proposal is not an approved update, or its skill changed since."""


class ReopenRefused(SkillError):
    """Only a rejected proposal can be reopened."""


class SynthesisError(SkillgateError):
    """The model's answer to a synthesis batch was not valid JSON of the agreed shape."""


class ModelError(SkillgateError):
    """The LLM call failed."""


class ModelNotConfigured(ModelError):
    """No model endpoint is configured."""


class ModelMisconfigured(ModelError):
    """The operator's to fix: a refused key (401/403), an unknown URL or model (404), or no
    server at the address. No skill can mend it, so it is never learning evidence."""


class ModelUnavailable(ModelError):
    """The model kept failing after retries (timeouts, 5xx, rate limits)."""


class ContextOverflow(ModelError):
    """The prompt is longer than the model's context window."""


class ToolsUnsupported(ModelError):
    """The server or model refuses requests that define tools."""


class JsonModeUnsupported(ModelError):
    """The server refuses the requested `response_format`."""


class VisionUnsupported(ModelError):
    """The server or model refuses messages with image content parts."""


class MediaError(SkillgateError):
    """A user's voice note, photo or document could not be read."""


class MediaTooBig(MediaError):
    """The file is larger than its kind's cap."""

    def __init__(self, message: str, limit: int) -> None:
        super().__init__(message)
        self.limit = limit


class MediaUnavailable(MediaError):
    """The download failed or did not finish in time."""


class MediaUnsupported(MediaError):
    """A kind or format the gateway does not read."""


class MediaBomb(MediaError):
    """More pixels, pages or unpacked bytes than allowed."""

    def __init__(self, message: str, *, unit: str, limit: int) -> None:
        super().__init__(message)
        self.unit = unit
        """What was too much: "pixels", "pages" or "bytes" (unpacked)."""
        self.limit = limit


class TranscriptionFailed(MediaError):
    """The speech-to-text endpoint failed or answered nothing usable."""


class SpeechFailed(MediaError):
    """The text-to-speech endpoint failed, or answered too much, too slowly or nothing usable."""


class ChannelError(SkillgateError):
    """A platform API call failed."""


class ChatUnreachable(ChannelError):
    """The chat cannot be written to: the bot was blocked or removed, or the chat is gone."""


class RateLimited(ChannelError):
    """The platform asked us to wait ``retry_after`` seconds."""

    def __init__(self, message: str, retry_after: float) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class ClaimLost(SkillgateError):
    """This replica's claim on the update it handles is gone: it must not send for it."""
