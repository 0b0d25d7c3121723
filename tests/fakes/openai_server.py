"""A recording fake of an OpenAI-compatible server (chat, embeddings, models) on loopback.

The real `openai` client is pointed at `fake.base_url`. Answers are scripted
in order with `reply`, `tool_call`, `error`, `stall` and `raw` (any body a real
server was seen to send, for the odd shapes); when the script is
empty, `default` (a function of the request body) answers. A request with
`stream: true` is answered as a real server does, with server-sent chunks: a
word of content per chunk (`chunk_interval` seconds apart), each tool call's
name then its arguments in two halves, the finish reason, then the usage when
`stream_options.include_usage` asks for it; `raw` bodies are sent whole (a
server that ignores `stream`), `raw_stream` sends exactly the bytes given, piece by
piece (the event-stream framings servers use), and `refuse_stream_options` answers 400
to a request that carries them, as some servers do; `gzip_streams` compresses the
streamed answers, as some proxies do. Each chat request's headers are
kept in `headers`, the client's address and port in `peers`. `/v1/embeddings` answers with
`fake_embedding`: a hashed bag of normalised words in which a few synonyms share a
word, so paraphrases land close, as a real embedding model's do. `pause()` holds
every answer until `resume()`, to keep a call in flight. With `upstream` set
(a real server's /v1 URL), unscripted requests are passed on to it and its
answers recorded in `forwarded`: a recording proxy in front of a real model.

`/v1/audio/transcriptions` speaks OpenAI's multipart audio API: each upload is recorded in
`transcriptions` (model, file name, type, bytes) and answered with the next of `transcripts`
(or `{"error": ...}` with `transcription_status`). With `see_images = False` the model
refuses any request with image parts, as a text-only model's server does.

The gateway's same-claim question ("does this candidate repeat one of these known claims?")
is answered by `judge`, never from the script, and recorded in `same_claim_requests`
rather than `requests`, so a test scripts its synthesis answers without counting checks.
The default judge, `judge_by_words`, names the known claim sharing most of the new one's
words, names aside (a cosine of word sets of 0.6 or more), else none.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import io
import itertools
import json
import math
import re
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from aiohttp import web

from gateway.core.fence import normalise as fenced_text
from gateway.synthesis import comparison
from gateway.synthesis import judge as same_claim
from gateway.synthesis.calibration import Pair, Text, builtin_pairs


@dataclass
class Scripted:
    """One scripted answer."""

    text: str | None = None
    tool_calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    status: int = 200
    delay: float = 0.0
    message: str | None = None
    body: Any = None
    finish_reason: str | None = None
    # Streamed: after this many content chunks, go quiet for `quiet` seconds.
    quiet_after: int | None = None
    quiet: float = 0.0
    # Streamed: after this many content chunks, wait for `release()` (a slow model, on cue).
    hold_after: int | None = None
    # Streamed: after the content, an error object instead of the finish (as servers do).
    stream_error: str | None = None
    # Streamed: exactly these bytes, each piece written (and flushed) on its own.
    sse: list[bytes] | None = None
    # Streamed: after the pieces, the connection is cut instead of the body ending.
    cut: bool = False
    # Streamed: this piece again and again, every `flood_interval` seconds, whatever
    # `max_tokens` says, until the client hangs up (`FakeOpenAI.flooded` counts the bytes).
    flood: str | None = None
    flood_interval: float = 0.0
    # Streamed: these raw bytes after the first chunk, then the end (not UTF-8, say).
    raw_chunk: bytes | None = None


MAX_CHUNKS = 2000
Responder = Callable[[dict[str, Any]], "Scripted | str"]

EMBEDDING_DIMENSIONS = 256
_SYNONYMS = {
    word: concept
    for concept, words in {
        "credential": "password passwords secret secrets passcode pin credential credentials",
        "account": "account accounts login log sign signin username",
        "identity": "identity verify verification verified confirm confirms prove proves"
        " authenticate authentication who",
        "friendly": "friendly warm engaging conversational chatty lively",
        "tone": "tone style voice manner",
        "short": "short brief concise shorter terse",
        "answer": "answer answers answering reply replies replying respond response",
    }.items()
    for word in words.split()
}
_STOP_WORDS = frozenset(
    "a an and are as at be before by do for from how i in is it make of on or sure that the"
    " their them they this to use user users when with you your every any".split()
)


def fake_embedding(text: str, dimensions: int = EMBEDDING_DIMENSIONS) -> list[float]:
    """A deterministic unit vector: each word (synonyms as one) hashed into a dimension."""
    vector = [0.0] * dimensions
    for word in re.findall(r"[a-z]+", text.lower()):
        if word in _STOP_WORDS:
            continue
        word = _SYNONYMS.get(word, word)
        digest = hashlib.sha256(word.encode()).digest()
        vector[int.from_bytes(digest[:4], "big") % dimensions] += 1.0
    norm = math.sqrt(sum(x * x for x in vector)) or 1.0
    return [x / norm for x in vector]


_FENCED = re.compile(r"<(untrusted-chat-[0-9a-f]+)>\n(.*?)\n</\1>", re.DOTALL)
_WORD = re.compile(r"\w+", re.UNICODE)


def claims_asked(body: dict[str, Any]) -> tuple[list[str], str]:
    """The known claims' texts (numbered from 1 in the question) and the new one's.

    Each text starts with a line naming its skill.
    """
    texts = [t for _, t in _FENCED.findall(str(body["messages"][-1]["content"]))]
    return texts[:-1], texts[-1]


def same_claim_answer(same_as: int, why: str = "scripted") -> str:
    """A same-claim answer in the gateway's contract."""
    return json.dumps({"same_as": same_as, "why": why})


