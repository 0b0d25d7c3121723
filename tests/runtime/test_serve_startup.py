"""`skillgate serve` as a real process: what it refuses before it starts, with one line."""

from __future__ import annotations

import json
import socket
import stat
from pathlib import Path

from tests.fakes.openai_server import FakeOpenAI
from tests.serve_process import free_port, serving, skillgate


def environment(tmp_path: Path, llm: FakeOpenAI) -> dict[str, str]:
    return {
        "SKILLGATE_DATA_DIR": str(tmp_path / "data"),
        "SKILLGATE_SYNTHESIS_INTERVAL_MINUTES": "0",
        "LLM_BASE_URL": llm.base_url,
        "LLM_MODEL": "fake-model",
    }


async def test_a_port_in_use_stops_serve_with_one_line_before_any_start_up_work(
    tmp_path: Path,
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        async with FakeOpenAI() as llm:
            status, out, err = await skillgate(
                "serve", "--port", str(port), env=environment(tmp_path, llm)
            )
    assert status == 1
    assert err.splitlines() == [
        f"skillgate: cannot listen on http://127.0.0.1:{port}: Address already in use"
    ]
    assert out == ""
    assert not (tmp_path / "data").exists()  # no database, no seeded skills, no persona


async def test_a_second_serve_on_the_same_sqlite_data_dir_is_refused_and_doctor_names_the_first(
    tmp_path: Path,
) -> None:
    async with FakeOpenAI() as llm:
        env = environment(tmp_path, llm)
        async with serving(env=env) as first:
            status, _, err = await skillgate("serve", "--port", str(free_port()), env=env)
            _, out, _ = await skillgate("doctor", "--json", env=env)
        assert first.returncode == 0, first.stderr
        # Once the first has stopped, the data dir is free again.
        _, after, _ = await skillgate("doctor", "--json", env=env)
    assert status == 1
    [line] = err.splitlines()
    assert f"pid {first.proc.pid} " in line and "SQLite allows one server per data dir" in line
    assert "Traceback" not in err
    server = {c["name"]: c for c in json.loads(out)}["server"]
    assert server["status"] == "ok" and f"pid {first.proc.pid} " in server["detail"]
    server = {c["name"]: c for c in json.loads(after)}["server"]
    assert server["detail"].startswith("no skillgate serve holds")


async def test_serve_creates_the_data_dir_private_so_doctor_does_not_warn(
    tmp_path: Path,
) -> None:
    async with FakeOpenAI() as llm:
        env = environment(tmp_path, llm)
        async with serving(env=env):
            pass
        _, out, _ = await skillgate("doctor", "--json", env=env)
    assert stat.S_IMODE((tmp_path / "data").stat().st_mode) == 0o700
    checks = {c["name"]: c for c in json.loads(out)}
    assert checks["data dir"]["status"] == "ok", checks["data dir"]
