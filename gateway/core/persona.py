"""Per-chat personas: what a chat's admins add to the operator's persona, and its checks.

The chat's persona comes after the operator's, fenced, so it can shape the voice of one chat
without closing the section it is in. It is bounded and scanned for secrets wherever it is
set (the chat command, the console), and each answer's trace carries the hash of the
persona it was made under, so answers under different personas can be told apart.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Literal

from gateway.core.fence import TAG, fence
from gateway.core.secrets import find_secret

PERSONA_CHARS = 1000
"""What a chat's persona holds at most."""

PERSONA_RULE = (
    "The admins of this chat gave it a persona of its own, fenced below. Follow it for tone,"
    " role and style where it does not conflict with what is said above."
)

Refusal = Literal["empty", "too long", "secret"]


def refusal(text: str, known: Sequence[str] = ()) -> Refusal | None:
    """Why `text` cannot be a chat's persona, or None."""
    if not text.strip():
        return "empty"
    if len(text.strip()) > PERSONA_CHARS:
        return "too long"
    if find_secret([text], known) is not None:
        return "secret"
    return None


def persona_section(persona: str | None) -> str:
    """The chat's persona, fenced, for the system prompt after the operator's; "" without."""
    if not persona:
        return ""
    return f"{PERSONA_RULE}\n{fence(persona.strip(), TAG, source='chat-persona')}"


def persona_hash(operator: str, chat: str | None) -> str:
    """A short hash of the persona an answer is made under (the operator's and the chat's)."""
    digest = hashlib.sha256(operator.strip().encode())
    if chat:
        digest.update(b"\0" + chat.strip().encode())
    return digest.hexdigest()[:16]
