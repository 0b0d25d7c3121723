"""Turning a hostile-corpus case into the request it describes (see hostile_corpus.yaml)."""

from __future__ import annotations

import asyncio
import copy
import itertools
import json
import re
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import yaml

from gateway.app import CHANNELS
from tests.cards_support import ALICE, LINE_ADMIN, LINE_OTHER, LINE_SECRET, Rig
from tests.fakes.line_api import postback_event, sign, text_event, unknown_event, webhook_body
from tests.fakes.telegram_api import make_callback_update, make_text_update
from tests.telegram_harness import SECRET as TG_SECRET

CORPUS = Path(__file__).with_name("hostile_corpus.yaml")
TOKEN = "admin-secret-token"
MIB = 1024 * 1024
_ARABIC = str.maketrans("0123456789", "٠١٢٣٤٥٦٧٨٩")
_PLACEHOLDER = re.compile(r"\{\{([a-z_]+)(?::([^}]*))?\}\}")
_update_ids = itertools.count(800_000)


def load_corpus() -> dict[str, list[dict[str, Any]]]:
    """The corpus: `requests` and `synthesis` cases."""
    data: dict[str, list[dict[str, Any]]] = yaml.safe_load(CORPUS.read_text(encoding="utf-8"))
    return data


@dataclass
class Seeded:
    """What the corpus's placeholders refer to in the running gateway."""

    tg_answer: int
    tg_message_id: int
    line_answer: int
    proposal: int
    csrf: str


def expand(value: Any, rig: Rig, seeded: Seeded) -> Any:
    """The case with every {{placeholder}} replaced."""
    if isinstance(value, dict):
        return {k: expand(v, rig, seeded) for k, v in value.items()}
    if isinstance(value, list):
        return [expand(v, rig, seeded) for v in value]
    if isinstance(value, str):
        return _PLACEHOLDER.sub(lambda m: _fill(m.group(1), m.group(2), rig, seeded), value)
    return value


def _fill(name: str, arg: str | None, rig: Rig, seeded: Seeded) -> str:
    channels = {c.name: c for c in rig.client.server.app[CHANNELS]}
    telegram, line = channels["telegram"].profile, channels["line"].profile
    simple = {
        "tg_answer": str(seeded.tg_answer),
        "line_answer": str(seeded.line_answer),
        "proposal": str(seeded.proposal),
        "tg_answer_arabic": str(seeded.tg_answer).translate(_ARABIC),
        "proposal_arabic": str(seeded.proposal).translate(_ARABIC),
        "csrf": seeded.csrf,
    }
    if name in simple:
        return simple[name]
    if name == "repeat":
        assert arg is not None
        piece, _, count = arg.rpartition(":")
        return piece * int(count)
    assert arg is not None, name
    if name == "tg_card":
        return str(telegram.signer.data(arg, seeded.proposal))
    if name == "line_card":
        return str(line.signer.data(arg, seeded.proposal))
    if name == "tg_card_other":
        # A genuine signature, made for the next proposal, on this proposal's data.
        other = str(telegram.signer.data(arg, seeded.proposal + 1))
        code, _, signature = other.split(":")
        return f"{code}:{seeded.proposal}:{signature}"
    raise KeyError(f"unknown placeholder {name!r}")


def _text(spec: dict[str, Any]) -> str:
    if "repeat" in spec:
        piece, count = spec["repeat"]
        return str(piece) * int(count)
    return str(spec.get("text", ""))


def telegram_update(spec: dict[str, Any], seeded: Seeded) -> dict[str, Any]:
    """A Bot API update from the corpus's shorthand."""
    update_id = next(_update_ids)
    user = int(spec.get("user", ALICE))
    if spec["kind"] == "callback":
        data = _text({"text": spec.get("data", ""), **spec})
        return make_callback_update(
            update_id, data, chat_id=ALICE, user_id=user, message_id=seeded.tg_message_id
        )
    chat = int(spec.get("chat", user))
    chat_type = str(spec.get("chat_type", "private"))
    update = make_text_update(
        update_id, _text(spec), chat_id=chat, user_id=user, chat_type=chat_type
    )
    if spec.get("from_bot"):
        update["message"]["from"]["is_bot"] = True
    if "as" in spec:
        update[spec["as"]] = update.pop("message")
    return update


