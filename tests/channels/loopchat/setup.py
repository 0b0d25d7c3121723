"""`skillgate init` for Loopchat: the secret checked by `GET /me`; nothing else to ask."""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping

import aiohttp

from gateway.channels.api import Asker, ChannelError, Found


async def check(values: Mapping[str, str]) -> Found:
    headers = {"Authorization": f"Bearer {values['LOOPCHAT_SECRET']}"}
    try:
        async with (
            aiohttp.ClientSession() as http,
            http.get(f"{values['LOOPCHAT_API_URL']}/me", headers=headers) as resp,
        ):
            if resp.status != 200:
                raise ChannelError(f"Loopchat refused the secret (HTTP {resp.status})")
            bot = await resp.json()
    except aiohttp.ClientError as exc:
        raise ChannelError(f"Loopchat is unreachable: {exc}") from exc
    return Found(f"{bot['name']} (@{bot['handle']})", bot["name"], handle=bot["handle"])


async def interview(ask: Asker, values: MutableMapping[str, str], bot: Found) -> None:
    return None  # the admins were asked with the settings
