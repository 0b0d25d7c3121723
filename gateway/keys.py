"""Typed keys for what the aiohttp application carries."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiohttp import web

if TYPE_CHECKING:
    from gateway.channels.base import Channel, Services

SERVICES: web.AppKey[Services] = web.AppKey("services")
CHANNELS: web.AppKey[list[Channel]] = web.AppKey("channels")
