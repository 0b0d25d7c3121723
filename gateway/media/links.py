"""Files the gateway sends by URL (LINE fetches audio and images from a link): each kept
under the data dir only until its signed link expires.

A link is `<public url>/media/<owner>/<expires>-<random><suffix>?sig=<hmac>`: the owner is
an HMAC of the user's `channel:id` (no id in a URL or a path), the expiry (epoch seconds)
is in the name, and the signature is an HMAC-SHA256 of `<owner>/<name>` under a key of the
gateway's own (`links.key` in the data dir, made once, private to the owner). A request
whose signature does not match, or whose expiry has passed, is refused (403) before any
file is looked at; an expired file is deleted by the sweep (every minute), a user's files
by /forget.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
import os
import re
import secrets
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

KEY_FILE = "links.key"
ROUTE = "/media/{owner}/{name}"
_OWNER = re.compile(r"^[0-9a-f]{32}$")
_NAME = re.compile(r"^(?P<expires>[0-9]{1,12})-[A-Za-z0-9_-]{16,64}(?P<suffix>\.[a-z0-9]{1,5})$")
TYPES = {".mp3": "audio/mpeg", ".m4a": "audio/mp4", ".ogg": "audio/ogg", ".png": "image/png"}
TYPES |= {".jpg": "image/jpeg", ".webp": "image/webp"}
"""What a served file is declared as, by its suffix (only these are served)."""


class LinkRefused(Exception):
    """A link that is not ours, or has expired: 403, whatever the file."""


@dataclass(frozen=True)
class Published:
    """A file served by a signed link: its URL and when the link (and the file) expire."""

    url: str
    expires: float


def load_key(data_dir: Path) -> bytes:
    """The gateway's link key from `links.key` in the data dir, made there (0600) at first."""
    path = data_dir / KEY_FILE
    try:
        key = path.read_bytes()
    except FileNotFoundError:
        data_dir.mkdir(parents=True, exist_ok=True)
        key = secrets.token_bytes(32)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:  # another process made it first: theirs is the key
            return path.read_bytes()
        with os.fdopen(fd, "wb") as out:
            out.write(key)
    if len(key) < 32:
        raise ValueError(f"{path} holds fewer than 32 bytes: delete it to make a new key")
    return key


class MediaLinks:
    """Keeps files for their links' lifetime and says whether a request for one may have it."""

    def __init__(
        self,
        root: Path,
        key: bytes,
        public_url: str,
        lifetime: float,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.root = root
        self._key = key
        self.public_url = public_url.rstrip("/")
        self.lifetime = lifetime
        self.clock = clock

    def owner(self, who: str) -> str:
        """The folder of one user's files: an HMAC of `channel:id`, no id in it."""
        digest = hmac.new(self._key, b"owner:" + who.encode(), hashlib.sha256)
        return digest.hexdigest()[:32]

    def _signature(self, owner: str, name: str) -> str:
        message = f"{owner}/{name}".encode()
        return hmac.new(self._key, b"link:" + message, hashlib.sha256).hexdigest()

    def publish(self, who: str, data: bytes, suffix: str) -> Published:
        """Keep `data` for `who` (`channel:id`) until its link expires; the link. Blocking:
        run it in a thread."""
        if suffix not in TYPES:
            raise ValueError(f"{suffix} is not a type served by link")
        expires = int(self.clock() + self.lifetime) + 1
        owner = self.owner(who)
        name = f"{expires}-{secrets.token_urlsafe(18)}{suffix}"
        folder = self.root / owner
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        partial = folder / f".{name}.part"
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(partial, folder / name)  # never a half-written file under its name
        url = f"{self.public_url}/media/{owner}/{name}?sig={self._signature(owner, name)}"
        return Published(url=url, expires=float(expires))

    def open(self, owner: str, name: str, signature: str) -> tuple[Path, str]:
        """The file a link names and its type; LinkRefused for a bad signature or an expired
        link, FileNotFoundError for one whose file is gone (forgotten)."""
        found = _NAME.match(name)
        if not _OWNER.match(owner) or found is None:
            raise LinkRefused("not a media link")
        if not hmac.compare_digest(signature.encode(), self._signature(owner, name).encode()):
            raise LinkRefused("bad signature")
        if int(found["expires"]) <= self.clock():
            raise LinkRefused("expired")
        suffix = found["suffix"]
        if suffix not in TYPES:
            raise LinkRefused("not a served type")
        path = self.root / owner / name
        if not path.is_file():
            raise FileNotFoundError(name)
        return path, TYPES[suffix]

    def sweep(self) -> int:
        """Delete every file whose link has expired (and what a crash left half-written);
        returns how many. Blocking: run it in a thread."""
        if not self.root.is_dir():
            return 0
        now, removed = self.clock(), 0
        for folder in self.root.iterdir():
            if not folder.is_dir():
                continue
            for path in folder.iterdir():
                found = _NAME.match(path.name)
                if found is not None and int(found["expires"]) > now:
                    continue
                if found is None and not path.name.endswith(".part"):
                    continue  # never a file this module did not write
                if found is None and path.stat().st_mtime > now - self.lifetime:
                    continue  # being written now
                path.unlink(missing_ok=True)
                removed += 1
            if not any(folder.iterdir()):
                folder.rmdir()
        return removed

    def forget(self, who: str) -> int:
        """Delete every file kept for `who` (`channel:id`); returns how many."""
        folder = self.root / self.owner(who)
        if not folder.is_dir():
            return 0
        count = sum(1 for _ in folder.iterdir())
        shutil.rmtree(folder)
        return count

    async def sweep_now(self) -> None:
        """`sweep` off the event loop, logging what went."""
        removed = await asyncio.to_thread(self.sweep)
        if removed:
            log.info("deleted %d file(s) whose media links expired", removed)
