"""The deploy/ files: the systemd unit verifies, the proxies expose only what they should."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml
from aiohttp import web

from gateway.app import build_app
from gateway.config import Settings
from tests.fakes.channel import FakeChannel
from tests.serve_process import free_port

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
AUTH = {"Authorization": "Bearer admin-secret-token"}


def substitute(text: str, replacements: dict[str, str]) -> str:
    """Replace each key, failing loudly if the deploy file no longer contains it."""
    for old, new in replacements.items():
        assert old in text, f"{old!r} not found in the deploy file"
        text = text.replace(old, new)
    return text


UNITS = ("skillgate.service", "skillgate-backup.service", "skillgate-backup.timer")


def test_the_systemd_units_pass_systemd_analyze_verify(tmp_path: Path) -> None:
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is not installed (Debian package `systemd`)")
    # verify checks that ExecStart exists: point it at this installation's command.
    here = str(Path(sys.executable).parent / "skillgate")
    for name in UNITS:
        text = (DEPLOY / name).read_text()
        if name.endswith(".service"):
            text = substitute(text, {"/opt/skillgate/.venv/bin/skillgate": here})
        (tmp_path / name).write_text(text)
    result = subprocess.run(
        [analyze, "verify", *(str(tmp_path / n) for n in UNITS)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0 and result.stderr.strip() == "", result.stderr
    unit = (DEPLOY / "skillgate.service").read_text()
    for hardening in (
        "User=skillgate",
        "EnvironmentFile=/etc/skillgate/skillgate.env",
        "ReadWritePaths=/var/lib/skillgate",
        "NoNewPrivileges=yes",
        "ProtectSystem=strict",
        "Restart=on-failure",
    ):
        assert f"\n{hardening}\n" in unit


def test_the_operator_command_uses_the_service_settings_user_and_install() -> None:
    wrapper = (DEPLOY / "skillgate.sh").read_text()
    for name in ("skillgate.service", "skillgate-backup.service"):
        unit = (DEPLOY / name).read_text()
        env_file = unit.split("EnvironmentFile=")[1].split()[0]
        command = unit.split("ExecStart=")[1].split()[0]
        assert f"--env-file {env_file}" in wrapper
        assert f"sudo -u {unit.split('User=')[1].split()[0]} {command} " in wrapper
    assert wrapper.rstrip().endswith('"$@"')


def dockerfile_instructions() -> list[str]:
    """The Dockerfile's instructions, continuation lines joined, comments dropped."""
    text = (DEPLOY / "Dockerfile").read_text().replace("\\\n", " ")
    return [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]


def test_the_image_is_slim_and_runs_as_a_user_with_a_data_volume() -> None:
    lines = dockerfile_instructions()
    final = max(i for i, ln in enumerate(lines) if ln.startswith("FROM "))
    assert lines[final].startswith("FROM python:3.11-slim")
    users = [ln.split()[1] for ln in lines[final:] if ln.startswith("USER ")]
    assert users and users[-1] not in {"root", "0"}
    assert "VOLUME /data" in lines and "SKILLGATE_DATA_DIR=/data" in " ".join(lines)
    cmd = [ln for ln in lines if ln.startswith("CMD ")][-1]
    assert json.loads(cmd[4:]) == ["skillgate", "serve", "--host", "0.0.0.0", "--port", "8080"]
    ignored = (DEPLOY.parent / ".dockerignore").read_text().split()
    assert ".env" in ignored and "data" in ignored


async def test_the_image_healthcheck_passes_only_while_the_gateway_answers(gateway: int) -> None:
    [check] = [ln for ln in dockerfile_instructions() if ln.startswith("HEALTHCHECK ")]
    argv = json.loads(check[check.index("CMD ") + 4 :])
    argv = [a.replace("127.0.0.1:8080", f"127.0.0.1:{gateway}") for a in argv]
    assert argv[0] == "python"
    ok = await asyncio.create_subprocess_exec(sys.executable, *argv[1:])
    assert await asyncio.wait_for(ok.wait(), 30) == 0
    down = [a.replace(f"127.0.0.1:{gateway}", f"127.0.0.1:{free_port()}") for a in argv]
    failed = await asyncio.create_subprocess_exec(
        sys.executable, *down[1:], stderr=asyncio.subprocess.DEVNULL
    )
    assert await asyncio.wait_for(failed.wait(), 30) != 0


