"""Text embeddings from the endpoint's `/v1/embeddings` (OpenAI, Ollama, llama.cpp, vLLM).

Used to recognise a proposal that says what an earlier one said in other words. The
vectors of texts already seen are kept in memory (bounded), so a pass asks only for
what is new; nothing depends on them surviving a restart.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any, Protocol

from gateway.core.llm_wire import one_line
from gateway.core.openai_client import OpenAIEndpoint, load_openai
from gateway.errors import ModelError
from gateway.logs import mask

CACHE_SIZE = 4096
MAX_INPUT_CHARS = 8000
"""A text is cut to this before it is embedded: the start of a skill says what it is for."""


class Embedder(Protocol):
    """Turns texts into vectors; ModelError when the endpoint cannot."""

    model: str

    async def embed(self, texts: Sequence[str]) -> list[list[float]]: ...

    async def close(self) -> None: ...


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity of two vectors (0 when either is zero or their sizes differ)."""
    if len(a) != len(b) or not a:
        return 0.0
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


class OpenAIEmbeddings(OpenAIEndpoint):
    """`POST {base_url}/embeddings` with the official client, cached per text."""

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        *,
        timeout: float = 60.0,
        unix_socket: str | None = None,
    ) -> None:
        super().__init__(base_url, model, api_key, timeout=timeout, unix_socket=unix_socket)
        self._cache: OrderedDict[str, list[float]] = OrderedDict()

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order; only texts not seen before are sent."""
        keys = [hashlib.sha256(t[:MAX_INPUT_CHARS].encode()).hexdigest() for t in texts]
        missing = list(dict.fromkeys(k for k in keys if k not in self._cache))
        if missing:
            first = {k: t[:MAX_INPUT_CHARS] for k, t in zip(keys, texts, strict=True)}
            vectors = await self._request([first[k] for k in missing])
            for key, vector in zip(missing, vectors, strict=True):
                self._cache[key] = vector
        out = []
        for key in keys:
            self._cache.move_to_end(key)
            out.append(self._cache[key])
        while len(self._cache) > CACHE_SIZE:
            self._cache.popitem(last=False)
        return out

    async def _request(self, inputs: list[str]) -> list[list[float]]:
        await load_openai()
        import openai

        body = {"model": self.model, "input": inputs}
        try:
            raw = await self._get_client().post("/embeddings", body=body, cast_to=str)
        except openai.APIStatusError as exc:
            secrets = self._secrets
            said = one_line(mask(exc.response.text, secrets))
            raise ModelError(f"embeddings answered HTTP {exc.status_code}: {said}") from exc
        except openai.OpenAIError as exc:
            raise ModelError(f"embeddings call failed: {type(exc).__name__}") from exc
        return _vectors(raw, len(inputs))


def _vectors(raw: str, count: int) -> list[list[float]]:
    """The `data[].embedding` lists of an embeddings answer, by `index`."""
    try:
        data: Any = json.loads(raw)
        items = sorted(data["data"], key=lambda d: int(d.get("index", 0)))
        vectors = [[float(x) for x in item["embedding"]] for item in items]
    except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise ModelError("embeddings answer is not the expected JSON") from exc
    if len(vectors) != count:
        raise ModelError(f"embeddings answer has {len(vectors)} vectors for {count} texts")
    return vectors
