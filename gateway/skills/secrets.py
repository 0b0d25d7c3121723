"""Secret scan: a proposal that carries anything shaped like a credential is refused.

A skill is read by the model on every matching turn and shown to reviewers, so
a key the model copied from a chat must never reach one. The scan names the
kind of secret it found, never the value.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_SHAPES: list[tuple[str, re.Pattern[str]]] = [
    ("a private key", re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----")),
    ("an OpenAI-style API key", re.compile(r"\bsk-(?:proj-|ant-|live-)?[A-Za-z0-9_-]{20,}")),
    ("a GitHub token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_\w{30,})")),
    ("a Slack token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
    ("an AWS access key", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("a Google API key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}")),
    ("a Telegram bot token", re.compile(r"\b\d{6,}:[A-Za-z0-9_-]{30,}")),
    (
        "a JSON web token",
        re.compile(r"\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}"),
    ),
    (
        "a password or token assignment",
        # Placeholders such as <your-key>, ${VAR} or {{token}} are instructions, not secrets.
        re.compile(
            r"(?i)\b(?:password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key)\b"
            r"[\"']?\s*[:=]\s*[\"']?(?![<${*]|x{4,})[^\s\"'`,;]{6,}"
        ),
    ),
]


def find_secret(texts: Iterable[str], known: Iterable[str] = ()) -> str | None:
    """What kind of secret appears in `texts` (a configured one included), or None."""
    values = [k for k in known if len(k) >= 8]
    for text in texts:
        if any(value in text for value in values):
            return "a configured secret of this gateway"
        for label, pattern in _SHAPES:
            if pattern.search(text):
                return label
    return None