def line_event(spec: dict[str, Any], rig: Rig) -> dict[str, Any]:
    """A LINE webhook event from the corpus's shorthand; `user` is admin or other (default)."""
    user = LINE_ADMIN if spec.get("user") == "admin" else LINE_OTHER
    token = rig.line.issue_reply_token(to=user)
    if spec["kind"] == "text":
        event = text_event(_text(spec), user_id=user, reply_token=token)
    elif spec["kind"] == "postback":
        data = spec.get("data") or str(spec["data_format"]).format(_text(spec))
        event = postback_event(data, user_id=user, reply_token=token)
    else:
        event = unknown_event(user_id=user)
    event.update(spec.get("fields", {}))
    for name in spec.get("drop", []):
        event.pop(name, None)
    return event


def _telegram_message_body(text_json: str) -> bytes:
    return (
        b'{"update_id": %d, "message": {"message_id": 1, "date": 1,'
        b' "chat": {"id": 1001, "type": "private"},'
        b' "from": {"id": 1001, "is_bot": false, "first_name": "A"}, "text": %s}}'
    ) % (next(_update_ids), text_json.encode())


def _line_surrogate() -> bytes:
    event = text_event("placeholder")
    event["message"]["text"] = "half an emoji: \ud83d"
    return json.dumps({"destination": "x", "events": [event]}).encode()  # ensure_ascii escapes it


def _nested(kind: str, depth: int) -> bytes:
    inner = b"[" * depth + b"]" * depth
    if kind == "telegram":
        return b'{"update_id": %d, "x": %s}' % (next(_update_ids), inner)
    if kind == "line":
        return b'{"destination": "x", "events": [], "x": %s}' % inner
    return b'{"reason": %s}' % inner


@dataclass
class Chunked:
    """A body sent without Content-Length, in chunks: its size is known only by reading it."""

    data: bytes

    async def stream(self) -> AsyncIterator[bytes]:
        for start in range(0, len(self.data), 64 * 1024):
            yield self.data[start : start + 64 * 1024]
            await asyncio.sleep(0)


GENERATORS: dict[str, Callable[[], Any]] = {
    "deep_nesting": lambda: b"[" * 100_000 + b"]" * 100_000,
    "invalid_utf8": lambda: b'{"update_id": 1, "events": [], "x": "\xff\xfe\xc0\xaf"}',
    "telegram_lone_surrogate": lambda: _telegram_message_body('"half an emoji: \\ud83d"'),
    "line_lone_surrogate": _line_surrogate,
    "huge_telegram": lambda: b'{"update_id": 1, "pad": "' + b"x" * (2 * MIB) + b'"}',
    "huge_line": lambda: b'{"destination": "x", "events": [], "pad": "' + b"x" * (2 * MIB) + b'"}',
    "huge_telegram_chunked": lambda: Chunked(b'{"update_id": 1, "pad": "' + b"x" * (2 * MIB)),
    "huge_line_chunked": lambda: Chunked(b'{"destination": "x", "pad": "' + b"x" * (2 * MIB)),
    # Nested just short of the parser's limit: it parses, and recursive code after it fails.
    **{
        f"{kind}_nested_{depth}": partial(_nested, kind, depth)
        for kind in ("telegram", "line", "reason")
        for depth in (979, 980, 981)
    },
}


def body_of(case: dict[str, Any], make: Callable[[], Any]) -> Any:
    """The request body: built, given as JSON or raw text, or generated."""
    if "generator" in case:
        return GENERATORS[case["generator"]]()
    if "json" in case:
        return json.dumps(case["json"]).encode()
    if "raw" in case:
        return str(case["raw"]).encode()
    return make()


