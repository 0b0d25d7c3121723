"""The built-in web tools: `web_search` (SearXNG's JSON API, or Brave) and `web_fetch`.

`web_fetch` reads the readable text of one page, bounded in bytes (and, like every call,
in time). It never reaches this machine or its network, checked three times on every hop
(every redirect is followed by hand):

- the URL's host is read exactly as the HTTP client will read it (yarl's parse, with its
  IDNA/UTS-46 mapping: full-width and circled digits, ideographic full stops), and when that
  is an address in any spelling (`ipaddress`, then every IPv4 form `inet_aton` accepts:
  `127.1`, `0x7f.1`, `2130706433`, `0177.0.0.1`), it must be public;
- every address a name resolves to must be public, checked in the resolver the connection
  itself uses (so a name cannot resolve to a public address for the check and a private one
  for the connection);
- every socket the connection opens is checked against the address it connects to, before
  it connects (a literal never goes through the resolver, so this is the last word).

The resolver is the backend's `resolver` (a `PublicResolver` unless a test gives one that
counts its loopback fake as public); its `allowed` decides for all three checks.
"""

from __future__ import annotations

import ipaddress
import json
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urljoin

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.resolver import DefaultResolver
from yarl import URL

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


_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_IPV4_COMPATIBLE = ipaddress.ip_network("::/96")


