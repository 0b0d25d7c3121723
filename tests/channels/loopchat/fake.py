"""The Loopchat API, on a loopback port: `POST /send` records a message and returns its id.

A message is `{"chat", "text", "buttons": [{"label", "data"}]}`; anything else is a 400,
and a request without the bot's token is a 401, as a real platform's API would answer.
`POST /edit` (`{"id", "buttons"}`) changes a sent message's buttons, recorded in `edits`;
`GET /me` names the bot (what `skillgate init` checks the token with).
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

TOKEN = "loop-token-0123456789abcdef"


class FakeLoopchat:
    """Records what the bot sent, per chat, in order."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []
        self.edits: list[dict[str, Any]] = []
        self._runner: web.AppRunner | None = None
        self._url: str | None = None

    async def _send(self, request: web.Request) -> web.Response:
        if request.headers.get("Authorization") != f"Bearer {TOKEN}":
            return web.json_response({"error": "unauthorized"}, status=401)
        body = await request.json()
        if not isinstance(body.get("chat"), str) or not isinstance(body.get("text"), str):
            return web.json_response({"error": "chat and text are strings"}, status=400)
        message = {"id": f"m{len(self.sent) + 1}", "buttons": [], **body}
        self.sent.append(message)
        return web.json_response({"id": message["id"]})

    async def _edit(self, request: web.Request) -> web.Response:
        if request.headers.get("Authorization") != f"Bearer {TOKEN}":
            return web.json_response({"error": "unauthorized"}, status=401)
        body = await request.json()
        message = next((m for m in self.sent if m["id"] == body.get("id")), None)
        if message is None or not isinstance(body.get("buttons"), list):
            return web.json_response({"error": "no such message"}, status=400)
        message["buttons"] = body["buttons"]
        self.edits.append(body)
        return web.json_response({})

    async def _me(self, request: web.Request) -> web.Response:
        if request.headers.get("Authorization") != f"Bearer {TOKEN}":
            return web.json_response({"error": "unauthorized"}, status=401)
        return web.json_response({"name": "Loopbot", "handle": "loopbot"})

    async def __aenter__(self) -> FakeLoopchat:
        app = web.Application()
        app.router.add_post("/send", self._send)
        app.router.add_post("/edit", self._edit)
        app.router.add_get("/me", self._me)
        runner = web.AppRunner(app, handle_signals=False, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        host, port = runner.addresses[0][:2]
        self._runner, self._url = runner, f"http://{host}:{port}"
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    @property
    def url(self) -> str:
        assert self._url is not None, "the fake is not started"
        return self._url

    def messages(self, chat: str) -> list[dict[str, Any]]:
        return [m for m in self.sent if m["chat"] == chat]
