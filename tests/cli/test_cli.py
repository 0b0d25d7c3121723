"""The `skillgate` command, run as a real process."""

from __future__ import annotations

from pathlib import Path

from tests.fakes.openai_server import FakeOpenAI
from tests.serve_process import serving, skillgate


async def test_version_and_help_for_every_command() -> None:
    code, out, _ = await skillgate("--version", env={})
    assert code == 0 and out.startswith("skillgate ")
    for command in ("serve", "chat", "synthesize", "doctor"):
        code, out, _ = await skillgate(command, "--help", env={})
        assert code == 0 and "usage: skillgate" in out


async def test_an_invalid_setting_stops_start_up_with_one_clear_line(tmp_path: Path) -> None:
    env = {
        "SKILLGATE_DATA_DIR": str(tmp_path),
        "SKILLGATE_SESSION_IDLE_MINUTES": "soon",
        "TELEGRAM_WEBHOOK_SECRET": "not valid!",
    }
    code, _out, err = await skillgate("serve", "--port", "1", env=env)
    assert code == 2
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1
    assert "SKILLGATE_SESSION_IDLE_MINUTES" in lines[0] and "'soon'" in lines[0]
    assert "TELEGRAM_WEBHOOK_SECRET" in lines[0] and "not valid!" not in lines[0]


async def test_doctor_passes_with_a_reachable_model_and_fails_without_one(
    tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    env = {
        "SKILLGATE_DATA_DIR": str(tmp_path / "data"),
        "LLM_BASE_URL": fake_llm.base_url,
        "LLM_MODEL": "fake-model",
        "LLM_API_KEY": "sk-test-do-not-print",
    }
    code, out, _ = await skillgate("doctor", env=env)
    assert code == 0, out
    assert "OK   model: fake-model" in out
    assert "sk-test-do-not-print" not in out

    code, out, _ = await skillgate("doctor", env={**env, "LLM_MODEL": "missing-model"})
    assert code == 1
    assert "FAIL model" in out and "fix:" in out

    code, out, _ = await skillgate("doctor", env={"SKILLGATE_DATA_DIR": str(tmp_path / "d2")})
    assert code == 1
    assert "LLM_BASE_URL" in out


async def test_chat_talks_to_the_model_through_the_core(
    tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    fake_llm.reply("Hi, I am the fake model.")
    env = {
        "SKILLGATE_DATA_DIR": str(tmp_path / "data"),
        "LLM_BASE_URL": fake_llm.base_url,
        "LLM_MODEL": "fake-model",
    }
    code, out, err = await skillgate("chat", env=env, stdin="hello there\n/bad too short\n/quit\n")
    assert code == 0, err
    assert "bot> Hi, I am the fake model." in out
    assert "rating stored" in out
    assert fake_llm.requests[0]["messages"][-1]["content"] == "hello there"


async def test_serve_answers_healthz_and_says_what_to_do_next(tmp_path: Path) -> None:
    async with serving(env={"SKILLGATE_DATA_DIR": str(tmp_path / "data")}) as served:
        assert served.health["status"] == "ok"
    assert served.returncode == 0, served.stderr
    assert "no model configured: every answer says so; `./scripts/serve`" in served.stderr
    assert "admin console: off; set SKILLGATE_ADMIN_TOKEN" in served.stderr

    env = {"SKILLGATE_DATA_DIR": str(tmp_path / "data"), "SKILLGATE_ADMIN_TOKEN": "t" * 32}
    async with serving(env=env) as served:
        console = f"{served.url}/admin/"
    assert f"admin console: {console} (sign in with SKILLGATE_ADMIN_TOKEN)" in served.stderr
