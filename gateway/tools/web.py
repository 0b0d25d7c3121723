"""The built-in web tools: `web_search` (SearXNG's JSON API, or Brave) and `web_fetch`.

`web_fetch` reads the readable text of one page, bounded in bytes (and, like every call,
in time). It never reaches this machine or its network: every address a name resolves to
must be public, checked in the resolver the connection itself uses (so a name cannot
resolve to a public address for the check and a private one for the connection), and
every redirect is followed by hand and checked the same way. The resolver is the backend's
`resolver` (a `PublicResolver` unless a test gives one that counts its loopback fake as public).
"""

from __future__ import annotations

import ipaddress
import json
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urljoin, urlsplit

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.resolver import DefaultResolver

from gateway.tools.policy import CallFailed, CallRefused, RemoteTool

RESULTS = 5
BRAVE_URL = "https://api.search.brave.com/res/v1/web/search"
MAX_REDIRECTS = 5
USER_AGENT = "Skillgate web_fetch"
SEARCH = RemoteTool(
    name="web_search",
    description="Search the web; returns the five best results (title, address, snippet).",
    schema={
        "type": "object",
        "properties": {"query": {"type": "string", "description": "what to search for"}},
        "required": ["query"],
    },
    read_only=True,
)
FETCH = RemoteTool(
    name="web_fetch",
    description="Read the text of one web page (http or https address).",
    schema={
        "type": "object",
        "properties": {"url": {"type": "string", "description": "the page's address"}},
        "required": ["url"],
    },
    read_only=True,
)


class Refused(CallRefused):
    """An address the gateway will not fetch from."""


def public(address: str) -> bool:
    """Whether an IP address is on the public internet (not private, loopback, link-local...)."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global and not ip.is_multicast


class PublicResolver(AbstractResolver):
    """Resolves names as usual, and refuses any that gives a non-public address."""

    def __init__(
        self, inner: AbstractResolver | None = None, allowed: Callable[[str], bool] = public
    ) -> None:
        self._inner = inner or DefaultResolver()
        self._allowed = allowed

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        found = await self._inner.resolve(host, port, family)
        blocked = [r["host"] for r in found if not self._allowed(r["host"])]
        if blocked:
            raise Refused(f"{host} resolves to a non-public address ({blocked[0]})")
        return found

    async def close(self) -> None:
        await self._inner.close()


def checked_url(url: str) -> str:
    """An http(s) URL whose host, when an address, is public; Refused otherwise."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise Refused("only http and https addresses can be fetched")
    try:
        literal = ipaddress.ip_address(parts.hostname)
    except ValueError:
        return url  # a name: the resolver checks what it resolves to
    if not public(str(literal)):
        raise Refused(f"{parts.hostname} is not a public address")
    return url


def readable_text(body: bytes, content_type: str) -> str:
    """A page's words: HTML without scripts, styles and navigation; text as it is."""
    if "html" not in content_type:
        return body.decode("utf-8", errors="replace")
    import lxml.html  # with the first page read, not at start-up

    root = lxml.html.fromstring(body)
    title = (root.findtext(".//title") or "").strip()
    for element in root.xpath("//head|//script|//style|//noscript|//nav|//header|//footer"):
        element.drop_tree()  # the head too: its title is said once, first
    words = " ".join(root.text_content().split())
    return f"{title}\n\n{words}" if title else words


@dataclass
class WebTools:
    """The web tools the tools file switches on, as one backend named `web`."""

    search_url: str | None = None
    """SearXNG's base URL (SEARXNG_URL)."""
    brave_key: str | None = None
    brave_url: str = BRAVE_URL
    fetch: bool = False
    max_bytes: int = 2 * 1024 * 1024
    name: str = "web"
    transport: str = "built-in"
    error: str | None = None
    tools: list[RemoteTool] = field(default_factory=list)
    resolver: AbstractResolver | None = None
    """How web_fetch resolves names: a `PublicResolver` when None."""
    _session: aiohttp.ClientSession | None = None

    @property
    def alive(self) -> bool:
        return self._session is not None

    async def start(self) -> None:
        searching = self.search_url is not None or self.brave_key is not None
        self.tools = [t for t, on in ((SEARCH, searching), (FETCH, self.fetch)) if on]
        connector = aiohttp.TCPConnector(resolver=self.resolver or PublicResolver())
        self._session = aiohttp.ClientSession(
            connector=connector, headers={"User-Agent": USER_AGENT}
        )

    async def stop(self) -> None:
        session, self._session = self._session, None
        if session is not None:
            await session.close()

    async def probe(self) -> None:
        """Built in: it runs while the gateway does."""

    async def call(self, tool: str, arguments: dict[str, Any]) -> tuple[str, bool]:
        session = self._session
        assert session is not None
        try:
            if tool == "web_search":
                return await self._search(str(arguments.get("query", ""))), False
            return await self._fetch(session, str(arguments.get("url", ""))), False
        except aiohttp.ClientError as exc:
            raise CallFailed(f"{type(exc).__name__}: {exc}") from exc

    async def _search(self, query: str) -> str:
        if not query.strip():
            raise CallFailed("an empty query")
        # The search engines are the operator's own choice: not held to the public rule.
        plain = aiohttp.ClientSession(headers={"User-Agent": USER_AGENT})
        async with plain:
            if self.search_url is not None:
                url = self.search_url.rstrip("/") + "/search"
                params = {"q": query, "format": "json"}
                async with plain.get(url, params=params) as resp:
                    resp.raise_for_status()
                    data = await resp.json(content_type=None)
                hits = [
                    (r.get("title", ""), r.get("url", ""), r.get("content", ""))
                    for r in data.get("results", [])
                ]
            else:
                headers = {
                    "X-Subscription-Token": self.brave_key or "",
                    "Accept": "application/json",
                }
                params = {"q": query, "count": str(RESULTS)}
                async with plain.get(self.brave_url, params=params, headers=headers) as resp:
                    resp.raise_for_status()
                    data = await resp.json(content_type=None)
                hits = [
                    (r.get("title", ""), r.get("url", ""), r.get("description", ""))
                    for r in data.get("web", {}).get("results", [])
                ]
        shown = [{"title": t, "url": u, "snippet": s} for t, u, s in hits[:RESULTS]]
        return json.dumps(shown, ensure_ascii=False, indent=1)

    async def _fetch(self, session: aiohttp.ClientSession, url: str) -> str:
        for _ in range(MAX_REDIRECTS + 1):
            async with session.get(checked_url(url), allow_redirects=False) as resp:
                location = resp.headers.get("Location")
                if resp.status in (301, 302, 303, 307, 308) and location:
                    url = urljoin(url, location)  # checked again before it is followed
                    continue
                resp.raise_for_status()
                body = await resp.content.read(self.max_bytes + 1)
                cut = len(body) > self.max_bytes
                text = readable_text(body[: self.max_bytes], resp.content_type or "")
                return text + ("\n[the page was longer; only its start was read]" if cut else "")
        raise CallFailed(f"more than {MAX_REDIRECTS} redirects")
