"""No user-visible English literal bypasses the catalogs in the channel and conversation code.

An AST scan: a text constant (an UPPER_CASE name given a string, or a tuple or dict of them)
must be marked `N_`/`Np_`, and no string literal that reads as words may be passed to a call
that sends or shows something in a chat. Non-text literals (paths, keys, styles) pass by
their shape or by the keyword they are given to; the few texts that are not for users are
listed, with why, in ALLOWED.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

GATEWAY = Path(__file__).resolve().parents[2] / "gateway"
SCANNED = sorted(
    [
        # channels/api.py lists the names of the gateway's objects a platform uses: no text.
        *(p for p in GATEWAY.joinpath("channels").rglob("*.py") if p.name != "api.py"),
        *GATEWAY.joinpath("conversation").rglob("*.py"),
        GATEWAY / "review" / "delivery.py",
        GATEWAY / "review" / "cards.py",
        GATEWAY / "skills" / "overview.py",
        GATEWAY / "skills" / "effect.py",
        GATEWAY / "core" / "agent.py",
    ]
)
MARKS = {"N_", "Np_"}
OPERATOR = {"Setting"}
"""Calls whose texts the operator reads in a terminal (`skillgate init`'s questions and
flags), in English like every other CLI text: not a chat's."""
SENDS = {
    # the Responder and what the channels send or show with
    "notice", "acknowledge", "deliver", "ask_reason", "show_cards", "send_diff",
    "Reply", "Button", "Decided", "Part", "of_text",
    "send", "edit", "document", "answer", "answer_callback_query",
    "InlineKeyboardButton", "ForceReply", "BotCommand",
    "TextMessage", "text_messages", "FlexText", "FlexSpan", "FlexMessage", "_text",
    "PostbackAction", "QuickReplyItem", "deliver_messages",
}  # fmt: skip
NOT_TEXT_KEYWORDS = {
    "action", "value", "kind", "style", "color", "size", "weight", "layout", "height",
    "margin", "spacing", "parse_mode", "data", "callback_data", "filename", "ref", "type",
}  # fmt: skip
ALLOWED = {
    ("conversation/content.py", "Shared a place"): "what the model reads, not the user",
    ("conversation/content.py", "Sent a sticker"): "what the model reads, not the user",
    ("channels/line/client.py", "monthly limit"): "matched in LINE's error message",
    ("channels/telegram/send.py", "chat not found"): "matched in Telegram's error message",
    ("channels/telegram/send.py", "message to edit not found"): "the same",
    ("channels/telegram/send.py", "message can't be edited"): "the same",
    ("channels/telegram/updates.py", "paid media"): "a media kind, for logs and the model",
    ("channels/telegram/updates.py", "video note"): "a media kind, for logs and the model",
    ("channels/telegram/files.py", "video note"): "a media kind, mapped to its Bot API field",
    ("channels/telegram/spec.py", "Telegram"): "the platform's name, for the CLI and logs",
    ("channels/line/spec.py", "U and 32 hex digits"): "a user id's shape, for the CLI's help",
    (
        "conversation/attachments.py",
        "cut to fit: {shown:,} of {total:,} characters shown",
    ): "a note the model and the console read, not the user",
}
_WORDS = re.compile(r"[A-Za-z]{2,}[^\sA-Za-z]*\s+[^\sA-Za-z]*[A-Za-z]{2,}")
_LABEL = re.compile(r"^\W*[A-Z][a-z]+\W*$")


def reads_as_text(value: str) -> bool:
    """Words a person would read: two words in a row, or one capitalised word ("Skip")."""
    bare = re.sub(r"\{[^}]*\}|<[^>]+>|https?://\S+", " ", value)
    return bool(_WORDS.search(bare) or _LABEL.match(bare.strip()))


def strings(node: ast.AST) -> Iterator[ast.Constant]:
    """The string literals in `node`, leaving out those inside N_(...) and Np_(...)."""
    if isinstance(node, ast.Call) and _name(node.func) in MARKS | OPERATOR:
        return
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        yield node
        return
    for child in ast.iter_child_nodes(node):
        yield from strings(child)


def _name(func: ast.expr) -> str:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""


def _constant_names(target: ast.expr) -> list[str]:
    names = target.elts if isinstance(target, ast.Tuple) else [target]
    return [n.id for n in names if isinstance(n, ast.Name)]


def bare_texts(source: str) -> list[tuple[int, str]]:
    """(line, text) of each unmarked user-visible literal in the module's source."""
    tree = ast.parse(source)
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = [n for t in targets for n in _constant_names(t)]
            if names and all(n.isupper() for n in names):
                found += [(c.lineno, c.value) for c in strings(node.value)]
        elif isinstance(node, ast.Call) and _name(node.func) in SENDS:
            args = [*node.args]
            args += [k.value for k in node.keywords if k.arg not in NOT_TEXT_KEYWORDS]
            for arg in args:
                found += [(c.lineno, c.value) for c in strings(arg)]
    return sorted({(line, text) for line, text in found if reads_as_text(text)})


@pytest.mark.parametrize("path", SCANNED, ids=lambda p: str(p.relative_to(GATEWAY)))
def test_every_user_visible_text_goes_through_the_catalogs(path: Path) -> None:
    where = str(path.relative_to(GATEWAY))
    bare = [
        f"{where}:{line}: {text!r}"
        for line, text in bare_texts(path.read_text())
        if (where, text) not in ALLOWED
    ]
    assert bare == [], "mark these with N_() and run scripts/catalogs"


def test_the_scan_finds_a_bare_text_and_passes_marked_ones_and_non_texts() -> None:
    source = """
GREETING = "Hello there, friend."
LABELS = ("Approve", N_("Reject"))
MARKED = N_("Thanks for the feedback!")
COUNTED = Np_("{n} session", "{n} sessions")
PATH = "/webhook/line"
PURPOSE = "feedback_comment"

async def handle(out, texts, log):
    await out.notice("Sorry, something broke.")
    await out.notice(texts(MARKED))
    await out.acknowledge(f"Approved: {slug} is live")
    Button(label="Skip", action="reject", value="pr:1:abc")
    FlexText(text=texts(MARKED), size="sm", weight="bold")
    log.info("nothing here reaches a chat %s", out)
    raise ValueError("an error for the operator")
"""
    assert {text for _, text in bare_texts(source)} == {
        "Hello there, friend.",
        "Approve",
        "Sorry, something broke.",
        "Approved: ",
        " is live",
        "Skip",
    }
