"""A run against a real model as data: what it proposed in each pass and how screening treated it.

No quality claim: a small model's proposals are recorded as they came, with the
gateway's verdict on each (staged, suppressed with what it matched and how, refused
with the rule), and the reviewer's decision on what was staged.
"""

from __future__ import annotations

from typing import Any

from eval.figures import Result


def _items(items: list[dict[str, Any]]) -> list[str]:
    out = []
    for d in items:
        how = f"; {d['detail']}" if d.get("detail") else ""
        out.append(f"  - `{d['name']}`: {d['reason']}{how}")
    return out


def render(result: Result) -> str:
    """Markdown: per cycle, the pass's proposals, suppressions, refusals and error."""
    lines = [
        f"# The learning loop against {result.model}",
        "",
        f"{len(result.cycles)} cycle(s) of the default world; the users, the reviewer and Telegram"
        " are simulated, the answers and the proposals come from the model. Recorded as they"
        " came, without a claim about their quality.",
        "",
    ]
    decided = {p.id: p for p in result.proposals}
    for s in result.cycles:
        summary = s.summary
        lines.append(f"## Cycle {s.cycle}: {summary.get('status', '?')}")
        lines.append("")
        lines.append(
            f"- sessions read {summary.get('sessions', 0)}, batches {summary.get('batches', 0)},"
            f" 👍 {s.up} 👎 {s.down}, comments {s.comments}, error placeholders {s.errors}"
        )
        if summary.get("error"):
            lines.append(f"- error: {summary['error']}")
        for p in summary.get("proposed", []):
            row = decided.get(int(p["id"]))
            verdict = row.status if row else p["status"]
            lines.append(f"- staged `{p['name']}` ({p['kind']}): {p['description']} → {verdict}")
        if summary.get("suppressed"):
            lines.append("- suppressed:")
            lines += _items(summary["suppressed"])
        if summary.get("refused"):
            lines.append("- refused:")
            lines += _items(summary["refused"])
        lines.append("")
    lines.append(
        f"Answers meeting every preference of the held-out users: {result.before.pleased_rate:.0%}"
        f" before, {result.after.pleased_rate:.0%} after."
    )
    return "\n".join(lines) + "\n"
