"""Signed media links (`gateway.media.links`): the key, the names, what a request may open,
and what the sweep and /forget delete."""

from __future__ import annotations

import stat
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from gateway.media.links import LinkRefused, MediaLinks, load_key


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


def parts(url: str) -> tuple[str, str, str]:
    """The owner, the name and the signature of a link."""
    split = urlsplit(url)
    _, _, owner, name = split.path.split("/")
    return owner, name, parse_qs(split.query)["sig"][0]


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def links(tmp_path: Path, clock: Clock) -> MediaLinks:
    return MediaLinks(
        tmp_path / "links", load_key(tmp_path), "https://bot.example.com/", 600, clock=clock
    )


def test_the_key_is_made_once_private_and_kept(tmp_path: Path) -> None:
    key = load_key(tmp_path)
    path = tmp_path / "links.key"
    assert len(key) == 32 and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert load_key(tmp_path) == key
    path.write_bytes(b"short")
    with pytest.raises(ValueError, match="fewer than 32 bytes"):
        load_key(tmp_path)


def test_a_link_opens_its_file_and_names_no_user(links: MediaLinks, tmp_path: Path) -> None:
    published = links.publish("line:U1234567890abcdef", b"ID3 audio", ".mp3")
    assert published.url.startswith("https://bot.example.com/media/")
    assert "U1234567890abcdef" not in published.url
    owner, name, sig = parts(published.url)
    path, content_type = links.open(owner, name, sig)
    assert path.read_bytes() == b"ID3 audio" and content_type == "audio/mpeg"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    # Another key (another gateway) signs differently: its links open nothing here.
    other = MediaLinks(tmp_path / "links", b"k" * 32, "https://x", 600, clock=links.clock)
    with pytest.raises(LinkRefused):
        other.open(owner, name, sig)


@pytest.mark.parametrize(
    ("owner", "name"),
    [
        ("..", "x.mp3"),
        ("0" * 32, "../../links.key"),
        ("0" * 32, "1800000600-" + "a" * 24 + ".sh"),
        ("0" * 31 + "/", "1800000600-" + "a" * 24 + ".mp3"),
    ],
)
def test_names_the_gateway_never_made_are_refused(links: MediaLinks, owner: str, name: str) -> None:
    with pytest.raises(LinkRefused):
        links.open(owner, name, "0" * 64)


def test_an_expired_link_is_refused_and_the_sweep_deletes_only_expired_files(
    links: MediaLinks, clock: Clock
) -> None:
    early = links.publish("telegram:1", b"a", ".ogg")
    clock.now += 300
    late = links.publish("telegram:1", b"b", ".ogg")
    stranger = links.root / "notes.txt"
    stranger.write_text("not ours")
    clock.now += 301  # the first link's ten minutes are over, not the second's
    with pytest.raises(LinkRefused, match="expired"):
        links.open(*parts(early.url))
    assert links.sweep() == 1
    links.open(*parts(late.url))
    with pytest.raises(FileNotFoundError):
        links.root.joinpath(*parts(early.url)[:2]).read_bytes()
    assert stranger.exists()  # a file the links did not write is never deleted


def test_forget_deletes_one_users_files_only(links: MediaLinks) -> None:
    mine = links.publish("line:Ua", b"a", ".mp3")
    theirs = links.publish("line:Ub", b"b", ".mp3")
    assert links.forget("line:Ua") == 1
    with pytest.raises(FileNotFoundError):
        links.open(*parts(mine.url))
    links.open(*parts(theirs.url))
    assert links.forget("line:Ua") == 0
