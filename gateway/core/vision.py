"""Whether the model gets images (LLM_VISION): on, off, or auto, which learns from a refusal.

In `auto` the first refusal of image content parts is written to the store (meta
`vision:refused:<model>`), so no later turn, after any restart, sends images to that model
again; changing LLM_MODEL tries the new one.
"""

from __future__ import annotations

import logging
from typing import Literal

from gateway.core.ports import Meta
from gateway.i18n import N_

log = logging.getLogger(__name__)

VisionMode = Literal["auto", "on", "off"]
NO_VISION = N_(
    "Sorry, the model behind this bot can't see images, so I can't read your photo."
    " Add a caption or send your question as text."
)
"""Said for an image without a caption when the model gets no images."""


class VisionPolicy:
    """Decides whether this turn's images are sent; remembers a refusal on disk."""

    def __init__(self, mode: VisionMode, memory: Meta, model: str | None) -> None:
        self.mode = mode
        self.memory = memory
        self.model = model

    @property
    def key(self) -> str:
        return f"vision:refused:{self.model or ''}"

    async def allowed(self) -> bool:
        if self.mode != "auto":
            return self.mode == "on"
        return await self.memory.get_meta(self.key) is None

    async def refused(self, reason: str) -> None:
        """The model refused images: in `auto`, never send it any again."""
        if self.mode == "auto":
            log.warning("model %s refuses images; no more are sent to it: %s", self.model, reason)
            await self.memory.set_meta(self.key, reason[:300])
