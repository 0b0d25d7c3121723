"""The payload runner (`python -m tests.corpus_run`) over a small directory written here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.corpus_run import main
from tests.fakes.line_api import text_event
from tests.fakes.telegram_api import make_text_update


async def test_the_runner_reports_every_payload_and_passes_when_all_get_an_outcome(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "telegram").mkdir()
    (tmp_path / "line").mkdir()
    photo = make_text_update(1, "")
    del photo["message"]["text"]
    photo["message"]["photo"] = [{"file_id": "a", "file_unique_id": "b", "width": 1, "height": 1}]
    (tmp_path / "telegram" / "001-text.json").write_text(json.dumps(make_text_update(1, "hi")))
    (tmp_path / "telegram" / "002-photo.json").write_text(json.dumps(photo))
    legacy = text_event("hello")
    del legacy["webhookEventId"], legacy["message"]["quoteToken"]
    body = {"destination": "U0", "events": [legacy]}
    (tmp_path / "line" / "001-legacy.json").write_text(json.dumps(body))
    assert await main(tmp_path, verbose=True) == 0
    report = capsys.readouterr().out
    assert "answered     200 001-text.json" in report
    assert "notice       200 002-photo.json" in report
    assert "answered     200 001-legacy.json#0 message/text" in report
    assert "3 payloads/events: {'answered': 2, 'notice': 1}" in report
