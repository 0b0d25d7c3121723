"""LLM_UNIX_SOCKET: an operator's model server on a unix domain socket (llama.cpp's
`--host PATH.sock`), reached by every call to LLM_BASE_URL, whose host is only a name."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from pydantic import ValidationError

from gateway.config import Settings
from gateway.runtime.assembly import chat_client, make_llm
from gateway.runtime.local_model import private_dir
from gateway.runtime.model_check import model_error
from tests.runtime.test_local_model_process import FAKE, _peer, until


async def test_an_operators_model_server_on_a_unix_socket_answers_every_call(
    make_settings: Callable[..., Settings],
) -> None:
    sock = private_dir() / "llama.sock"
    server = subprocess.Popen([sys.executable, FAKE, str(sock)], stdin=subprocess.PIPE)
    try:
        until(lambda: _peer(sock) == server.pid)
        settings = make_settings(
            llm_base_url="http://llama/v1", llm_unix_socket=str(sock), llm_model="fake-local"
        )
        assert await model_error(settings) is None  # the start's look at /models
        llm = make_llm(settings)
        try:
            reply = await llm.complete([{"role": "user", "content": "hi"}])
        finally:
            await llm.close()
        assert reply.text == f"answered by {server.pid}"
        # A fallback on another server is not sent to the socket.
        other = chat_client(settings, "http://127.0.0.1:9/v1", "other", None, None)
        assert other.unix_socket is None
        await other.close()
    finally:
        assert server.stdin is not None
        server.stdin.close()
        await asyncio.to_thread(server.wait, 10)
        shutil.rmtree(sock.parent)


def test_the_socket_is_an_absolute_path(make_settings: Callable[..., Settings]) -> None:
    with pytest.raises(ValidationError, match="absolute path"):
        make_settings(llm_unix_socket="llama.sock")
    assert Path(
        make_settings(llm_unix_socket="/run/llama.sock").llm_unix_socket or ""
    ).is_absolute()
