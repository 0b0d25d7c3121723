"""Decoding in a child process, bounded in memory (`RLIMIT_AS`), CPU (`RLIMIT_CPU`) and wall time.

A hostile file (a DOCX of millions of empty paragraphs, PDF pages sharing one huge stream, an
image Pillow chokes on) can cost only its own child: past a bound the child is killed and the
file refused (MediaBomb, unit "work"), while the gateway's memory, its event loop and the other
users' files are untouched. The child is a fresh interpreter (`python -m gateway.media.worker`):
nothing of the gateway's state, secrets in memory included, is copied into it.

The job and its options go in as one JSON line followed by the file's bytes; the result comes
back as one JSON object.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import math
import os
import sys
from typing import Any

from gateway.errors import MediaBomb, MediaError, MediaUnsupported
from gateway.media.documents import Extracted
from gateway.media.images import PreparedImage

RESULTS: dict[str, type[Any]] = {"image": PreparedImage, "document": Extracted}
"""The jobs a worker does, and what each gives back."""


async def decode(job: str, data: bytes, *, memory: int, seconds: float, **options: Any) -> Any:
    """Run `job` on `data` in a child of at most `memory` bytes and `seconds`; its result, or
    the MediaError it raised (MediaBomb when a bound stopped it)."""
    if job not in RESULTS:
        raise ValueError(f"no such decoding job: {job}")
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "gateway.media.worker",
        str(memory),
        str(math.ceil(seconds)),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        env={k: v for k, v in os.environ.items() if k in _ENVIRONMENT},
    )
    request = json.dumps({"job": job, "options": options}).encode() + b"\n" + data
    try:
        async with asyncio.timeout(seconds):
            out, _ = await child.communicate(request)
    except TimeoutError:
        raise MediaBomb(f"decoding took longer than {seconds:g} s", unit="work", limit=0) from None
    finally:
        if child.returncode is None:
            child.kill()
            await child.wait()
    try:
        answer = json.loads(out)
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        # Killed by a limit (SIGKILL, SIGXCPU), or out of memory before it could answer.
        raise MediaBomb(f"decoding stopped (exit status {child.returncode})", unit="work", limit=0)
    if "result" in answer:
        return RESULTS[job](**answer["result"])
    raise _error(answer)


_ENVIRONMENT = ("PATH", "PYTHONPATH", "LANG", "LC_ALL", "TMPDIR", "HOME")
"""The only environment a child gets: it needs no setting, and no secret reaches it."""


def _error(answer: dict[str, Any]) -> MediaError:
    message = str(answer.get("message", "decoding failed"))
    if answer.get("error") == "bomb":
        return MediaBomb(
            message, unit=str(answer.get("unit", "work")), limit=int(answer.get("limit", 0))
        )
    if answer.get("error") == "memory":
        return MediaBomb(message, unit="work", limit=0)
    return MediaUnsupported(message)


def _run(job: str, data: bytes, options: dict[str, Any]) -> dict[str, Any]:
    """The job's answer as JSON-ready data: its result, or the error it ended with."""
    from gateway.media.documents import extract
    from gateway.media.images import prepare_image

    try:
        if job == "image":
            result: Any = prepare_image(data, **options)
        else:
            result = extract(data, **options)
    except MediaBomb as exc:
        return {"error": "bomb", "message": str(exc), "unit": exc.unit, "limit": exc.limit}
    except MediaError as exc:
        return {"error": "unsupported", "message": str(exc)}
    except MemoryError:
        return {"error": "memory", "message": "decoding ran out of its memory"}
    except Exception as exc:  # a library's own failure on a hostile file: not a file we read
        return {"error": "unsupported", "message": f"decoding failed: {type(exc).__name__}"}
    return {"result": dataclasses.asdict(result)}


def main(argv: list[str]) -> int:
    import resource

    memory, cpu = int(argv[0]), int(argv[1])
    # Set before the file is read: nothing the file makes the child do escapes the limits.
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    head = sys.stdin.buffer.readline()
    request = json.loads(head)
    data = sys.stdin.buffer.read()
    answer = _run(str(request["job"]), data, dict(request["options"]))
    sys.stdout.write(json.dumps(answer))
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