def public(address: str) -> bool:
    """Whether an IP address is on the public internet (not private, loopback, link-local...).

    An IPv6 address that carries an IPv4 one (mapped, compatible, NAT64, 6to4, Teredo) is
    public only when the IPv4 address it carries is too.
    """
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if not ip.is_global or ip.is_multicast:
        return False
    if isinstance(ip, ipaddress.IPv6Address):
        carried = [ip.ipv4_mapped, ip.sixtofour, *(ip.teredo or ())]
        if ip in _NAT64 or ip in _IPV4_COMPATIBLE:
            carried.append(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
        return all(public(str(v4)) for v4 in carried if v4 is not None)
    return True


def literal(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The address `host` spells in any form the system's resolver accepts, else None (a name).

    `host` is the host as the HTTP client reads it (already IDNA-mapped); a final dot is
    dropped, as resolvers do, and every IPv4 form `inet_aton` reads counts (`127.1`,
    `0x7f.0.0.1`, `2130706433`, `0177.0.0.1`).
    """
    bare = host.strip("[]").rstrip(".")
    try:
        return ipaddress.ip_address(bare)
    except ValueError:
        pass
    try:
        return ipaddress.IPv4Address(socket.inet_aton(bare))
    except (OSError, ValueError):
        return None


class PeerRefused(OSError):
    """A socket about to connect to a non-public address (raised before it connects)."""


class PublicResolver(AbstractResolver):
    """Resolves names as usual, and refuses any that gives a non-public address."""

    def __init__(
        self, inner: AbstractResolver | None = None, allowed: Callable[[str], bool] = public
    ) -> None:
        self._inner = inner or DefaultResolver()
        self.allowed = allowed
        """Which addresses may be reached (`public`; a test adds its loopback fake)."""

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        found = await self._inner.resolve(host, port, family)
        blocked = [r["host"] for r in found if not self.allowed(r["host"])]
        if blocked:
            raise Refused(f"{host} resolves to a non-public address ({blocked[0]})")
        return found

    async def close(self) -> None:
        await self._inner.close()


def checked_url(url: str, allowed: Callable[[str], bool] = public) -> URL:
    """The URL as the HTTP client reads it, its host public when an address; Refused otherwise.

    The URL returned is the very object that is fetched, so the host checked is the host
    connected to: full-width or circled digits and ideographic full stops that spell 127.0.0.1
    are `127.0.0.1` here.
    A name is left to the resolver, except `localhost` and its subdomains (RFC 6761), which
    never leave the machine.
    """
    try:
        parsed = URL(url)
        host = parsed.raw_host
    except (ValueError, UnicodeError) as exc:
        raise Refused(f"not an address that can be fetched ({exc})") from exc
    if parsed.scheme not in ("http", "https") or not host:
        raise Refused("only http and https addresses can be fetched")
    address = literal(host)
    if address is None:
        name = host.rstrip(".").lower()
        if name == "localhost" or name.endswith(".localhost"):
            raise Refused(f"{host} is this machine, not a public address")
        return parsed  # a name: the resolver checks what it resolves to
    if not allowed(str(address)):
        raise Refused(f"{host} is not a public address ({address})")
    return parsed


def peer_guard(allowed: Callable[[str], bool]) -> Callable[[tuple[Any, ...]], socket.socket]:
    """A socket factory that refuses, before connecting, any socket for a non-public peer."""

    def factory(addr_info: tuple[Any, ...]) -> socket.socket:
        family, kind, proto, _, address = addr_info
        if not allowed(str(address[0])):
            raise PeerRefused(f"{address[0]} is not a public address")
        return socket.socket(family=family, type=kind, proto=proto)

    return factory


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
    _allowed: Callable[[str], bool] = public

    @property
    def alive(self) -> bool:
        return self._session is not None

    async def start(self) -> None:
        searching = self.search_url is not None or self.brave_key is not None
        self.tools = [t for t, on in ((SEARCH, searching), (FETCH, self.fetch)) if on]
        self._session, self._allowed = checked_session(self.resolver)

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
        except aiohttp.ClientConnectorError as exc:
            if isinstance(exc.os_error, PeerRefused):
                raise Refused(str(exc.os_error)) from exc
            raise CallFailed(f"{type(exc).__name__}: {exc}") from exc
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
        body, content_type = await checked_get(session, url, self._allowed, self.max_bytes + 1)
        cut = len(body) > self.max_bytes
        text = readable_text(body[: self.max_bytes], content_type)
        return text + ("\n[the page was longer; only its start was read]" if cut else "")


def checked_session(
    resolver: AbstractResolver | None = None,
) -> tuple[aiohttp.ClientSession, Callable[[str], bool]]:
    """web_fetch's client: names resolved only to public addresses, every connection's peer
    checked before it connects; and the address rule it keeps (`public`, or a test's)."""
    resolver = resolver or PublicResolver()
    allowed = resolver.allowed if isinstance(resolver, PublicResolver) else public
    connector = aiohttp.TCPConnector(resolver=resolver, socket_factory=peer_guard(allowed))
    session = aiohttp.ClientSession(connector=connector, headers={"User-Agent": USER_AGENT})
    return session, allowed


async def checked_get(
    session: aiohttp.ClientSession, url: str, allowed: Callable[[str], bool], limit: int
) -> tuple[bytes, str]:
    """Up to `limit` bytes at `url` and its content type, each redirect's address checked
    (`checked_url`) before it is followed; Refused or CallFailed otherwise."""
    for _ in range(MAX_REDIRECTS + 1):
        target = checked_url(url, allowed)
        async with session.get(target, allow_redirects=False) as resp:
            location = resp.headers.get("Location")
            if resp.status in (301, 302, 303, 307, 308) and location:
                url = urljoin(url, location)  # checked again before it is followed
                continue
            resp.raise_for_status()
            return await read_up_to(resp.content, limit), resp.content_type or ""
    raise CallFailed(f"more than {MAX_REDIRECTS} redirects")


async def fetch_bounded(
    url: str, max_bytes: int, resolver: AbstractResolver | None = None
) -> bytes:
    """The body at a public http(s) address, as web_fetch would fetch it; Refused for an
    address it would not fetch, CallFailed when the fetch fails or the body is over
    `max_bytes` (read no further than one byte past it)."""
    session, allowed = checked_session(resolver)
    async with session:
        try:
            body, _ = await checked_get(session, url, allowed, max_bytes + 1)
        except aiohttp.ClientConnectorError as exc:
            if isinstance(exc.os_error, PeerRefused):
                raise Refused(str(exc.os_error)) from exc
            raise CallFailed(f"{type(exc).__name__}: {exc}") from exc
        except aiohttp.ClientError as exc:
            raise CallFailed(f"{type(exc).__name__}: {exc}") from exc
    if len(body) > max_bytes:
        raise CallFailed(f"the file is over the bound of {max_bytes:,} bytes")
    return body


async def read_up_to(stream: aiohttp.StreamReader, limit: int) -> bytes:
    """Up to `limit` bytes of a body, read chunk by chunk until it ends or reaches the limit
    (one `read(n)` returns only what has arrived so far: often the first chunk)."""
    chunks: list[bytes] = []
    size = 0
    while size < limit:
        chunk = await stream.read(limit - size)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)
