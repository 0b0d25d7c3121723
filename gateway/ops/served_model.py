"""`doctor` beside a running `serve`: the model as that server finds it, from its /healthz.

The server that holds the data dir wrote where it answers (`runtime.datadir`); its
`/healthz` says how its model's chat calls do. Asking it reports the model the users'
answers come from, and starts no second copy of an on-board model.
"""

from __future__ import annotations

import aiohttp

from gateway.config import Settings
from gateway.operator import Check
from gateway.runtime.datadir import lock_holder, served_url
from gateway.runtime.model_check import what_to_fix


async def check_served_model(settings: Settings) -> Check | None:
    """The model as the `skillgate serve` holding this data dir finds it (None: none runs)."""
    holder = lock_holder(settings.data_dir)
    url = served_url(holder)
    if url is None:
        return None
    try:
        timeout = aiohttp.ClientTimeout(total=10)
        async with (
            aiohttp.ClientSession(timeout=timeout) as http,
            http.get(f"{url}/healthz") as resp,
        ):
            model = (await resp.json())["model"]
    except (aiohttp.ClientError, TimeoutError, ValueError, KeyError, TypeError) as exc:
        return Check(
            "model (served)",
            "warn",
            f"the running server ({holder}) did not answer {url}/healthz: {exc!r}",
            "its log says why; restart `skillgate serve` if it hangs",
        )
    name, state = model.get("name"), str(model.get("state", "unknown"))
    where = f"as the running server sees it ({url})"
    if state.startswith("failing"):
        error = str(model.get("last_error") or state)
        return Check(
            "model (served)",
            "fail",
            f"{name} {where}: {state}; the last error: {error}",
            what_to_fix(settings, error),
        )
    if state == "ok":
        return Check("model (served)", "ok", f"{name} {where}: its chat calls answer")
    if model.get("answered_at_start") is False:
        return Check(
            "model (served)",
            "fail",
            f"{name} {where}: did not answer its look at start, and no chat call was made since",
            what_to_fix(settings, "did not answer"),
        )
    return Check("model (served)", "ok", f"{name} {where}: answered, no chat call yet")