@dataclass
class Request:
    """One HTTP request, ready to send; `raw_headers` need a hand-written request."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any = None
    raw_headers: dict[str, bytes] | None = None


def build(case: dict[str, Any], rig: Rig, seeded: Seeded) -> Request:
    """The request a case describes (a fresh one per call: new update and event ids)."""
    case = copy.deepcopy(case)
    route = case["route"]
    headers = {"Content-Type": case.get("content_type", "application/json")}
    headers.update(case.get("headers", {}))
    raw_headers: dict[str, bytes] | None = None
    if route == "telegram":
        body = body_of(case, lambda: json.dumps(telegram_update(case["update"], seeded)).encode())
        secret = case.get("secret", "valid")
        if "secret_bytes" in case:
            raw_headers = {
                "X-Telegram-Bot-Api-Secret-Token": case["secret_bytes"].encode("latin-1")
            }
        elif secret != "missing":
            headers["X-Telegram-Bot-Api-Secret-Token"] = TG_SECRET if secret == "valid" else secret
        return Request("POST", "/webhook/telegram", headers, _sendable(body), raw_headers)
    if route == "line":
        body = body_of(case, lambda: webhook_body(*(line_event(e, rig) for e in case["events"])))
        signature = case.get("signature", "valid")
        if "signature_bytes" in case:
            raw_headers = {"X-Line-Signature": case["signature_bytes"].encode("latin-1")}
        elif signature == "valid":
            headers["X-Line-Signature"] = sign(LINE_SECRET, _bytes(body))
        elif signature == "other":
            headers["X-Line-Signature"] = sign(LINE_SECRET, _bytes(body) + b" ")
        elif signature != "missing":
            headers["X-Line-Signature"] = signature
        return Request("POST", "/webhook/line", headers, _sendable(body), raw_headers)
    token = case.get("token", "valid")
    if route == "api" and token != "missing":
        headers["Authorization"] = f"Bearer {TOKEN if token == 'valid' else token}"
    body = None
    if "form" in case:
        headers["Content-Type"] = "application/x-www-form-urlencoded"
        body = "&".join(f"{k}={v}" for k, v in case["form"].items()).encode()
    elif "json" in case or "raw" in case or "generator" in case:
        body = body_of(case, lambda: b"")
    if "header_bytes" in case:
        raw_headers = {k: str(v).encode("latin-1") for k, v in case["header_bytes"].items()}
    return Request(case.get("method", "GET"), case["path"], headers, body, raw_headers)


def _bytes(body: Any) -> bytes:
    return body.data if isinstance(body, Chunked) else bytes(body)


def _sendable(body: Any) -> Any:
    return body.stream() if isinstance(body, Chunked) else body


def replayed(request: Request, redelivery: bool) -> Request:
    """The same request again; as LINE redelivers it when `redelivery` (same event id)."""
    if not redelivery:
        return request
    payload = json.loads(request.body)
    for event in payload["events"]:
        event["deliveryContext"] = {"isRedelivery": True}
    body = json.dumps(payload).encode()
    headers = {**request.headers, "X-Line-Signature": sign(LINE_SECRET, body)}
    return Request(request.method, request.path, headers, body)


async def send_raw(host: str, port: int, request: Request) -> int:
    """Send a request whose header bytes aiohttp's client would not send; its status."""
    body = request.body if isinstance(request.body, bytes) else b""
    lines = [f"{request.method} {request.path} HTTP/1.1".encode(), b"Host: 127.0.0.1"]
    for name, value in request.headers.items():
        lines.append(f"{name}: {value}".encode())
    for name, raw in (request.raw_headers or {}).items():
        lines.append(name.encode() + b": " + raw)
    lines += [f"Content-Length: {len(body)}".encode(), b"Connection: close", b"", b""]
    reader, writer = await asyncio.open_connection(host, port)
    try:
        writer.write(b"\r\n".join(lines) + body)
        await writer.drain()
        status_line = await reader.readline()
    finally:
        writer.close()
    return int(status_line.split()[1])
