"""Prompt building: persona, the bounded skill index, and bounded history."""

from __future__ import annotations

import copy
from typing import Any

from gateway.core.llm_wire import strip_think
from gateway.core.records import MessageRecord
from gateway.core.tokens import estimate_tokens

DEFAULT_PERSONA = """\
You are a helpful, friendly assistant answering people in a chat app.
Answer in the language the person writes in. Be concise: short paragraphs,
lists when they help, no filler. Say so plainly when you do not know.
"""

LOAD_SKILL_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "load_skill",
        "description": (
            "Load the full instructions of one skill from the skill list in the system "
            "prompt. Call it before answering when a listed skill fits the request."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "the skill's name, as listed"}
            },
            "required": ["name"],
        },
    },
}


def load_skill_tool(offered: list[str]) -> dict[str, Any]:
    """The load_skill tool with `name` limited to this turn's offered skills."""
    tool = copy.deepcopy(LOAD_SKILL_TOOL)
    tool["function"]["parameters"]["properties"]["name"]["enum"] = list(offered)
    return tool


def system_prompt(persona: str, skill_section: str) -> str:
    """Persona, then the skill index when any skill is offered."""
    parts = [persona.strip()]
    if skill_section:
        parts.append(skill_section)
    return "\n\n".join(parts)


def bounded_history(history: list[MessageRecord], budget_tokens: int) -> list[MessageRecord]:
    """The newest messages that fit the budget, oldest first; the newest always stays."""
    kept: list[MessageRecord] = []
    used = 0
    for message in reversed(history):
        if message.kind == "error":
            continue  # placeholders are shown to users, never fed back as the model's words
        cost = estimate_tokens(message.text) + 4
        if kept and used + cost > budget_tokens:
            break
        kept.append(message)
        used += cost
    kept.reverse()
    # A conversation handed to the model starts with the user.
    while kept and kept[0].role != "user":
        kept.pop(0)
    return kept


def build_messages(
    persona: str, skill_section: str, history: list[MessageRecord], history_budget: int
) -> list[dict[str, Any]]:
    """Chat-completions messages for one turn."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": system_prompt(persona, skill_section)}
    ]
    for message in bounded_history(history, history_budget):
        # Answers stored before reasoning was stripped must not feed it back either.
        text = strip_think(message.text)[0] if message.role == "assistant" else message.text
        messages.append({"role": message.role, "content": text})
    return messages
