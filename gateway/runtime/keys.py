"""Typed keys for what the aiohttp application carries: each part the web handlers use.

app.py sets them (the settings when the app is built, the rest once the store is open,
before the server takes requests); a handler reads only the parts it needs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiohttp import web

if TYPE_CHECKING:
    from gateway.config import Settings
    from gateway.media.links import MediaLinks
    from gateway.review.reviewer import Reviewer
    from gateway.runtime.schedule import TaskWorker
    from gateway.runtime.scheduler import SynthesisSchedule
    from gateway.runtime.transfer import SkillTransfer
    from gateway.skills.catalog import SkillCatalog
    from gateway.store import Store
    from gateway.synthesis.synthesizer import Synthesizer
    from gateway.tools.toolbox import Tools

SETTINGS: web.AppKey[Settings] = web.AppKey("settings")
STORE: web.AppKey[Store] = web.AppKey("store")
REVIEW: web.AppKey[Reviewer] = web.AppKey("review")
SYNTHESIZER: web.AppKey[Synthesizer] = web.AppKey("synthesizer")
CATALOG: web.AppKey[SkillCatalog] = web.AppKey("catalog")
TRANSFER: web.AppKey[SkillTransfer] = web.AppKey("transfer")
"""Skills imported as proposals, approved ones exported (the admin API and the console)."""
SCHEDULE: web.AppKey[SynthesisSchedule | None] = web.AppKey("schedule")
"""The synthesis schedule of this process; None when SKILLGATE_SYNTHESIS_INTERVAL_MINUTES is 0."""
LINKS: web.AppKey[MediaLinks | None] = web.AppKey("links")
"""Files served by signed link (audio for LINE); None without an https public URL."""
TOOLS: web.AppKey[Tools | None] = web.AppKey("tools")
"""The tool servers of this process; None without a tools file."""
TASKS: web.AppKey[TaskWorker] = web.AppKey("tasks")
"""The scheduled tasks' worker of this process (the console and the commands wake it)."""
