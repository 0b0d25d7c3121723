"""What a platform can do, as the channel-neutral layers decide by it (its spec declares it)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class Capabilities:
    """What the platform can do, as the gateway uses it.

    The conversation layer and the card delivery read these (from the channel's `Profile`
    and the registry's specs) instead of asking which platform it is.
    """

    edit: bool = False
    """Change a message it sent: a press shows its rating and a card its decision in place;
    without it, a decision reaches the other admins' copies as a notice."""
    drafts: bool = False
    """Show an answer while the model writes it: the model's text is streamed to the
    responder's preview; without it the answer arrives whole."""
    push: bool = True
    """Send without an update to answer: proposal cards go to its admins only then."""
    speech: Literal["opus", "mp3"] | None = None
    """The audio it plays as a spoken answer: "opus" (OGG/Opus, a voice message) or "mp3";
    None: answers are never spoken there."""
    media_by_link: bool = False
    """It fetches media the bot sends from a URL (served by the gateway under a signed link
    that expires) rather than taking the bytes."""
