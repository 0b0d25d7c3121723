"""The event hub: subscribers by type, told in order, a failing one logged and passed over."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import pytest

from gateway.core.events import Events, ToolCalled
from gateway.core.tools import ToolCallRecord


@dataclass(frozen=True)
class Other:
    about: str = "something else"


async def test_each_subscriber_of_the_type_is_told_in_order_and_a_failing_one_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    events, told = Events(), []

    async def first(event: ToolCalled) -> None:
        told.append(("first", event.name))
        raise RuntimeError("a broken subscriber")

    async def second(event: ToolCalled) -> None:
        told.append(("second", event.name))

    async def other(event: Other) -> None:
        told.append(("other", event.about))

    events.subscribe(ToolCalled, first)
    events.subscribe(ToolCalled, second)
    events.subscribe(Other, other)
    record = ToolCallRecord(server="s", tool="t", arguments="{}", status="ok")
    with caplog.at_level(logging.ERROR, logger="gateway.core.events"):
        await events.publish(ToolCalled("s__t", record))
    assert told == [("first", "s__t"), ("second", "s__t")]
    assert "what follows the call of s__t failed" in caplog.text
    await events.publish(Other())
    assert told[-1] == ("other", "something else")


async def test_an_event_nobody_subscribed_to_is_dropped_quietly() -> None:
    await Events().publish(Other())
