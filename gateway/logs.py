"""Logging set-up: readable lines, and no configured secret ever printed."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterable

REDACTED = "[redacted]"


class RedactSecrets(logging.Filter):
    """Replace every configured secret in a record's final message."""

    def __init__(self, secrets: Iterable[str]) -> None:
        super().__init__()
        # Longest first, so a secret containing another is masked whole.
        self.secrets = sorted({s for s in secrets if len(s) >= 4}, key=len, reverse=True)

    def filter(self, record: logging.LogRecord) -> bool:
        if not self.secrets:
            return True
        message = record.getMessage()
        text = message
        for secret in self.secrets:
            text = text.replace(secret, REDACTED)
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        exc_text = record.exc_text
        if exc_text:
            for secret in self.secrets:
                exc_text = exc_text.replace(secret, REDACTED)
            record.exc_text = exc_text
        if text != message:
            record.msg, record.args = text, None
        return True


def setup_logging(level: str = "INFO", secrets: Iterable[str] = ()) -> None:
    """Log to stderr with secrets masked; quiet the chatty HTTP libraries."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.addFilter(RedactSecrets(secrets))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    # httpx logs every request URL, and Telegram's URLs contain the bot token.
    for noisy in ("httpx", "httpcore", "openai", "telegram.ext", "apscheduler", "aiohttp.access"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, logging.getLevelName(level)))