def test_compose_runs_the_gateway_behind_caddy_with_a_data_volume() -> None:
    compose: dict[str, Any] = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    gateway, caddy = compose["services"]["gateway"], compose["services"]["caddy"]
    assert gateway["build"] == {"context": "..", "dockerfile": "deploy/Dockerfile"}
    assert "skillgate-data:/data" in gateway["volumes"]
    assert "ports" not in gateway  # only Caddy is published
    assert caddy["depends_on"]["gateway"]["condition"] == "service_healthy"
    assert "./Caddyfile:/etc/caddy/Caddyfile:ro" in caddy["volumes"]
    assert caddy["environment"]["SKILLGATE_UPSTREAM"] == "gateway:8080"
    assert set(compose["volumes"]) >= {"skillgate-data", "caddy-data"}


class WebhookEcho(FakeChannel):
    """Serves the two webhook paths and echoes the headers the proxy passed on."""

    def routes(self) -> list[web.RouteDef]:
        return [web.post("/webhook/telegram", self.echo), web.post("/webhook/line", self.echo)]

    async def echo(self, request: web.Request) -> web.Response:
        body = await request.read()
        return web.json_response(
            {"path": request.path, "bytes": len(body), "headers": dict(request.headers)}
        )


@pytest.fixture
async def gateway(settings: Settings) -> AsyncIterator[int]:
    """The real app with webhook routes, on a loopback port."""
    runner = web.AppRunner(build_app(settings, channels=[WebhookEcho(settings)]))
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    yield port
    await runner.cleanup()


async def serve(cmd: list[str], port: int, env: dict[str, str] | None = None) -> Any:
    """Start a proxy and wait until its port accepts connections."""
    proc = await asyncio.create_subprocess_exec(
        *cmd,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, **(env or {})},
    )
    for _ in range(100):  # bounded readiness poll, ~10 s
        try:
            _r, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.close()
            return proc
        except OSError:
            if proc.returncode is not None:
                err = await proc.stderr.read() if proc.stderr else b""
                raise AssertionError(f"{cmd[0]} exited: {err.decode()}") from None
            await asyncio.sleep(0.1)
    proc.kill()
    raise AssertionError(f"{cmd[0]} did not listen on {port}")


async def stop(proc: Any) -> None:
    proc.terminate()
    await asyncio.wait_for(proc.wait(), 10)


async def check_exposure(base: str) -> None:
    """Webhooks, health and admin reach the gateway; nothing else does, big bodies neither."""
    async with aiohttp.ClientSession() as http:

        async def call(method: str, path: str, **kw: Any) -> tuple[int, Any]:
            async with http.request(method, base + path, ssl=False, **kw) as resp:
                is_json = resp.content_type == "application/json"
                return resp.status, await (resp.json() if is_json else resp.text())

        status, health = await call("GET", "/healthz")
        assert status == 200 and health["status"] == "ok"
        secret = {"X-Telegram-Bot-Api-Secret-Token": "s3cret"}
        status, echo = await call("POST", "/webhook/telegram", data=b"{}", headers=secret)
        assert status == 200 and echo["headers"]["X-Telegram-Bot-Api-Secret-Token"] == "s3cret"
        assert "X-Forwarded-For" in echo["headers"]  # so /metrics would refuse it anyway
        status, echo = await call(
            "POST", "/webhook/line", data=b"{}", headers={"X-Line-Signature": "sig"}
        )
        assert status == 200 and echo["headers"]["X-Line-Signature"] == "sig"
        assert (await call("GET", "/admin/api/skills"))[0] == 401
        assert (await call("GET", "/admin/api/skills", headers=AUTH))[0] == 200
        for path in ("/metrics", "/", "/webhook", "/webhook/other", "/.env", "/healthzx"):
            assert (await call("GET", path))[0] == 404, path
        assert (await call("GET", "/metrics", headers=AUTH))[0] == 404
        status, _ = await call("POST", "/webhook/telegram", data=b"x" * 2_000_000)
        assert status == 413


