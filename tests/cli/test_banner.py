"""serve's banner: the commands it names run as printed, or it says how to type them."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from gateway.cli.banner import next_steps
from gateway.config import Settings

MINE = Path(sys.executable).parent / "skillgate"


@pytest.mark.skipif(not MINE.exists(), reason="needs an installed `skillgate` beside python")
def test_the_banner_says_how_to_type_skillgate_when_the_shell_would_not_find_it(
    make_settings: Callable[..., Settings], monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = make_settings()
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    (hint,) = [line for line in next_steps(settings, "127.0.0.1", 8080) if "PATH" in line]
    assert f"type {MINE} for the commands named here" in hint
    assert f'export PATH="{MINE.parent}:$PATH"' in hint

    monkeypatch.setenv("PATH", f"{MINE.parent}:/usr/bin:/bin")
    assert not [line for line in next_steps(settings, "127.0.0.1", 8080) if "PATH" in line]
