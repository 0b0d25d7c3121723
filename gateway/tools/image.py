"""The built-in `generate_image` tool: one picture from an OpenAI-compatible /images/generations.

On only with IMAGE_MODEL. The request asks for `b64_json` (no second fetch of a URL the
server names); its answer is read chunk by chunk and abandoned past IMAGE_MAX_MB, the whole
call within IMAGE_TIMEOUT_SECONDS. What comes back must be an image Pillow can read (PNG,
JPEG or WebP), or the call fails and the model is told so (its text answer goes out as
ever). The picture goes to the reply, never to the model; the prompt stays in the trace as
the call's arguments.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import io
import json
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from gateway.core.llm_wire import one_line
from gateway.core.models import Picture
from gateway.core.unix_sockets import OWN_SERVERS
from gateway.logs import mask
from gateway.tools.policy import CallFailed, RemoteTool
from gateway.tools.web import read_up_to

PROMPT_CHARS = 4000
"""The longest prompt sent (OpenAI's dall-e-3 takes 4,000 characters)."""
FORMATS = {"PNG": ("image/png", ".png"), "JPEG": ("image/jpeg", ".jpg")}
FORMATS |= {"WEBP": ("image/webp", ".webp")}
GENERATE = RemoteTool(
    name="generate_image",
    description=(
        "Draw one picture from a description and send it to the person; use it only when"
        " they ask for a picture. Returns whether it was sent."
    ),
    schema={
        "type": "object",
        "properties": {
            "prompt": {"type": "string", "description": "what the picture shows, in detail"}
        },
        "required": ["prompt"],
    },
    read_only=True,
)


@dataclass(frozen=True)
class Drawn:
    """A call's answer: what the model is told, and the picture for the reply."""

    text: str
    picture: Picture


def picture_of(data: bytes, prompt: str) -> Picture:
    """The picture `data` is, checked with Pillow; CallFailed when it is none we send."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(data)) as image:
            kind = image.format or ""
            image.verify()
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError) as exc:
        raise CallFailed("the image server answered something that is not an image") from exc
    if kind not in FORMATS:
        raise CallFailed(f"the image server answered a {kind or 'unknown'} image")
    mime, suffix = FORMATS[kind]
    return Picture(data=data, mime=mime, suffix=suffix, prompt=prompt)


@dataclass
class ImageTool:
    """`generate_image` as a backend named `image`."""

    base_url: str
    model: str
    api_key: str | None = None
    timeout: float = 120.0
    max_bytes: int = 8 * 1024 * 1024
    unix_socket: str | None = None
    """The server's unix domain socket (the model's, LLM_UNIX_SOCKET), where it is one."""
    name: str = "image"
    transport: str = "built-in"
    error: str | None = None
    tools: list[RemoteTool] = field(default_factory=list)
    _session: aiohttp.ClientSession | None = None

    @property
    def alive(self) -> bool:
        return self._session is not None

    async def start(self) -> None:
        self.tools = [GENERATE]
        if self.unix_socket is None:
            self._session = aiohttp.ClientSession()
        elif own := OWN_SERVERS.get(self.unix_socket):  # our own child's: peers checked
            self._session = own()
        else:
            self._session = aiohttp.ClientSession(connector=aiohttp.UnixConnector(self.unix_socket))

    async def stop(self) -> None:
        session, self._session = self._session, None
        if session is not None:
            await session.close()

    async def probe(self) -> None:
        """Built in: it runs while the gateway does."""

    async def call(self, tool: str, arguments: dict[str, Any]) -> tuple[str, bool]:
        return (await self.draw(arguments)).text, False

    async def draw(self, arguments: dict[str, Any]) -> Drawn:
        """One picture for `arguments["prompt"]`; CallFailed (the server's words, masked) when
        the server refuses, answers too much, nothing, or no image."""
        prompt = str(arguments.get("prompt", "")).strip()
        if not prompt:
            raise CallFailed("an empty prompt")
        if len(prompt) > PROMPT_CHARS:
            raise CallFailed(f"the prompt is longer than {PROMPT_CHARS} characters")
        try:
            async with asyncio.timeout(self.timeout):
                body = await self._ask(prompt)
        except TimeoutError as exc:
            raise CallFailed(f"no image within {self.timeout:g} s") from exc
        except aiohttp.ClientError as exc:
            raise CallFailed(f"the image server is unreachable ({type(exc).__name__})") from exc
        try:
            items = json.loads(body)["data"]
            encoded = items[0]["b64_json"]
            data = base64.b64decode(encoded, validate=True)
        except (ValueError, KeyError, IndexError, TypeError, binascii.Error) as exc:
            raise CallFailed("the image server answered no image") from exc
        picture = await asyncio.to_thread(picture_of, data, prompt)
        return Drawn(f"the picture was made ({len(data):,} bytes) and is sent", picture)

    async def _ask(self, prompt: str) -> bytes:
        session = self._session
        assert session is not None
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        request = {"model": self.model, "prompt": prompt, "n": 1, "response_format": "b64_json"}
        url = self.base_url.rstrip("/") + "/images/generations"
        async with session.post(url, json=request, headers=headers) as resp:
            declared = resp.headers.get("Content-Length", "")
            if declared.isdigit() and int(declared) > self.max_bytes:
                raise CallFailed(self._too_big())
            body = await read_up_to(resp.content, self.max_bytes + 1)
            if len(body) > self.max_bytes:
                raise CallFailed(self._too_big())
            if resp.status >= 400:
                words = _server_words(body) or resp.reason or ""
                secrets = [self.api_key] if self.api_key else []
                raise CallFailed(
                    f"the image server refused ({resp.status}): {mask(words, secrets)}"
                )
            return body

    def _too_big(self) -> str:
        return f"the image server answered more than {self.max_bytes:,} bytes"


def _server_words(body: bytes) -> str:
    """The error message of an OpenAI-style error body, on one line, bounded."""
    try:
        message = json.loads(body)["error"]["message"]
    except (ValueError, KeyError, TypeError):
        message = body.decode("utf-8", errors="replace")
    return one_line(str(message))[:300]
