"""How a JSON answer is asked for: a strict JSON schema first, then JSON mode, then the prompt.

llama.cpp, vLLM, Ollama, LM Studio and OpenAI constrain the output to a schema when asked
(`response_format: {"type": "json_schema", ...}`), which makes even a small model answer
the contract; some servers take only `json_object` (JSON of any shape), a few neither.
What a server refused is remembered per model in the database (`JsonModeMemory`), so a
restart does not ask again what was refused before.
"""

from __future__ import annotations

from typing import Any

from gateway.core.ports import Meta

JSON_MODES = ("json_schema", "json_object", "text")
MEMORY_KEY = "llm.json_mode."

JsonModeMemory = Meta
"""Where the mode a model last accepted is kept (the store's meta table)."""


def strict_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` as strict mode wants it: every property required, no others, no defaults."""

    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(n) for n in node]
        if not isinstance(node, dict):
            return node
        out = {k: walk(v) for k, v in node.items() if k not in ("default", "title")}
        if isinstance(out.get("properties"), dict):
            # "properties" maps names to schemas: walk them, but keep their names.
            out["properties"] = {k: walk(v) for k, v in node["properties"].items()}
            out["required"] = list(out["properties"])
            out["additionalProperties"] = False
        return out

    result = walk(schema)
    assert isinstance(result, dict)
    return result


def response_format(mode: str, schema: dict[str, Any] | None) -> dict[str, Any] | None:
    """The `response_format` for `mode`; a call without a schema asks for JSON mode instead."""
    if mode == "json_schema" and schema is not None:
        body = {"name": "answer", "strict": True, "schema": strict_schema(schema)}
        return {"type": "json_schema", "json_schema": body}
    if mode in ("json_schema", "json_object"):
        return {"type": "json_object"}
    return None  # plain text: the contract is in the prompt


def after(sent: dict[str, Any] | None) -> str:
    """The mode to use once the server refused the format `sent`."""
    kind = (sent or {}).get("type", "text")
    index = JSON_MODES.index(kind) if kind in JSON_MODES else len(JSON_MODES) - 1
    return JSON_MODES[min(index + 1, len(JSON_MODES) - 1)]
