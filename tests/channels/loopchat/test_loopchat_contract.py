"""The channel contract, run on Loopchat: a platform registered by its own package passes it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.channels.drivers import Rig
from tests.channels.loopchat.driver import loopchat_rig
from tests.channels.test_contract import *  # noqa: F403  (every contract test, on this rig)


@pytest.fixture
def rig(installed: Path) -> Rig:
    """Loopchat, in place of the built-in platforms."""
    return loopchat_rig
