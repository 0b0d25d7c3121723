"""JSON from the outside, refused when nested too deep to handle safely.

Python's parser gives up near the interpreter's recursion limit (about 1,000 levels),
and everything that walks a parsed value recursively (storing it, checking its text)
gives up sooner, so a body nested 980 deep could pass the parser and fail later. No
platform or admin client nests anywhere near `MAX_DEPTH`.
"""

from __future__ import annotations

import json
from typing import Any

MAX_DEPTH = 64


def depth(text: str) -> int:
    """How deeply arrays and objects nest in `text` (strings skipped), without recursion."""
    deepest = level = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            level += 1
            deepest = max(deepest, level)
        elif ch in "]}":
            level -= 1
    return deepest


def loads(raw: str | bytes, max_depth: int = MAX_DEPTH) -> Any:
    """`json.loads`, with ValueError for bodies nested deeper than `max_depth`."""
    text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
    few = text.count("[") + text.count("{") <= max_depth  # cannot nest deeper: no scan
    if not few and depth(text) > max_depth:
        raise ValueError(f"nested deeper than {max_depth} levels")
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError(f"nested deeper than {max_depth} levels") from None
