"""Button data of proposal cards: compact, signed, and refused when forged.

A card button carries "p<a|r|d|s>:<proposal id>:<signature>", where the
signature is the start of an HMAC-SHA256 of "<action>:<id>" under a key derived
from the channel's own secret (Telegram's bot token, LINE's channel secret). It
stays far below Telegram's 64 bytes and LINE's 300 characters, and a client
that makes up data for another proposal or action is refused.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
from typing import Literal

CardAction = Literal["approve", "reject", "diff", "skip"]

_CODES: dict[CardAction, str] = {"approve": "a", "reject": "r", "diff": "d", "skip": "s"}
_ACTIONS: dict[str, CardAction] = {code: action for action, code in _CODES.items()}
_DATA = re.compile(r"p([ards]):([0-9]{1,18}):([A-Za-z0-9_-]{1,32})")
SIGNATURE_CHARS = 12
"""72 bits of the HMAC: enough that guessing one is hopeless, short enough for any platform."""
KEY_LABEL = b"skillgate-cards"


def is_card_data(data: str | None) -> bool:
    """Whether button data is meant for the card handler (valid or not)."""
    return data is not None and data[:3] in {"pa:", "pr:", "pd:", "ps:"}


class CardSigner:
    """Makes and checks the data of card buttons for one channel."""

    def __init__(self, secret: str) -> None:
        self._key = hmac.new(KEY_LABEL, secret.encode(), hashlib.sha256).digest()

    def _signature(self, code: str, proposal_id: int) -> str:
        return self.sign(f"{code}:{proposal_id}")

    def sign(self, message: str) -> str:
        """The signature of any button data of this channel (cards, tool confirmations)."""
        digest = hmac.new(self._key, message.encode(), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest).decode()[:SIGNATURE_CHARS]

    def data(self, action: CardAction, proposal_id: int) -> str:
        """The signed data for a button."""
        code = _CODES[action]
        return f"p{code}:{proposal_id}:{self._signature(code, proposal_id)}"

    def verify(self, data: str | None) -> tuple[CardAction, int] | None:
        """(action, proposal id) when the data is well formed and signed by us, else None."""
        match = _DATA.fullmatch(data or "")
        if match is None:
            return None
        code, raw_id, signature = match.groups()
        proposal_id = int(raw_id)
        if not hmac.compare_digest(signature, self._signature(code, proposal_id)):
            return None
        return _ACTIONS[code], proposal_id
