"""Secret scan: a proposal that carries anything shaped like a credential is refused.

A skill is read by the model on every matching turn and shown to reviewers, so
a key the model copied from a chat must never reach one. The scan names the
kind of secret it found, never the value.

Text is normalised first (NFKC, format characters such as zero-width spaces and
soft hyphens removed, HTML entities and percent-escapes decoded), so a key
split by an invisible character or written with full-width letters is still a
key. The maintained `detect-secrets` plugins do most of the shape matching;
the few shapes they miss (Hugging Face tokens, Bearer headers, PGP key blocks,
assignments to names such as `DB_PASSWORD`) and long high-entropy strings are
matched here. The gateway's own configured secrets are looked for raw, without
spaces, and in base64, hex and percent-encoding, and inside any base64 or hex
run the text carries.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import functools
import html
import math
import re
import unicodedata
import urllib.parse
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from detect_secrets.plugins.base import RegexBasedDetector


@functools.cache
def _detectors() -> tuple[RegexBasedDetector, ...]:
    """The detect-secrets plugins, loaded on the first scan (with `requests`, a tenth of a
    plain start's imports)."""
    from detect_secrets.plugins.artifactory import ArtifactoryDetector
    from detect_secrets.plugins.aws import AWSKeyDetector
    from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector
    from detect_secrets.plugins.basic_auth import BasicAuthDetector
    from detect_secrets.plugins.discord import DiscordBotTokenDetector
    from detect_secrets.plugins.github_token import GitHubTokenDetector
    from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
    from detect_secrets.plugins.mailchimp import MailchimpDetector
    from detect_secrets.plugins.private_key import PrivateKeyDetector
    from detect_secrets.plugins.pypi_token import PypiTokenDetector
    from detect_secrets.plugins.sendgrid import SendGridDetector
    from detect_secrets.plugins.slack import SlackDetector
    from detect_secrets.plugins.square_oauth import SquareOAuthDetector
    from detect_secrets.plugins.stripe import StripeDetector
    from detect_secrets.plugins.telegram_token import TelegramBotTokenDetector
    from detect_secrets.plugins.twilio import TwilioKeyDetector

    # The npm, OpenAI and JWT plugins are left out: their patterns take quadratic time on
    # long hostile runs (a minute for 60 kB), and the shapes below match those keys.
    return (
        ArtifactoryDetector(),
        AWSKeyDetector(),
        AzureStorageKeyDetector(),
        BasicAuthDetector(),
        DiscordBotTokenDetector(),
        GitHubTokenDetector(),
        GitLabTokenDetector(),
        MailchimpDetector(),
        PrivateKeyDetector(),
        PypiTokenDetector(),
        SendGridDetector(),
        SlackDetector(),
        SquareOAuthDetector(),
        StripeDetector(),
        TelegramBotTokenDetector(),
        TwilioKeyDetector(),
    )


_KEYWORD = (
    r"password|passwd|passphrase|pwd|secret|token|api[_-]?key|access[_-]?key|private[_-]?key"
    r"|credentials?|client[_-]?secret|auth"
)

_SHAPES: list[tuple[str, re.Pattern[str]]] = [
    ("a private key", re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----")),
    ("an OpenAI-style API key", re.compile(r"\bsk-(?:proj-|ant-|live-)?[A-Za-z0-9_-]{20,}")),
    ("a Stripe key", re.compile(r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{10,}")),
    ("a Hugging Face token", re.compile(r"\bhf_[A-Za-z0-9]{20,}")),
    ("a GitHub token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_\w{30,})")),
    ("a Slack token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
    ("an AWS access key", re.compile(r"(?<![A-Z0-9])(?:AKIA|ASIA)[0-9A-Z]{16}(?![A-Z0-9])")),
    ("a Google API key", re.compile(r"AIza[0-9A-Za-z_-]{35}")),
    # No \b before the digits: in a Bot API URL the token follows "/bot".
    ("a Telegram bot token", re.compile(r"(?<!\d)\d{6,}:[A-Za-z0-9_-]{30,}")),
    (
        "a URL with a password",
        re.compile(
            r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{0,30}://[^\s/:@]{1,200}:[^\s/@]{1,200}@[^\s/]"
        ),
    ),
    (
        "an Authorization header",
        re.compile(r"(?i)\b(?:bearer|basic|token)\s+[A-Za-z0-9._~+/=-]{16,}"),
    ),
    (
        "a JSON web token",
        re.compile(r"\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}"),
    ),
    (
        "a password or token assignment",
        # The keyword may be part of a longer name (DB_PASSWORD, aws_secret_access_key).
        # Placeholders such as <your-key>, ${VAR} or {{token}} are instructions, and
        # `tokens = len(words)` is code, not secrets.
        re.compile(
            rf"(?i)(?<![A-Za-z0-9_.-])[A-Za-z0-9_.-]{{0,40}}(?:{_KEYWORD})[A-Za-z0-9_.-]{{0,40}}"
            r"[\"']?\s*[:=]\s*[\"']?(?![<${*%]|x{4,}|[A-Za-z_][\w.]*\()[^\s\"'`,;]{6,}"
        ),
    ),
]

_RUN = re.compile(r"[A-Za-z0-9+/_=-]{20,}")
_B64_RUN = re.compile(r"[A-Za-z0-9+/_-]{16,}={0,2}")
_HEX_RUN = re.compile(r"(?i)\b[0-9a-f]{16,}\b")


def normalise(text: str) -> str:
    """NFKC, format characters (zero-width, soft hyphen, bidi marks) removed, entities decoded."""
    text = html.unescape(text)
    text = unicodedata.normalize("NFKC", text)
    return "".join(ch for ch in text if unicodedata.category(ch) != "Cf")


def _entropy(data: str) -> float:
    counts: dict[str, int] = {}
    for ch in data:
        counts[ch] = counts.get(ch, 0) + 1
    return -sum(n / len(data) * math.log2(n / len(data)) for n in counts.values())


def _high_entropy(text: str) -> bool:
    """A long run of letters and digits as random as a generated key."""
    for match in _RUN.finditer(text):
        run = match.group().strip("=-_")
        if len(run) < 20 or not re.search(r"\d", run) or not re.search(r"[A-Za-z]", run):
            continue
        if re.fullmatch(r"(?i)[0-9a-f]+", run):
            if len(run) >= 32 and _entropy(run) >= 3.0:
                return True
        elif re.search(r"[a-z]", run) and re.search(r"[A-Z]", run) and _entropy(run) >= 4.2:
            return True
    return False


def _decoded(text: str) -> Iterator[str]:
    """The text behind any base64 or hex run it carries, as far as it decodes to text."""
    for match in _B64_RUN.finditer(text):
        raw = match.group()
        for decode in (base64.b64decode, base64.urlsafe_b64decode):
            try:
                value = decode(raw + "=" * (-len(raw) % 4)).decode("utf-8")
            except (binascii.Error, ValueError):
                continue
            if value.isprintable():
                yield value
    for match in _HEX_RUN.finditer(text):
        raw = match.group()
        if len(raw) % 2 == 0:
            with contextlib.suppress(ValueError):
                yield bytes.fromhex(raw).decode("utf-8")


def _compact(text: str) -> str:
    return re.sub(r"[\s\-_.,;:|/\\]+", "", text).lower()


def _known_forms(known: Iterable[str]) -> list[str]:
    """Each configured secret in the encodings a chat or a model would use."""
    forms: list[str] = []
    for value in known:
        if len(value) < 8:
            continue
        data = value.encode("utf-8")
        b64 = base64.b64encode(data).decode()
        forms += [
            value,
            urllib.parse.quote(value, safe=""),
            b64,
            b64.rstrip("="),
            base64.urlsafe_b64encode(data).decode().rstrip("="),
            data.hex(),
            data.hex().upper(),
        ]
    return forms


def _shape(text: str) -> str | None:
    for detector in _detectors():
        for _ in detector.analyze_string(text):
            return f"a credential ({detector.secret_type})"
    for label, pattern in _SHAPES:
        if pattern.search(text):
            return label
    if _high_entropy(text):
        return "a high-entropy string"
    return None


def find_secret(texts: Iterable[str], known: Iterable[str] = ()) -> str | None:
    """What kind of secret appears in `texts` (a configured one included), or None."""
    known = list(known)
    forms = _known_forms(known)
    compact_known = [_compact(k) for k in known if len(_compact(k)) >= 8]
    for original in texts:
        text = normalise(original)
        views = [text, urllib.parse.unquote(text)]
        views += list(_decoded(text))
        for view in views:
            if any(form in view for form in forms):
                return "a configured secret of this gateway"
            compact = _compact(view)
            if any(k in compact for k in compact_known):
                return "a configured secret of this gateway"
        for view in views:
            found = _shape(view)
            if found:
                return found
    return None
