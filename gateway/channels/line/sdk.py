"""Every part of the LINE channel that imports line-bot-sdk, loaded in one go.

The SDK takes most of a second to import (its generated API and model modules).
`LineChannel` loads this module in a worker thread once the server starts (see
`LineChannel.start`), so the gateway is healthy and its webhooks take updates while it
loads; nothing that needs the SDK runs before it is loaded.
"""

from __future__ import annotations

from linebot.v3.webhook import SignatureValidator

from gateway.channels.line.cards import CardBubbles, LineCards
from gateway.channels.line.client import LineClient, PushQuotaExhausted
from gateway.channels.line.delivery import EventContext, LineOutbox
from gateway.channels.line.responder import LineResponder

__all__ = [
    "CardBubbles",
    "EventContext",
    "LineCards",
    "LineClient",
    "LineOutbox",
    "LineResponder",
    "PushQuotaExhausted",
    "SignatureValidator",
]
