"""`skillgate doctor --fix`, every FAIL's fix copied as it is printed, and the unit's data dir."""

from __future__ import annotations

import asyncio
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from gateway.ops.unit import check_service_data_dir
from tests.fakes.line_api import FakeLineAPI
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.telegram_api import FakeTelegramAPI
from tests.ops.conftest import LINE_SECRET, PUBLIC_URL

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"


@dataclass
class Ran:
    returncode: int
    stdout: str


async def run(command: str, cwd: Path) -> Ran:
    """A line as a person pastes it into a shell, with this checkout's `skillgate` on PATH."""
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    proc = await asyncio.create_subprocess_exec(
        "bash",
        "-c",
        command,
        cwd=cwd,
        env={**os.environ, "PATH": path},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await asyncio.wait_for(proc.communicate(), 90)
    return Ran(proc.returncode or 0, out.decode())


def fails(out: str) -> dict[str, str]:
    """FAIL check name -> its fix line, from doctor's text output."""
    found = re.findall(r"^FAIL ([^:]+): .*\n\s+fix: (.*)$", out, re.M)
    return dict(found)


async def test_each_fail_is_fixed_by_the_command_its_fix_names(
    tmp_path: Path,
    fake_llm: FakeOpenAI,
    telegram_api: FakeTelegramAPI,
    line_api: FakeLineAPI,
) -> None:
    data = tmp_path / "data"
    data.mkdir(mode=0o777)
    data.chmod(0o777)
    line_api.webhook_endpoint, line_api.webhook_active = "https://old.example.test/hook", True
    (tmp_path / ".env").write_text(
        "\n".join(
            [
                f"SKILLGATE_DATA_DIR={data}",
                f"SKILLGATE_PUBLIC_URL={PUBLIC_URL}",
                "SKILLGATE_PERSONA_FILE=persona/bot.md",
                f"LLM_BASE_URL={fake_llm.base_url}",
                "LLM_MODEL=fake-model",
                f"TELEGRAM_BOT_TOKEN={telegram_api.token}",
                f"TELEGRAM_API_BASE_URL={telegram_api.base_url}",
                f"LINE_CHANNEL_SECRET={LINE_SECRET}",
                f"LINE_CHANNEL_ACCESS_TOKEN={line_api.access_token}",
                f"LINE_API_BASE_URL={line_api.base_url}",
                "",
            ]
        )
    )
    before = await run("skillgate doctor", tmp_path)
    assert before.returncode == 1
    broken = fails(before.stdout)
    assert set(broken) >= {"data dir", "persona", "telegram", "telegram webhook", "line webhook"}
    commands = []
    for name, fix in broken.items():
        named = re.findall(r"`([^`]+)`", fix)
        assert named, f"the fix of {name} names no command: {fix}"
        commands.append(named[0])
    outputs = []
    for command in dict.fromkeys(commands):  # each once, in the order doctor printed them
        done = await run(command, tmp_path)
        outputs.append(done.stdout)
    fixed = outputs[0]
    assert f"FIXED data dir: chmod 750 {data.resolve()}" in fixed
    assert "FIXED persona: wrote the default persona to persona/bot.md" in fixed
    assert "FIXED env file: generated TELEGRAM_WEBHOOK_SECRET, SKILLGATE_ADMIN_TOKEN" in fixed
    assert f"FIXED telegram webhook: {PUBLIC_URL}/webhook/telegram" in fixed
    assert f"FIXED line webhook: {PUBLIC_URL}/webhook/line" in fixed

    after = await run("skillgate doctor", tmp_path)
    assert after.returncode == 0, after.stdout
    assert (data.stat().st_mode & 0o777) == 0o750
    assert (tmp_path / "persona" / "bot.md").read_text().strip()
    secret = re.search(r"^TELEGRAM_WEBHOOK_SECRET=(\S+)$", (tmp_path / ".env").read_text(), re.M)
    assert secret is not None and telegram_api.webhook_secret_token == secret.group(1)
    assert secret.group(1) not in fixed  # said, never shown


def unit_file(tmp_path: Path, env_file: Path) -> Path:
    """The project's own unit, reading `env_file`."""
    text = (DEPLOY / "skillgate.service").read_text()
    unit = tmp_path / "skillgate.service"
    unit.write_text(text.replace("/etc/skillgate/skillgate.env", str(env_file)))
    return unit


def test_doctor_warns_when_the_env_file_overrides_the_units_data_dir(tmp_path: Path) -> None:
    env_file = tmp_path / "skillgate.env"
    unit = unit_file(tmp_path, env_file)
    service_dir = Path("/var/lib/skillgate")

    env_file.write_text("SKILLGATE_DATA_DIR=./data\nLLM_MODEL=m\n")  # the old template's trap
    check = check_service_data_dir(unit, service_dir)
    assert check is not None and check.status == "warn"
    assert "overrides the unit's /var/lib/skillgate" in check.detail
    assert "/var/lib/skillgate/data" in check.detail  # where the service really writes
    assert f"`SKILLGATE_DATA_DIR=/var/lib/skillgate` in {env_file}" in check.fix

    env_file.write_text("SKILLGATE_DATA_DIR=/var/lib/skillgate\n")
    check = check_service_data_dir(unit, service_dir)
    assert check is not None and check.status == "ok"

    check = check_service_data_dir(unit, tmp_path / "data")  # this command, elsewhere
    assert check is not None and check.status == "warn"
    assert f"skillgate --env-file {env_file} doctor" in check.fix

    assert check_service_data_dir(tmp_path / "absent.service", service_dir) is None