async def test_nginx_exposes_only_webhooks_health_and_admin_over_tls(
    gateway: int, tmp_path: Path
) -> None:
    nginx, openssl = shutil.which("nginx") or "/usr/sbin/nginx", shutil.which("openssl")
    if not Path(nginx).exists() or openssl is None:
        pytest.skip("nginx or openssl is not installed (Debian packages `nginx-light`, `openssl`)")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-days", "1", "-subj", "/CN=bot.example.com",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True, timeout=30,
    )  # fmt: skip
    https, http = free_port(), free_port()
    site = substitute(
        (DEPLOY / "nginx.conf").read_text(),
        {
            "server 127.0.0.1:8080;": f"server 127.0.0.1:{gateway};",
            "listen 443 ssl;": f"listen 127.0.0.1:{https} ssl;",
            "listen 80;": f"listen 127.0.0.1:{http};",
            "listen [::]:443 ssl;": "",
            "listen [::]:80;": "",
            "/etc/letsencrypt/live/SKILLGATE_DOMAIN/fullchain.pem": str(cert),
            "/etc/letsencrypt/live/SKILLGATE_DOMAIN/privkey.pem": str(key),
        },
    )
    (tmp_path / "site.conf").write_text(site)
    temp = " ".join(
        f"{kind}_temp_path {tmp_path}/{kind};"
        for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    user = "user root;" if os.geteuid() == 0 else ""
    (tmp_path / "nginx.conf").write_text(
        f"{user} pid {tmp_path}/nginx.pid; error_log {tmp_path}/error.log;\n"
        "events { worker_connections 64; }\n"
        f"http {{ access_log off; {temp} include {tmp_path}/site.conf; }}\n"
    )
    cmd = [nginx, "-p", str(tmp_path), "-c", str(tmp_path / "nginx.conf"), "-g", "daemon off;"]
    check = subprocess.run([*cmd[:-2], "-t"], capture_output=True, text=True, timeout=30)
    assert check.returncode == 0, check.stderr
    proc = await serve(cmd, https)
    try:
        await check_exposure(f"https://127.0.0.1:{https}")
        async with aiohttp.ClientSession() as session:
            url = f"http://127.0.0.1:{http}/webhook/telegram"
            async with session.get(url, allow_redirects=False) as resp:
                assert resp.status == 301
                assert resp.headers["Location"].startswith("https://")
    finally:
        await stop(proc)


async def test_caddy_exposes_only_webhooks_health_and_admin(gateway: int, tmp_path: Path) -> None:
    caddy = shutil.which("caddy")
    if caddy is None:
        pytest.skip("caddy is not installed (Debian package `caddy`)")
    port = free_port()
    # The admin endpoint is off so the test never collides with a running Caddy.
    config = tmp_path / "Caddyfile"
    config.write_text("{\n\tadmin off\n}\n" + (DEPLOY / "Caddyfile").read_text())
    env = {
        "SKILLGATE_DOMAIN": f"http://127.0.0.1:{port}",  # plain HTTP: no certificate in a test
        "SKILLGATE_UPSTREAM": f"127.0.0.1:{gateway}",
        "HOME": str(tmp_path),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
    }
    proc = await serve([caddy, "run", "--adapter", "caddyfile", "--config", str(config)], port, env)
    try:
        await check_exposure(f"http://127.0.0.1:{port}")
    finally:
        await stop(proc)