def judge_by_words(body: dict[str, Any]) -> str:
    """The known claim sharing most words with the new one, at a cosine of 0.6 or more."""
    known, new = claims_asked(body)
    words = set(_WORD.findall(new.partition("\n")[2].lower()))  # names are only labels
    best, score = 0, 0.6
    for i, text in enumerate(known, 1):
        other = set(_WORD.findall(text.partition("\n")[2].lower()))
        cos = len(words & other) / math.sqrt(len(words) * len(other)) if words and other else 0.0
        if cos >= score:
            best, score = i, cos
    return same_claim_answer(best, "they share most words" if best else "different words")


def calibration_truth(pairs: list[Pair]) -> dict[tuple[str, str], bool]:
    """The right answer to each calibration question, by the texts shown (known, new)."""

    def text(side: Text) -> str:  # as the fence shows it
        return fenced_text(same_claim.shown_text(same_claim.pair_claim(side)))

    return {(text(p.known), text(p.new)): p.same for p in pairs}


_BUILTIN_TRUTH = calibration_truth(builtin_pairs())


def calibrated(judge: Responder, truth: dict[tuple[str, str], bool] = _BUILTIN_TRUTH) -> Responder:
    """`judge`, answering the calibration questions right: a judge able to judge."""

    def answer(body: dict[str, Any]) -> Scripted | str:
        known, new = claims_asked(body)
        if len(known) == 1 and (known[0], new) in truth:
            same = truth[(known[0], new)]
            return same_claim_answer(1 if same else 0, "calibration")
        return judge(body)

    return answer


def calibration_asked(body: dict[str, Any]) -> bool:
    """Whether a same-claim question is one of the built-in calibration set's."""
    known, new = claims_asked(body)
    return len(known) == 1 and (known[0], new) in _BUILTIN_TRUTH


def compared(body: dict[str, Any]) -> tuple[str, str, str]:
    """The user's message and the two answers of a trial's comparison, as fenced (1, 2)."""
    texts = [t for _, t in _FENCED.findall(str(body["messages"][-1]["content"]))]
    return texts[0], texts[-2], texts[-1]


def comparison_answer(better: int, why: str = "scripted") -> str:
    """A comparison answer in the gateway's contract (1, 2, or 0 for the same)."""
    return json.dumps({"better": better, "why": why})


def mark_of(answer: str) -> int:
    """How a scripted trial answer scores: BETTER 1, WORSE -1, anything else 0."""
    return 1 if "BETTER" in answer else -1 if "WORSE" in answer else 0


