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
from typing import TYPE_CHECKING, Any, Protocol

from gateway.core.llm_wire import mask
from gateway.errors import ModelError

if TYPE_CHECKING:
    from openai import AsyncOpenAI

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


class OpenAIEmbeddings:
    """`POST {base_url}/embeddings` with the official client, cached per text."""

    def __init__(
        self, base_url: str, model: str, api_key: str | None = None, *, timeout: float = 60.0
    ) -> None:
        self.base_url = base_url
        self.model = model
        self._api_key = api_key
        self._timeout = timeout
        self._client: AsyncOpenAI | None = None
        self._cache: OrderedDict[str, list[float]] = OrderedDict()

    def _get_client(self) -> AsyncOpenAI:
        if self._client is None:
            from openai import AsyncOpenAI

            self._client = AsyncOpenAI(
                base_url=self.base_url,
                api_key=self._api_key or "not-needed",
                timeout=self._timeout,
                max_retries=1,
            )
        return self._client

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
        import openai

        body = {"model": self.model, "input": inputs}
        try:
            raw = await self._get_client().post("/embeddings", body=body, cast_to=str)
        except openai.APIStatusError as exc:
            secrets = (self._api_key,) if self._api_key else ()
            raise ModelError(
                f"embeddings answered HTTP {exc.status_code}: {mask(exc.response.text, secrets)}"
            ) from exc
        except openai.OpenAIError as exc:
            raise ModelError(f"embeddings call failed: {type(exc).__name__}") from exc
        return _vectors(raw, len(inputs))

    async def close(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None


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
