"""Misspelled settings are named, with the setting they may mean: doctor fails, serve warns."""

from __future__ import annotations

from pathlib import Path

from tests.fakes.openai_server import FakeOpenAI
from tests.serve_process import serving, skillgate


async def test_doctor_fails_on_a_misspelled_setting_and_names_the_one_meant(
    tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    (tmp_path / ".env").write_text(
        f"LLM_BASE_URL={fake_llm.base_url}\nLLM_MODLE=fake-model\nSKILLGATE_DOMAIN=bot.example\n"
    )
    code, out, _ = await skillgate("doctor", env={"TELEGRAM_POLING": "true"})
    assert code == 1, out
    line = next(ln for ln in out.splitlines() if ln.startswith("FAIL setting names"))
    assert "LLM_MODLE (.env) is not a setting; did you mean LLM_MODEL?" in line
    assert "TELEGRAM_POLING (the environment) is not a setting; did you mean TELEGRAM_POLLING?" in (
        line
    )
    assert "SKILLGATE_DOMAIN" not in out  # the Caddyfile's, not a typo


async def test_doctor_says_ok_when_every_name_is_a_setting(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("TELEGRAM_POLLING=true\nSKILLGATE_LOG_LEVEL=INFO\n")
    _, out, _ = await skillgate("doctor", env={"LLM_SOMETHING_ELSE": "1"})
    assert "FAIL setting names: LLM_SOMETHING_ELSE (the environment) is not a setting" in out
    (tmp_path / ".env").write_text("TELEGRAM_POLLING=true\n")
    _, out, _ = await skillgate("doctor", env={})
    assert "OK   setting names" in out


async def test_serve_warns_about_a_misspelled_setting_and_still_starts(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("SKILLGATE_ADMIN_TOKN=secret-value-123\n")
    async with serving(env={}) as served:
        assert served.health
    line = next(ln for ln in served.stderr.splitlines() if "SKILLGATE_ADMIN_TOKN" in ln)
    assert "WARNING" in line and "did you mean SKILLGATE_ADMIN_TOKEN?" in line
    assert "secret-value-123" not in served.stderr