_TRIAL_TRUTH = {
    (fenced_text(p.question), fenced_text(p.before), fenced_text(p.after)): p.better
    for p in comparison.builtin_compare_pairs()
}


def judge_by_marks(body: dict[str, Any]) -> Scripted | str:
    """The trial judge: the built-in calibration pairs answered right; otherwise the answer
    marked BETTER (or not marked WORSE) wins, and two alike are the same."""
    question, first, second = compared(body)
    for (asked, before, after), better in _TRIAL_TRUTH.items():
        if asked == question and {before, after} == {first, second}:
            new = 1 if first == after else 2
            return comparison_answer(new if better else 3 - new, "calibration")
    a, b = mark_of(first), mark_of(second)
    return comparison_answer(0 if a == b else 1 if a > b else 2, "by the marks")


class FakeOpenAI:
    """Serves /v1/chat/completions and /v1/models; records every request body."""

    def __init__(
        self, models: tuple[str, ...] = ("fake-model",), upstream: str | None = None
    ) -> None:
        self.models = list(models)
        self.upstream = upstream
        self.forwarded: list[tuple[int, Any]] = []
        # Forwarded requests ask for at most this many tokens (a small CPU is slow).
        self.max_tokens_cap: int | None = None
        # Extra fields of every /v1/models entry (context sizes, as servers report them).
        self.model_fields: dict[str, Any] = {}
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.peers: list[Any] = []
        self.embedding_requests: list[dict[str, Any]] = []
        self.embedding_status = 200
        self.script: deque[Scripted] = deque()
        self.default: Responder = lambda body: "Hello from the fake model."
        self.judge: Responder = calibrated(judge_by_words)
        self.same_claim_requests: list[dict[str, Any]] = []
        self.trial_judge: Responder = judge_by_marks
        """Answers a trial's comparison question (never from the script)."""
        self.trial_requests: list[dict[str, Any]] = []
        self.transcriptions: list[dict[str, Any]] = []
        self.transcripts: deque[str] = deque()
        self.transcription_status = 200
        self.speeches: list[dict[str, Any]] = []
        """Every /audio/speech request body, as JSON."""
        self.speech_status = 200
        self.speech_answer: Literal["asked", "wav", "empty", "flood", "stall", "junk"] = "asked"
        """How /audio/speech answers: audio in the format asked (`asked`); WAV whatever was
        asked (a server that ignores `response_format`); nothing; audio without end until the
        client hangs up; nothing for a minute; bytes that are not audio."""
        self.speech_streamed = 0
        """Bytes written by `flood` answers."""
        self.generations: list[dict[str, Any]] = []
        """Every /images/generations request body, as JSON."""
        self.image_status = 200
        """Not 200: /images/generations refuses with OpenAI's error body (its words)."""
        self.image_answer: Literal["png", "empty", "flood", "junk"] = "png"
        """How /images/generations answers: a real PNG as b64_json; `data` empty; a body
        without end until the client hangs up; base64 of bytes that are not an image."""
        self.image_streamed = 0
        """Bytes written by `flood` answers."""
        self.see_images = True
        self.image_refusal = "image input is not supported by this model"
        self._ids = itertools.count(1)
        self.chunk_interval = 0.0
        self.flooded = 0
        """Content characters streamed by `flood` answers."""
        self.refuse_stream_options = False
        self.gzip_streams = False
        """Streamed answers sent gzip-compressed (`Content-Encoding: gzip`), as some proxies do."""
        self.first_chunks: list[tuple[float, str]] = []
        """When each streamed answer's first content chunk was written (monotonic), and the
        last message of the request it answered."""
        self._runner: web.AppRunner | None = None
        self._cond = asyncio.Condition()
        self._open = asyncio.Event()
        self._open.set()
        self._released = asyncio.Event()
        self._closing = asyncio.Event()
        self.base_url = ""

    async def start(self) -> FakeOpenAI:
        self._closing.clear()
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._completions)
        app.router.add_post("/v1/embeddings", self._embeddings)
        app.router.add_get("/v1/models", self._models)
        app.router.add_post("/v1/audio/transcriptions", self._transcribe)
        app.router.add_post("/v1/audio/speech", self._speech)
        app.router.add_post("/v1/images/generations", self._images)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.base_url = f"http://127.0.0.1:{port}/v1"
        return self

    async def close(self) -> None:
        self._closing.set()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> FakeOpenAI:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def reply(self, text: str) -> None:
        """Next answer: plain text."""
        self.script.append(Scripted(text=text))

    def tool_call(self, tool: str, /, **arguments: Any) -> None:
        """Next answer: a single tool call."""
        self.script.append(Scripted(tool_calls=[(tool, arguments)]))

    def error(self, status: int, times: int = 1, message: str | None = None) -> None:
        """Next `times` answers: HTTP errors, with the server's `message` when given."""
        for _ in range(times):
            self.script.append(Scripted(status=status, message=message))

    def raw(self, body: Any, status: int = 200) -> None:
        """Next answer: exactly this body (a dict is sent as JSON, a str as it is)."""
        self.script.append(Scripted(status=status, body=body))

    def raw_stream(self, *pieces: bytes, cut: bool = False) -> None:
        """Next answer: an event stream of exactly these bytes, each piece sent on its own
        (then, with `cut`, the connection dropped mid-body)."""
        self.script.append(Scripted(sse=list(pieces), cut=cut))

    def reply_message(self, message: dict[str, Any], finish_reason: str = "stop") -> None:
        """Next answer: a 200 whose choice carries exactly this `message` object."""
        self.script.append(Scripted(body={"message": message}, finish_reason=finish_reason))

    def cut(self, text: str, finish_reason: str = "length") -> None:
        """Next answer: text that ended for `finish_reason` (length, content_filter)."""
        self.script.append(Scripted(text=text, finish_reason=finish_reason))

    def stall(self, seconds: float, times: int = 1) -> None:
        """Next `times` answers arrive only after `seconds` (to trigger client timeouts)."""
        for _ in range(times):
            self.script.append(Scripted(text="too late", delay=seconds))

    def go_quiet(self, text: str, after: int, seconds: float) -> None:
        """Next answer, streamed: `after` words of `text`, then nothing for `seconds`."""
        self.script.append(Scripted(text=text, quiet_after=after, quiet=seconds))

    def hold_mid_stream(self, text: str, after: int) -> None:
        """Next answer, streamed: `after` words of `text`, the rest only after `release()`."""
        self._released.clear()
        self.script.append(Scripted(text=text, hold_after=after))

    def release(self) -> None:
        self._released.set()

    def fail_mid_stream(self, text: str, message: str) -> None:
        """Next answer, streamed: the words of `text`, then an error chunk with `message`."""
        self.script.append(Scripted(text=text, stream_error=message))

    def flood(self, piece: str, interval: float = 0.0) -> None:
        """Next answer, streamed without end: `piece` after `piece`, until the client hangs up."""
        self.script.append(Scripted(text="", flood=piece, flood_interval=interval))

    def garble(self, raw: bytes) -> None:
        """Next answer, streamed: a first chunk, then `raw` as it is (bytes that are not UTF-8)."""
        self.script.append(Scripted(text="", raw_chunk=raw))

    def pause(self) -> None:
        """Hold every answer (requests are still recorded) until `resume()`."""
        self._open.clear()

    def resume(self) -> None:
        self._open.set()

    async def wait_for_requests(self, count: int, timeout: float = 5.0) -> None:
        """Wait until `count` completion requests arrived."""
        async with self._cond:
            await asyncio.wait_for(
                self._cond.wait_for(lambda: len(self.requests) >= count), timeout
            )

    async def _transcribe(self, request: web.Request) -> web.Response:
        """POST /v1/audio/transcriptions: multipart `file` and `model`, as OpenAI's API takes."""
        form = await request.post()
        upload = form.get("file")
        if not isinstance(upload, web.FileField) or not isinstance(form.get("model"), str):
            return web.json_response(
                {"error": {"message": "file and model are required", "type": "invalid_request"}},
                status=400,
            )
        self.transcriptions.append(
            {
                "model": form["model"],
                "filename": upload.filename,
                "content_type": upload.content_type,
                "data": upload.file.read(),
            }
        )
        if self.transcription_status != 200:
            return web.json_response(
                {"error": {"message": "the speech model is down", "type": "server_error"}},
                status=self.transcription_status,
            )
        text = self.transcripts.popleft() if self.transcripts else "Transcribed words."
        return web.json_response({"text": text})

    async def _images(self, request: web.Request) -> web.StreamResponse:
        """POST /v1/images/generations: JSON `prompt` (required), `model`, `n`, `size`,
        `response_format` (`url` or `b64_json`), as OpenAI's API takes; `{"created", "data":
        [{"b64_json", "revised_prompt"}]}` back. A `url` answer is refused here: the fake
        serves no files."""
        body = await request.json()
        self.generations.append(body)
        problem = None
        if not isinstance(body.get("prompt"), str) or not body["prompt"]:
            problem = "prompt is required"
        elif body.get("response_format", "url") != "b64_json":
            problem = "this server answers response_format b64_json only"
        elif body.get("n", 1) != 1:
            problem = "n must be 1"
        if problem is not None:
            return web.json_response(
                {"error": {"message": problem, "type": "invalid_request_error"}}, status=400
            )
        if self.image_status != 200:
            return web.json_response(
                {"error": {"message": "billing hard limit reached", "type": "billing_error"}},
                status=self.image_status,
            )
        answer = self.image_answer
        if answer == "flood":
            response = web.StreamResponse(headers={"Content-Type": "application/json"})
            await response.prepare(request)
            piece = b"A" * 65536
            with contextlib.suppress(ConnectionError):
                await response.write(b'{"created": 1, "data": [{"b64_json": "')
                while True:
                    await response.write(piece)
                    self.image_streamed += len(piece)
                    await asyncio.sleep(0)
            return response
        if answer == "empty":
            return web.json_response({"created": int(time.time()), "data": []})
        data = b"not a picture at all" * 10 if answer == "junk" else drawn_png(body["prompt"])
        item = {"b64_json": base64.b64encode(data).decode(), "revised_prompt": body["prompt"]}
        return web.json_response({"created": int(time.time()), "data": [item]})

    async def _speech(self, request: web.Request) -> web.StreamResponse:
        """POST /v1/audio/speech: JSON `model`, `input`, `voice`, `response_format` (mp3 by
        default), as OpenAI's API takes; the audio's bytes back, streamed (chunked)."""
        body = await request.json()
        self.speeches.append(body)
        problem = None
        fmt = body.get("response_format", "mp3")
        if not all(isinstance(body.get(k), str) and body[k] for k in ("model", "input", "voice")):
            problem = "model, input and voice are required"
        elif len(body["input"]) > SPEECH_MAX_INPUT:
            problem = f"input is longer than {SPEECH_MAX_INPUT} characters"
        elif fmt not in SPEECH_FORMATS:
            problem = f"response_format must be one of {', '.join(SPEECH_FORMATS)}"
        if problem is not None:
            return web.json_response(
                {"error": {"message": problem, "type": "invalid_request_error"}}, status=400
            )
        if self.speech_status != 200:
            return web.json_response(
                {"error": {"message": "the voice model is down", "type": "server_error"}},
                status=self.speech_status,
            )
        seconds = max(0.5, len(body["input"]) * SECONDS_PER_CHAR)
        answer = self.speech_answer
        if answer == "wav":
            fmt = "wav"
        response = web.StreamResponse(headers={"Content-Type": SPEECH_FORMATS[fmt]})
        await response.prepare(request)
        if answer == "stall":
            await self._closing.wait()  # until the client hangs up or the fake closes
        elif answer == "flood":
            piece = b"\0" * 65536
            with contextlib.suppress(ConnectionError):
                while True:
                    await response.write(piece)
                    self.speech_streamed += len(piece)
                    await asyncio.sleep(0)
        elif answer == "junk":
            await response.write(b"this is not audio at all " * 40)
        elif answer != "empty":
            audio = await asyncio.to_thread(spoken_audio, seconds, fmt)
            for start in range(0, len(audio), 4096):
                await response.write(audio[start : start + 4096])
        await response.write_eof()
        return response

    @staticmethod
    def image_parts(body: dict[str, Any]) -> list[str]:
        """The image URLs of a recorded request's messages."""
        return [
            part["image_url"]["url"]
            for message in body.get("messages", [])
            if isinstance(message.get("content"), list)
            for part in message["content"]
            if part.get("type") == "image_url"
        ]

    async def _completions(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        system = (body.get("messages") or [{}])[0].get("content")
        asking = system == same_claim.SYSTEM
        comparing = system == comparison.SYSTEM
        self.headers.append(dict(request.headers))
        self.peers.append(
            request.transport.get_extra_info("peername") if request.transport else None
        )
        async with self._cond:
            if comparing:
                self.trial_requests.append(body)
            else:
                (self.same_claim_requests if asking else self.requests).append(body)
            self._cond.notify_all()
        await self._open.wait()
        if not self.see_images and self.image_parts(body):
            return web.json_response(
                {"error": {"message": self.image_refusal, "type": "invalid_request_error"}},
                status=400,
            )
        if not self.script and self.upstream is not None:
            return await self._forward("/chat/completions", body, request)
        if asking:
            step = self.judge(body)
        elif comparing:
            step = self.trial_judge(body)
        else:
            step = self.script.popleft() if self.script else self.default(body)
        if isinstance(step, str):
            step = Scripted(text=step)
        if step.delay:
            await asyncio.sleep(step.delay)
        if step.sse is not None:
            response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
            await response.prepare(request)
            for piece in step.sse:
                await response.write(piece)
                await asyncio.sleep(0.001)  # each piece in its own read, as a network splits it
            if step.cut and request.transport is not None:
                request.transport.abort()
            else:
                await response.write_eof()
            return response
        if step.body is not None and not (isinstance(step.body, dict) and "message" in step.body):
            if isinstance(step.body, str):
                return web.Response(text=step.body, status=step.status)
            return web.json_response(step.body, status=step.status)
        if body.get("stream") and body.get("stream_options") and self.refuse_stream_options:
            step = Scripted(status=400, message="Unrecognized request argument: stream_options")
        if step.status != 200:
            text = step.message or f"scripted {step.status}"
            return web.json_response(
                {"error": {"message": text, "type": "server_error"}},
                status=step.status,
                headers={"retry-after-ms": "1"},
            )
        message: dict[str, Any] = {"role": "assistant", "content": step.text}
        if step.body is not None:
            message = step.body["message"]
        if step.tool_calls:
            message["content"] = None
            message["tool_calls"] = [
                {
                    "id": f"call_{next(self._ids)}",
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(args)},
                }
                for name, args in step.tool_calls
            ]
        prompt_chars = sum(len(str(m.get("content") or "")) for m in body.get("messages", []))
        usage = {
            "prompt_tokens": prompt_chars // 4,
            "completion_tokens": len(step.text or "") // 4,
            "total_tokens": prompt_chars // 4 + len(step.text or "") // 4,
        }
        finish = step.finish_reason or ("tool_calls" if step.tool_calls else "stop")
        if body.get("stream"):
            options = body.get("stream_options") or {}
            try:
                return await self._stream(request, body, step, message, finish, usage, options)
            except ConnectionResetError:  # the client gave up (its timeout): as a server sees it
                return web.Response(status=499)
        return web.json_response(
            {
                "id": f"chatcmpl-{next(self._ids)}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model", "fake-model"),
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": usage,
            }
        )

    async def _embeddings(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.embedding_requests.append(body)
        if self.upstream is not None:
            return await self._forward("/embeddings", body)
        if self.embedding_status != 200:
            error = {"message": "embeddings are not available", "type": "invalid_request_error"}
            return web.json_response({"error": error}, status=self.embedding_status)
        inputs = body.get("input")
        texts = [inputs] if isinstance(inputs, str) else list(inputs or [])
        data = [
            {"object": "embedding", "index": i, "embedding": fake_embedding(str(t))}
            for i, t in enumerate(texts)
        ]
        tokens = sum(len(str(t)) // 4 for t in texts)
        return web.json_response(
            {
                "object": "list",
                "model": body.get("model"),
                "data": data,
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            }
        )

    async def _stream(
        self,
        request: web.Request,
        body: dict[str, Any],
        step: Scripted,
        message: dict[str, Any],
        finish: str,
        usage: dict[str, Any],
        options: dict[str, Any],
    ) -> web.StreamResponse:
        """The answer as server-sent chunks, the way OpenAI-compatible servers stream."""
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        if self.gzip_streams:
            response.enable_compression(web.ContentCoding.gzip)
        await response.prepare(request)
        base = {
            "id": f"chatcmpl-{next(self._ids)}",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": body.get("model", "fake-model"),
        }

        async def send(delta: dict[str, Any], finish_reason: str | None = None) -> None:
            choice = {"index": 0, "delta": delta, "finish_reason": finish_reason}
            await response.write(f"data: {json.dumps(base | {'choices': [choice]})}\n\n".encode())

        await send({"role": "assistant", "content": ""})
        if step.raw_chunk is not None:
            await response.write(step.raw_chunk)
            await response.write(b"data: [DONE]\n\n")
            await response.write_eof()
            return response
        if step.flood is not None:
            try:
                while self.flooded < 1 << 30:  # the fake's own bound
                    await send({"content": step.flood})
                    self.flooded += len(step.flood)
                    await asyncio.sleep(step.flood_interval)
            except (ConnectionError, RuntimeError):
                pass  # the client hung up
            return response
        rest = {k: v for k, v in message.items() if k not in ("role", "content", "tool_calls")}
        if rest:  # reasoning, a legacy function_call: in one delta, as servers send them
            await send(rest)
        content = message.get("content")
        words = re.findall(r"\s*\S+\s*", content) if isinstance(content, str) else []
        if len(words) > MAX_CHUNKS:  # a huge answer in fewer, bigger chunks, to stay quick
            size = -(-len(words) // MAX_CHUNKS)
            words = ["".join(words[i : i + size]) for i in range(0, len(words), size)]
        if content and not words:
            await send({"content": content})  # content parts, in one delta
        for n, word in enumerate(words):
            if n and self.chunk_interval:
                await asyncio.sleep(self.chunk_interval)
            if step.quiet_after is not None and n == step.quiet_after:
                await asyncio.sleep(step.quiet)
            if step.hold_after is not None and n == step.hold_after:
                await self._released.wait()
            await send({"content": word})
            if n == 0:
                last = (body.get("messages") or [{}])[-1].get("content")
                self.first_chunks.append((time.monotonic(), str(last)))
        for index, call in enumerate(message.get("tool_calls") or []):
            function = dict(call.get("function") or {})
            arguments = function.pop("arguments", "")
            head = {k: v for k, v in call.items() if k != "function"}
            await send({"tool_calls": [{"index": index, **head, "function": function}]})
            if isinstance(arguments, str):
                half = len(arguments) // 2
                for piece in (arguments[:half], arguments[half:]):
                    await send({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
            else:
                await send({"tool_calls": [{"index": index, "function": {"arguments": arguments}}]})
        if step.stream_error is not None:
            error = {"error": {"message": step.stream_error, "type": "server_error"}}
            await response.write(f"data: {json.dumps(error)}\n\n".encode())
            await response.write_eof()
            return response
        await send({}, finish)
        if options.get("include_usage"):
            await response.write(
                f"data: {json.dumps(base | {'choices': [], 'usage': usage})}\n\n".encode()
            )
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response

    async def _forward(
        self, path: str, body: dict[str, Any] | None, request: web.Request | None = None
    ) -> web.StreamResponse:
        """Pass a request on to the real server; record and return its answer as it is.

        A streamed answer is passed on chunk by chunk as it comes (and recorded whole).
        """
        import aiohttp

        if body is not None and self.max_tokens_cap is not None:
            body = body | {"max_tokens": min(body.get("max_tokens", 1 << 30), self.max_tokens_cap)}
        async with aiohttp.ClientSession() as session:
            method = session.post if body is not None else session.get
            async with method(f"{self.upstream}{path}", json=body) as resp:
                kind = resp.headers.get("Content-Type", "")
                if request is not None and resp.status == 200 and "event-stream" in kind:
                    out = web.StreamResponse(headers={"Content-Type": kind})
                    await out.prepare(request)
                    pieces = []
                    try:
                        async for piece in resp.content.iter_any():
                            pieces.append(piece)
                            await out.write(piece)
                        await out.write_eof()
                    except ConnectionResetError:
                        pass  # the client may hang up as soon as it has read `[DONE]`
                    finally:
                        self.forwarded.append((200, _read_stream(b"".join(pieces))))
                    return out
                text = await resp.text()
                status = resp.status
        try:
            decoded: Any = json.loads(text)
        except json.JSONDecodeError:
            decoded = text
        self.forwarded.append((status, decoded))
        return web.Response(text=text, status=status, content_type="application/json")

    async def _models(self, request: web.Request) -> web.StreamResponse:
        if self.upstream is not None:
            return await self._forward("/models", None)
        return web.json_response(
            {
                "object": "list",
                "data": [
                    {"id": m, "object": "model", "created": 0, "owned_by": "fake"}
                    | self.model_fields
                    for m in self.models
                ],
            }
        )

    def system_prompt(self, index: int = -1) -> str:
        """The system message of a recorded request."""
        return str(self.requests[index]["messages"][0]["content"])


SPEECH_MAX_INPUT = 4096
SPEECH_FORMATS = {
    "mp3": "audio/mpeg",
    "opus": "audio/ogg",
    "aac": "audio/aac",
    "flac": "audio/flac",
    "wav": "audio/wav",
    "pcm": "audio/pcm",
}
"""`response_format`s OpenAI's /audio/speech takes, with the Content-Type it answers."""
SECONDS_PER_CHAR = 0.06
"""How long the fake speaks each character of its input."""
SPEECH_RATE = 24000
"""The sample rate of the fake's speech (OpenAI's and Kokoro's)."""


def drawn_png(prompt: str) -> bytes:
    """A small real PNG (64x64) whose colour follows the prompt."""
    from PIL import Image

    shade = sum(prompt.encode()) % 256
    out = io.BytesIO()
    Image.new("RGB", (64, 64), (shade, 128, 255 - shade)).save(out, format="PNG")
    return out.getvalue()


def spoken_audio(seconds: float, fmt: str) -> bytes:
    """A real recording of `seconds` (a quiet tone) as libsndfile writes `fmt`."""
    import numpy
    import soundfile

    frames = int(seconds * SPEECH_RATE)
    tone = 0.1 * numpy.sin(numpy.arange(frames) * (2 * numpy.pi * 220 / SPEECH_RATE))
    out = io.BytesIO()
    if fmt == "opus":
        soundfile.write(out, tone, SPEECH_RATE, format="OGG", subtype="OPUS")
    elif fmt == "mp3":
        soundfile.write(out, tone, SPEECH_RATE, format="MP3", subtype="MPEG_LAYER_III")
    elif fmt == "flac":
        soundfile.write(out, tone, SPEECH_RATE, format="FLAC")
    else:
        soundfile.write(out, tone, SPEECH_RATE, format="WAV", subtype="PCM_16")
    return out.getvalue()


def forwarded_text(body: Any) -> str:
    """The answer's text in a body `forwarded` recorded, streamed (its chunks) or whole."""
    if not isinstance(body, dict):
        return ""
    if "chunks" in body:
        return "".join(
            str((c.get("choices") or [{}])[0].get("delta", {}).get("content") or "")
            for c in body["chunks"]
        )
    return str((body.get("choices") or [{}])[0].get("message", {}).get("content") or "")


def _read_stream(raw: bytes) -> dict[str, Any]:
    """A recorded stream: its decoded chunks, and the usage its last chunks carried."""
    chunks = []
    for line in raw.decode(errors="replace").splitlines():
        if line.startswith("data:") and line[5:].strip() not in ("", "[DONE]"):
            chunks.append(json.loads(line[5:]))
    usage = next((c["usage"] for c in reversed(chunks) if c.get("usage")), None)
    return {"chunks": chunks, "usage": usage}
