"""The model call's own connection: proxies, compressed streams, connections that fail."""

from __future__ import annotations

import asyncio

import pytest

from gateway.core.llm import OpenAIChat
from gateway.errors import ModelMisconfigured, ModelUnavailable
from tests.fakes.openai_server import FakeOpenAI

HI = [{"role": "user", "content": "hi"}]


async def test_a_proxy_named_in_the_environment_carries_the_call_with_its_credentials(
    fake_llm: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The fake stands in for the proxy: the model's own host does not exist.
    proxy = fake_llm.base_url.removesuffix("/v1").replace("http://", "http://relay:s3cret@")
    monkeypatch.setenv("http_proxy", proxy)
    llm = OpenAIChat("http://model.invalid/v1", "fake-model", backoff=0, max_retries=0)
    try:
        assert (await llm.complete(HI)).text == "Hello from the fake model."
    finally:
        await llm.close()
    assert fake_llm.headers[0]["Host"] == "model.invalid"
    assert fake_llm.headers[0]["Proxy-Authorization"] == "Basic cmVsYXk6czNjcmV0"


async def test_a_compressed_stream_is_read_as_the_plain_one(fake_llm: FakeOpenAI) -> None:
    fake_llm.gzip_streams = True
    llm = OpenAIChat(fake_llm.base_url, "fake-model")
    try:
        answer = await llm.complete(HI)
    finally:
        await llm.close()
    assert answer.text == "Hello from the fake model." and answer.usage_known


async def test_nothing_listening_is_named_at_once_not_waited_for_as_a_timeout(
    fake_llm: FakeOpenAI,
) -> None:
    port = fake_llm.base_url.split(":")[-1].split("/")[0]
    await fake_llm.close()
    llm = OpenAIChat(f"http://127.0.0.1:{port}/v1", "m", timeout=30.0, backoff=0, max_retries=1)
    try:
        with pytest.raises(ModelMisconfigured, match="model unreachable: connection refused"):
            await llm.complete(HI)
    finally:
        await llm.close()


async def test_a_server_that_hangs_up_unanswered_is_asked_again_then_named() -> None:
    hung_up = 0

    async def hang_up(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal hung_up
        hung_up += 1
        writer.close()

    server = await asyncio.start_server(hang_up, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    llm = OpenAIChat(f"http://127.0.0.1:{port}/v1", "m", backoff=0, max_retries=2)
    try:
        with pytest.raises(ModelUnavailable, match=r"connection failed \(ServerDisconnected"):
            await llm.complete(HI)
    finally:
        await llm.close()
        server.close()
        await server.wait_closed()
    assert hung_up == 3  # a connection that fails at once is tried again, unlike a timeout


async def test_a_model_server_whose_certificate_is_not_trusted_is_refused(
    unused_tcp_port: int,
) -> None:
    # Every client shares one TLS context (building one is tens of ms on the event loop):
    # it must still verify, here against a certificate from a CA nobody trusts.
    import ssl

    import trustme
    from aiohttp import web

    ca = trustme.CA()
    server_tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(server_tls)
    asked: list[str] = []

    async def models(request: web.Request) -> web.Response:
        asked.append(request.path)
        return web.json_response({"data": [{"id": "fake-model"}]})

    app = web.Application()
    app.router.add_get("/v1/models", models)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", unused_tcp_port, ssl_context=server_tls).start()
    base = f"https://127.0.0.1:{unused_tcp_port}/v1"
    clients = [OpenAIChat(base, "fake-model", backoff=0, max_retries=0) for _ in range(2)]
    try:
        for llm in clients:
            with pytest.raises(ModelUnavailable, match="SSLCertVerificationError"):
                await llm.complete(HI)
            with pytest.raises(ModelUnavailable):
                await llm.ping()
    finally:
        for llm in clients:
            await llm.close()
        await runner.cleanup()
    assert asked == []  # no request got past the handshake
