"""The registry: built-in platforms first, then the specs installed packages register."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from gateway.channels.registry import GROUP, platform, platforms


def install(site: Path, *entry_points: str) -> None:
    """A distribution in `site` whose `skillgate.platforms` entry points are `entry_points`."""
    info = site / "skillgate_extra-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: skillgate-extra\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("\n".join([f"[{GROUP}]", *entry_points, ""]))


def test_the_built_in_platforms_come_first_and_an_installed_one_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert [p.name for p in platforms()] == ["telegram", "line"]
    install(tmp_path, "loopchat = tests.channels.loopchat.spec:SPEC")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert [p.name for p in platforms()] == ["telegram", "line", "loopchat"]
    found = platform("loopchat")
    assert found is not None and found.route == "/webhook/loopchat"


def test_a_broken_misnamed_or_second_registration_is_left_out_and_logged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    install(
        tmp_path,
        "broken = tests.channels.no_such_module:SPEC",
        "discord = tests.channels.loopchat.spec:SPEC",
        "line = gateway.channels.line.spec:SPEC",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    with caplog.at_level(logging.ERROR, logger="gateway.channels.registry"):
        assert [p.name for p in platforms()] == ["telegram", "line"]
    assert "platform broken (tests.channels.no_such_module:SPEC) could not be loaded" in caplog.text
    assert (
        "platform discord (tests.channels.loopchat.spec:SPEC) is not a PlatformSpec" in caplog.text
    )
    assert "platform line (gateway.channels.line.spec:SPEC) is registered twice" in caplog.text
