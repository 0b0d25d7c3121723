"""`skillgate set-webhook`: register the platforms' webhooks (and what else each needs).

The server itself never registers anything at start-up. Each platform's part lives
in its own package (`webhook_steps` of its entry module), imported only for a
configured platform (start-up cost).
"""

from __future__ import annotations

from gateway.channels.registry import configured_platforms, platforms
from gateway.config import Settings
from gateway.errors import ChannelError, ConfigError


async def run_set_webhook(
    settings: Settings, *, delete: bool = False, max_connections: int = 40, force: bool = False
) -> int:
    """Print one line per step; exit status 1 when anything failed."""
    configured = configured_platforms(settings)
    if not configured:
        needs = ", ".join(p.needs_short for p in platforms())
        print(f"set-webhook: no channel configured ({needs})")
        return 1
    failed = False
    for platform in configured:
        try:
            steps = await platform.load().webhook_steps(
                settings, delete=delete, max_connections=max_connections, force=force
            )
        except (ConfigError, ChannelError) as exc:
            print(f"{platform.name}: fail {exc}")
            failed = True
            continue
        for step in steps:
            print(step.line())
            failed = failed or step.status == "fail"
    return 1 if failed else 0
