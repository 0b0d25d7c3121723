"""Logging set-up: readable lines or JSON, and no secret ever printed."""

from __future__ import annotations

import json
import logging
import re
import sys
import time
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import IO, Any

REDACTED = "[redacted]"
SHORTEST_SECRET = 4
"""A configured secret shorter than this is not masked (it would mask ordinary words)."""
# Credentials whoever holds them: an OpenAI-style key, a bearer token, a key or token
# parameter (its name stays readable).
CREDENTIALS = (
    re.compile(r"\bsk-[A-Za-z0-9_-]{8,}"),
    re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{8,}"),
    re.compile(r"(?i)\b(api[_-]?key|key|token)=([^\s&\"']{6,})"),
)

# Loggers that log every request; httpx's lines carry platform URLs with tokens in them.
# The platforms' own SDK loggers are added by the caller (their specs name them).
NOISY = ("httpx", "httpcore", "openai", "apscheduler", "aiohttp.access")


def mask(text: str, secrets: Iterable[str] = (), shapes: Iterable[str] = ()) -> str:
    """`text` with every one of `secrets`, any credential (`CREDENTIALS`) and anything
    matching one of `shapes` masked."""
    return RedactSecrets(secrets, shapes).redact(text)


def _hide_value(match: re.Match[str]) -> str:
    return f"{match.group(1)}={REDACTED}" if match.lastindex == 2 else REDACTED


class RedactSecrets(logging.Filter):
    """Replace every configured secret, and anything shaped like a credential, in a record.

    The shapes (regular expressions, such as a bot token's) catch a credential that is
    not the configured one, e.g. inside a URL a client logs.
    """

    def __init__(self, secrets: Iterable[str], shapes: Iterable[str] = ()) -> None:
        super().__init__()
        # Longest first, so a secret containing another is masked whole.
        self.secrets = sorted(
            {s for s in secrets if len(s) >= SHORTEST_SECRET}, key=len, reverse=True
        )
        self.shapes = [re.compile(shape) for shape in dict.fromkeys(shapes)]

    def redact(self, text: str) -> str:
        for secret in self.secrets:
            text = text.replace(secret, REDACTED)
        for credential in CREDENTIALS:
            text = credential.sub(_hide_value, text)
        for shape in self.shapes:
            text = shape.sub(REDACTED, text)
        return text

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        text = self.redact(message)
        if text != message:
            record.msg, record.args = text, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self.redact(record.exc_text)
        if record.stack_info:
            record.stack_info = self.redact(record.stack_info)
        return True


class Throttle(logging.Filter):
    """At most `burst` records of one message per `window` seconds; then a count of the rest.

    A message is its logger, level and format string, so a flood of one warning (a
    thousand refused connections, a client retrying in a loop) cannot fill the disk,
    while different messages pass untouched.
    """

    def __init__(
        self, burst: int = 10, window: float = 60.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        super().__init__()
        self.burst, self.window, self.clock = burst, window, clock
        self._seen: dict[tuple[str, int, str], tuple[float, int]] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        key = (record.name, record.levelno, str(record.msg))
        now = self.clock()
        started, count = self._seen.get(key, (now, 0))
        if now - started >= self.window:
            if count > self.burst:
                record.msg = f"({count - self.burst} more like this were not logged) {record.msg}"
            started, count = now, 0
        if len(self._seen) > 10_000:
            self._seen.clear()
        self._seen[key] = (started, count + 1)
        return count < self.burst


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message and, if any, exc."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            entry["exc"] = record.exc_text
        if record.stack_info:
            entry["stack"] = record.stack_info
        return json.dumps(entry, ensure_ascii=False)


def make_handler(
    secrets: Iterable[str] = (),
    log_format: str = "text",
    stream: IO[str] | None = None,
    shapes: Iterable[str] = (),
) -> logging.Handler:
    """A stream handler in the chosen format, masking secrets and credential shapes."""
    handler = logging.StreamHandler(sys.stderr if stream is None else stream)
    if log_format == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.addFilter(Throttle())
    handler.addFilter(RedactSecrets(secrets, shapes))
    return handler


def setup_logging(
    level: str = "INFO",
    secrets: Iterable[str] = (),
    log_format: str = "text",
    stream: IO[str] | None = None,
    *,
    shapes: Iterable[str] = (),
    quiet: Iterable[str] = (),
) -> None:
    """Log to stderr (text or JSON) with secrets and `shapes` masked; quiet the chatty
    HTTP libraries and the `quiet` loggers."""
    root = logging.getLogger()
    root.handlers[:] = [make_handler(secrets, log_format, stream, shapes)]
    root.setLevel(level)
    # Request-per-line loggers stay at WARNING even in DEBUG; what they do print is masked.
    for noisy in (*NOISY, *quiet):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, logging.getLevelName(level)))
