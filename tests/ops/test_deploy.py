"""The deploy/ files: the systemd unit verifies, the proxies expose only what they should.

The replica files (compose.replicas.yaml, Caddyfile.replicas, nginx.replicas.conf) put
two replicas behind one proxy: requests go to both in turn, and a replica that stops or
fails its health check gets none while the other answers them all.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
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
        "LimitNOFILE=65536",
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


ADDED = "/webhook/discord"
"""The webhook of a platform a package adds: no proxy config names it."""


class WebhookEcho(FakeChannel):
    """Serves the webhook paths and echoes the headers the proxy passed on."""

    def routes(self) -> list[web.RouteDef]:
        paths = ("/webhook/telegram", "/webhook/line", ADDED)
        return [web.post(path, self.echo) for path in paths]

    async def echo(self, request: web.Request) -> web.Response:
        body = await request.read()
        port = request.transport.get_extra_info("sockname")[1] if request.transport else None
        return web.json_response(
            {
                "path": request.path,
                "bytes": len(body),
                "headers": dict(request.headers),
                "port": port,  # which replica answered
            }
        )


@dataclass
class Replica:
    """The real app with webhook routes, on a loopback port, until `stop`."""

    runner: web.AppRunner
    port: int
    running: bool = True

    @classmethod
    async def start(cls, settings: Settings) -> Replica:
        runner = web.AppRunner(build_app(settings, channels=[WebhookEcho(settings)]))
        await runner.setup()
        port = free_port()
        await web.TCPSite(runner, "127.0.0.1", port).start()
        return cls(runner, port)

    async def stop(self) -> None:
        if self.running:
            self.running = False
            await self.runner.cleanup()


@pytest.fixture
async def gateway(settings: Settings) -> AsyncIterator[int]:
    """The real app with webhook routes, on a loopback port."""
    replica = await Replica.start(settings)
    yield replica.port
    await replica.stop()


@pytest.fixture
async def gateways(settings: Settings) -> AsyncIterator[list[Replica]]:
    """Two replicas of the app (each with its own data dir: the proxy is what is tested)."""
    second = settings.model_copy(update={"data_dir": settings.data_dir.parent / "data-2"})
    replicas = [await Replica.start(settings), await Replica.start(second)]
    yield replicas
    for replica in replicas:
        await replica.stop()


async def serve(cmd: list[str], port: int, env: dict[str, str] | None = None) -> Any:
    """Start a proxy and wait until its port accepts connections.

    Its stderr (Caddy's access log) goes to a file in the test's folder, the working
    directory: a pipe nobody reads would fill up and stall the proxy.
    """
    log = Path.cwd() / f"{Path(cmd[0]).name}-{port}.log"
    with log.open("wb") as out:
        proc = await asyncio.create_subprocess_exec(
            *cmd,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=out,
            env={**os.environ, **(env or {})},
        )
    for _ in range(100):  # bounded readiness poll, ~10 s
        try:
            _r, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.close()
            return proc
        except OSError:
            if proc.returncode is not None:
                raise AssertionError(f"{cmd[0]} exited: {log.read_text()}") from None
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
        status, echo = await call("POST", ADDED, data=b"{}")  # one rule serves every platform
        assert status == 200 and echo["path"] == ADDED
        assert (await call("GET", "/admin/api/skills"))[0] == 401
        assert (await call("GET", "/admin/api/skills", headers=AUTH))[0] == 200
        for path in ("/metrics", "/", "/webhook", "/webhook/other", "/.env", "/healthzx"):
            assert (await call("GET", path))[0] == 404, path
        assert (await call("GET", "/metrics", headers=AUTH))[0] == 404
        status, _ = await call("POST", "/webhook/telegram", data=b"x" * 2_000_000)
        assert status == 413


def nginx_site(name: str, upstreams: dict[str, str], https: int, http: int, tmp_path: Path) -> str:
    """deploy/NAME for a test: loopback ports, the upstream lines replaced, a self-signed cert."""
    openssl = shutil.which("openssl")
    assert openssl is not None
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-days", "1", "-subj", "/CN=bot.example.com",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True, timeout=30,
    )  # fmt: skip
    return substitute(
        (DEPLOY / name).read_text(),
        {
            **upstreams,
            "listen 443 ssl;": f"listen 127.0.0.1:{https} ssl;",
            "listen 80;": f"listen 127.0.0.1:{http};",
            "listen [::]:443 ssl;": "",
            "listen [::]:80;": "",
            "/etc/letsencrypt/live/SKILLGATE_DOMAIN/fullchain.pem": str(cert),
            "/etc/letsencrypt/live/SKILLGATE_DOMAIN/privkey.pem": str(key),
        },
    )


def need_nginx() -> str:
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    if not Path(nginx).exists() or shutil.which("openssl") is None:
        pytest.skip("nginx or openssl is not installed (Debian packages `nginx-light`, `openssl`)")
    return nginx


async def run_nginx(nginx: str, site: str, https: int, tmp_path: Path) -> Any:
    """nginx with `site` as its only server configuration, in the foreground."""
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
    return await serve(cmd, https)


async def test_nginx_exposes_only_webhooks_health_and_admin_over_tls(
    gateway: int, tmp_path: Path
) -> None:
    nginx = need_nginx()
    https, http = free_port(), free_port()
    upstream = {"server 127.0.0.1:8080;": f"server 127.0.0.1:{gateway};"}
    proc = await run_nginx(
        nginx, nginx_site("nginx.conf", upstream, https, http, tmp_path), https, tmp_path
    )
    try:
        await check_exposure(f"https://127.0.0.1:{https}")
        async with aiohttp.ClientSession() as session:
            url = f"http://127.0.0.1:{http}/webhook/telegram"
            async with session.get(url, allow_redirects=False) as resp:
                assert resp.status == 301
                assert resp.headers["Location"].startswith("https://")
    finally:
        await stop(proc)


def need_caddy() -> str:
    caddy = shutil.which("caddy")
    if caddy is None:
        pytest.skip("caddy is not installed (Debian package `caddy`)")
    return caddy


async def run_caddy(caddy: str, name: str, port: int, env: dict[str, str], tmp_path: Path) -> Any:
    """Caddy with deploy/NAME on plain HTTP (no certificate in a test) and `env` set."""
    # The admin endpoint is off so the test never collides with a running Caddy.
    config = tmp_path / name
    text = (DEPLOY / name).read_text()
    assert "\n{\n" in text  # the global options block, where `admin off` goes
    config.write_text(text.replace("\n{\n", "\n{\n\tadmin off\n", 1))
    env = {
        "SKILLGATE_DOMAIN": f"http://127.0.0.1:{port}",
        "HOME": str(tmp_path),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        **env,
    }
    return await serve([caddy, "run", "--adapter", "caddyfile", "--config", str(config)], port, env)


async def test_caddy_exposes_only_webhooks_health_and_admin(gateway: int, tmp_path: Path) -> None:
    port = free_port()
    env = {"SKILLGATE_UPSTREAM": f"127.0.0.1:{gateway}"}
    proc = await run_caddy(need_caddy(), "Caddyfile", port, env, tmp_path)
    try:
        await check_exposure(f"http://127.0.0.1:{port}")
    finally:
        await stop(proc)


# --- Several replicas ----------------------------------------------------------------


GATEWAYS = ("gateway-1", "gateway-2")
PASSWORD = r"\$\{POSTGRES_PASSWORD:\?[^}]+\}"
"""Compose's `${POSTGRES_PASSWORD:?message}`: the value comes from deploy/.env or nowhere."""


def test_compose_replicas_share_one_database_and_one_skills_volume() -> None:
    compose: dict[str, Any] = yaml.safe_load((DEPLOY / "compose.replicas.yaml").read_text())
    services = compose["services"]
    single = yaml.safe_load((DEPLOY / "compose.yaml").read_text())["services"]["gateway"]
    urls = set()
    for name in GATEWAYS:
        gateway = services[name]
        assert gateway["build"] == single["build"] and gateway["image"] == single["image"]
        assert gateway["environment"]["SKILLGATE_DATA_DIR"] == "/data"
        # One named volume at /data on both: the skills (and its .skillgate-volume marker).
        assert [v for v in gateway["volumes"] if v.split(":")[1] == "/data"] == [
            "skillgate-data:/data"
        ]
        assert gateway["depends_on"]["postgres"]["condition"] == "service_healthy"
        assert gateway["stop_grace_period"] == single["stop_grace_period"]
        urls.add(gateway["environment"]["SKILLGATE_DATABASE_URL"])
    [url] = urls  # the same database for both
    postgres = services["postgres"]
    env = postgres["environment"]
    match = re.fullmatch(rf"postgresql://(\w+):{PASSWORD}@postgres:5432/(\w+)", url)
    assert match and match.groups() == (env["POSTGRES_USER"], env["POSTGRES_DB"]), url
    assert re.fullmatch(PASSWORD, env["POSTGRES_PASSWORD"])  # not written in the file
    assert postgres["image"] == "postgres:16"
    assert "postgres-data:/var/lib/postgresql/data" in postgres["volumes"]
    assert "pg_isready" in " ".join(postgres["healthcheck"]["test"])
    assert {"skillgate-data", "postgres-data", "caddy-data"} <= set(compose["volumes"])
    # Only Caddy is published; it waits for both replicas and proxies to both.
    assert [name for name, svc in services.items() if "ports" in svc] == ["caddy"]
    caddy = services["caddy"]
    assert {caddy["depends_on"][n]["condition"] for n in GATEWAYS} == {"service_healthy"}
    assert "./Caddyfile.replicas:/etc/caddy/Caddyfile:ro" in caddy["volumes"]
    assert caddy["environment"]["SKILLGATE_UPSTREAMS"].split() == [f"{n}:8080" for n in GATEWAYS]
    assert all(services[n]["expose"] == ["8080"] for n in GATEWAYS)


def without(text: str, prefixes: tuple[str, ...]) -> list[str]:
    """The configuration's lines minus comments and the directives (or blocks) named."""
    kept, depth = [], 0
    for line in text.splitlines():
        stripped = line.strip()
        if depth:
            depth += stripped.count("{") - stripped.count("}")
        elif stripped.startswith(prefixes):
            depth = stripped.count("{") - stripped.count("}")
        elif stripped and not stripped.startswith("#"):
            kept.append(line)
    return kept


def test_the_replica_proxy_configs_differ_from_the_single_ones_only_in_the_upstreams() -> None:
    caddy = ("reverse_proxy",)
    single, replicas = ((DEPLOY / n).read_text() for n in ("Caddyfile", "Caddyfile.replicas"))
    assert without(single, caddy) == without(replicas, caddy)
    directives = {line.split()[0]: line.split()[1:] for line in without(replicas, ())}
    assert directives["lb_policy"] == ["round_robin"]
    assert directives["health_uri"] == ["/healthz"]
    assert "lb_try_duration" in directives
    nginx = ("upstream skillgate", "proxy_next_upstream", "proxy_connect_timeout")
    single, replicas = ((DEPLOY / n).read_text() for n in ("nginx.conf", "nginx.replicas.conf"))
    assert without(single, nginx) == without(replicas, nginx)
    assert "proxy_next_upstream error timeout;" in replicas


async def webhooks(base: str, count: int = 0, seconds: float = 0.0) -> list[tuple[int, int]]:
    """Post webhooks one after another, `count` of them or for `seconds`.

    Returns (status, port of the replica that answered, 0 when the proxy answered).
    """
    answers: list[tuple[int, int]] = []
    async with aiohttp.ClientSession() as http:
        deadline = asyncio.get_running_loop().time() + seconds
        while len(answers) < count or asyncio.get_running_loop().time() < deadline:
            async with http.post(f"{base}/webhook/telegram", data=b"{}", ssl=False) as resp:
                is_json = resp.content_type == "application/json"
                answers.append((resp.status, (await resp.json())["port"] if is_json else 0))
            if seconds:
                await asyncio.sleep(0.05)
    return answers


async def answered_by(base: str, count: int) -> list[int]:
    """Post `count` webhooks that must all succeed; the replica that answered each."""
    answers = await webhooks(base, count)
    assert {status for status, _ in answers} == {200}, answers
    return [port for _, port in answers]


async def check_spread(base: str, replicas: list[Replica]) -> None:
    """Requests go to both replicas, in turn (round robin, not at random)."""
    ports = await answered_by(base, 20)
    assert sorted(set(ports)) == sorted(r.port for r in replicas)
    assert all(a != b for a, b in itertools.pairwise(ports)), ports


async def check_console_login_holds_on_every_replica(base: str, replicas: list[Replica]) -> None:
    """A console login through the proxy is good on any replica: no sticky sessions needed.

    The session cookie is signed with a key derived from the admin token, which every
    replica has, so whichever replica issued it, every replica accepts it.
    """
    jar = aiohttp.CookieJar(unsafe=True)  # keep cookies of an IP address
    async with aiohttp.ClientSession(cookie_jar=jar) as http:
        login = {"token": "admin-secret-token", "next": "/admin/skills"}
        async with http.post(
            f"{base}/admin/login", data=login, allow_redirects=False, ssl=False
        ) as resp:
            assert resp.status == 303 and resp.headers["Location"] == "/admin/skills"
        [session] = [c.value for c in jar if c.key == "skillgate_console"]
        for _ in range(4):  # through the proxy, to each replica in turn
            async with http.get(f"{base}/admin/skills", allow_redirects=False, ssl=False) as resp:
                assert resp.status == 200, resp.headers.get("Location")
    async with aiohttp.ClientSession() as http:
        for replica in replicas:  # and straight to each replica, past the proxy
            url = f"http://127.0.0.1:{replica.port}/admin/skills"
            cookie = {"Cookie": f"skillgate_console={session}"}
            async with http.get(url, headers=cookie, allow_redirects=False) as resp:
                assert resp.status == 200, resp.headers.get("Location")
            async with http.get(url, allow_redirects=False) as resp:
                assert resp.status == 303  # without it: to the login page


def caddy_version(caddy: str) -> tuple[int, ...]:
    out = subprocess.run([caddy, "version"], capture_output=True, text=True, timeout=30).stdout
    found = re.search(r"(\d+)\.(\d+)\.(\d+)", out)
    assert found, out
    return tuple(int(n) for n in found.groups())


async def test_caddy_spreads_requests_over_replicas_and_skips_a_stopped_one(
    gateways: list[Replica], tmp_path: Path
) -> None:
    caddy = need_caddy()
    port = free_port()
    env = {"SKILLGATE_UPSTREAMS": " ".join(f"127.0.0.1:{r.port}" for r in gateways)}
    proc = await run_caddy(caddy, "Caddyfile.replicas", port, env, tmp_path)
    try:
        base = f"http://127.0.0.1:{port}"
        await check_exposure(base)
        await check_spread(base, gateways)
        await check_console_login_holds_on_every_replica(base, gateways)
        await gateways[0].stop()
        # Until its next health check (every 2 s) finds it down, Caddy still picks the
        # stopped replica now and then, and tries the other one for those webhooks.
        during = await webhooks(base, seconds=2.5)
        assert {port for status, port in during if status == 200} == {gateways[1].port}
        if caddy_version(caddy) >= (2, 11, 2):
            assert {status for status, _ in during} == {200}, during
        else:  # no body to re-send: 502, but the healthy replica is never taken out (503)
            assert {status for status, _ in during} <= {200, 502}, during
        assert await answered_by(base, 20) == [gateways[1].port] * 20
    finally:
        await stop(proc)


async def test_caddy_sends_nothing_to_a_replica_whose_health_check_fails(
    gateway: int, tmp_path: Path
) -> None:
    """A replica that is up but answers /healthz with 503 (its database gone) gets no webhook."""
    probes: list[str] = []
    hooks: list[str] = []

    async def sick_health(request: web.Request) -> web.Response:
        probes.append(request.path)
        return web.json_response({"status": "error", "database": "unreachable"}, status=503)

    async def sick_hook(request: web.Request) -> web.Response:
        hooks.append(request.path)
        return web.json_response({"port": 0})

    sick = web.Application()
    sick.router.add_get("/healthz", sick_health)
    sick.router.add_post("/webhook/telegram", sick_hook)
    runner = web.AppRunner(sick)
    await runner.setup()
    sick_port = free_port()
    await web.TCPSite(runner, "127.0.0.1", sick_port).start()
    port = free_port()
    env = {"SKILLGATE_UPSTREAMS": f"127.0.0.1:{sick_port} 127.0.0.1:{gateway}"}
    proc = await run_caddy(need_caddy(), "Caddyfile.replicas", port, env, tmp_path)
    try:
        for _ in range(50):  # bounded: Caddy checks every upstream as it starts
            if probes:
                break
            await asyncio.sleep(0.1)
        assert probes
        await asyncio.sleep(0.3)  # and marks it unhealthy once the answer is in
        assert await answered_by(f"http://127.0.0.1:{port}", 10) == [gateway] * 10
        assert hooks == []
    finally:
        await stop(proc)
        await runner.cleanup()


async def test_nginx_spreads_requests_over_replicas_and_skips_a_stopped_one(
    gateways: list[Replica], tmp_path: Path
) -> None:
    nginx = need_nginx()
    https, http = free_port(), free_port()
    first, second = (r.port for r in gateways)
    upstreams = {
        "server 127.0.0.1:8080 max_fails": f"server 127.0.0.1:{first} max_fails",
        "server 127.0.0.1:8081 max_fails": f"server 127.0.0.1:{second} max_fails",
    }
    site = nginx_site("nginx.replicas.conf", upstreams, https, http, tmp_path)
    proc = await run_nginx(nginx, site, https, tmp_path)
    try:
        base = f"https://127.0.0.1:{https}"
        await check_exposure(base)
        await check_spread(base, gateways)
        await check_console_login_holds_on_every_replica(base, gateways)
        await gateways[0].stop()
        await asyncio.sleep(0.2)  # nginx closes its idle connections to it
        # The first webhook to it fails to connect and goes to the other replica at once.
        assert await answered_by(base, 20) == [gateways[1].port] * 20
    finally:
        await stop(proc)


def test_the_guide_clones_for_real_and_writes_the_env_file_with_init() -> None:
    import shlex

    from gateway.cli import build_parser

    guide = (DEPLOY / "README.md").read_text()
    assert "<the Skillgate repository URL>" not in guide
    assert guide.count('git clone "$REPO" /opt/skillgate') == 2 and "\nREPO=" in guide
    assert "install -m 640 -o root -g skillgate /opt/skillgate/.env.example" not in guide
    assert "../.env.example" not in guide  # the old template set SKILLGATE_DATA_DIR=./data
    start = guide.index("/opt/skillgate/.venv/bin/skillgate --env-file")
    command = guide[start : guide.index("\n", guide.index("--telegram-admin-ids", start))]
    argv = shlex.split(command.replace("\\\n", " ").replace("$DOMAIN", "bot.example.com"))
    args = build_parser().parse_args(argv[1:])
    assert args.command == "init" and args.non_interactive
    assert str(args.env_file) == "/etc/skillgate/skillgate.env"
    unit = (DEPLOY / "skillgate.service").read_text()
    assert f"Environment=SKILLGATE_DATA_DIR={args.data_dir}\n" in unit
    assert f"EnvironmentFile={args.env_file}\n" in unit
