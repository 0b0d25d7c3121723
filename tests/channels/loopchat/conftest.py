"""Loopchat installed the way a package is: a distribution whose entry point names its spec."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.channels.registry import GROUP

ENTRY_POINT = "loopchat = tests.channels.loopchat.spec:SPEC"


@pytest.fixture
def installed(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A site directory holding Loopchat's distribution metadata, on `sys.path` for the test."""
    site = tmp_path_factory.mktemp("site")
    info = site / "skillgate_loopchat-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: skillgate-loopchat\nVersion: 0.1\n"
    )
    (info / "entry_points.txt").write_text(f"[{GROUP}]\n{ENTRY_POINT}\n")
    monkeypatch.syspath_prepend(str(site))
    return site
