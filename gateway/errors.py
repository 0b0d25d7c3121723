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
     │    ├── ModelUnavailable  transient failures outlasted the retries (or a timeout)
     │    ├── ContextOverflow   the prompt does not fit the model's context window
     │    ├── ToolsUnsupported  the server or model refuses tool definitions
     │    └── JsonModeUnsupported  the server refuses the asked response_format
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


class ModelUnavailable(ModelError):
    """The model kept failing after retries (timeouts, 5xx, rate limits)."""


class ContextOverflow(ModelError):
    """The prompt is longer than the model's context window."""


class ToolsUnsupported(ModelError):
    """The server or model refuses requests that define tools."""


class JsonModeUnsupported(ModelError):
    """The server refuses the requested `response_format`."""


class ChannelError(SkillgateError):
    """A platform API call failed."""


class RateLimited(ChannelError):
    """The platform asked us to wait ``retry_after`` seconds."""

    def __init__(self, message: str, retry_after: float) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class ClaimLost(SkillgateError):
    """This replica's claim on the update it handles is gone: it must not send for it."""
