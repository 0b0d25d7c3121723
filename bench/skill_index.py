"""Benchmark: skill index tokens and selection time against library size.

For libraries of 10, 100, 1,000 and 10,000 skills on disk, measures the tokens
the skill index adds to the prompt (against the naive baseline of listing every
skill), the time to select the index for a query (what every turn pays), and the
time to register the library at start-up (sync). Run:

    python -m bench.skill_index [--sizes 10,100,1000,10000] [--queries 200] [--write]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import tempfile
import time
from pathlib import Path

from bench.report import machine, median, percentile, table, verdict, write_section
from gateway.core.tokens import estimate_tokens
from gateway.skills.catalog import SkillCatalog
from gateway.skills.library import SkillLibrary
from gateway.skills.selection import INDEX_HEADER, index_entry
from gateway.store import SqliteStore

WORDS = (
    "invoice tax travel visa recipe bread python error garden tomato budget loan insurance "
    "flight hotel train printer wifi router password phone battery resume interview "
    "contract lease deposit vaccine allergy running knee guitar chord camera lens"
).split()
BUDGET = 800
SELECT_TARGET_MS = 10.0


def make_library(root: Path, size: int, rng: random.Random) -> None:
    for i in range(size):
        topic = " ".join(rng.sample(WORDS, 3))
        folder = root / f"skill-{i}"
        folder.mkdir(parents=True)
        (folder / "SKILL.md").write_text(
            f"---\nname: skill-{i}\ndescription: Use for questions about {topic}; gives "
            f"checklists and worked examples.\n---\n# Skill {i}\n\nSteps for {topic}.\n"
        )


async def measure(size: int, queries: int, rng: random.Random) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "skills"
        make_library(root, size, rng)
        async with SqliteStore(Path(tmp) / "db.sqlite") as store:
            catalog = SkillCatalog(SkillLibrary(root), store)
            t0 = time.perf_counter()
            await catalog.sync(None)
            sync_s = time.perf_counter() - t0
            naive = estimate_tokens(INDEX_HEADER) + sum(
                index_entry(n, d).cost for n, d in _pairs(catalog)
            )
            texts = [" ".join(rng.sample(WORDS, 4)) + "?" for _ in range(queries)]
            timings, tokens = [], []
            for text in texts:
                t = time.perf_counter()
                _names, section = catalog.offer(text, BUDGET)
                timings.append(time.perf_counter() - t)
                tokens.append(estimate_tokens(section))
    return {
        "size": size,
        "index_tokens_max": max(tokens),
        "naive_tokens": naive,
        "select_p50_ms": median(timings) * 1000,
        "select_p99_ms": percentile(timings, 99) * 1000,
        "sync_s": sync_s,
    }


def _pairs(catalog: SkillCatalog) -> list[tuple[str, str]]:
    return [(e.name, e.description) for e in catalog.index._entries]


def render(rows: list[dict[str, float]], queries: int) -> str:
    """The table, the ratios against the budget and the 10 ms target, and the verdicts."""
    cells = [
        [
            f"{r['size']:.0f}",
            f"{r['index_tokens_max']:.0f}",
            f"{r['index_tokens_max'] / BUDGET:.2f}",
            f"{r['naive_tokens']:.0f}",
            f"{r['index_tokens_max'] / r['naive_tokens']:.3f}",
            f"{r['select_p50_ms']:.3f}",
            f"{r['select_p99_ms']:.3f}",
            f"{r['select_p99_ms'] / SELECT_TARGET_MS:.2f}",
            f"{r['sync_s']:.2f}",
        ]
        for r in rows
    ]
    biggest = rows[-1]
    tokens_ok = all(r["index_tokens_max"] <= BUDGET for r in rows)
    return "\n".join(
        [
            f"Machine: {machine()}.",
            "",
            f"Budget {BUDGET} tokens (SKILLGATE_SKILL_INDEX_TOKENS), {queries} queries per "
            "size; index tokens are the largest index any query got; naive is every skill "
            "listed; selection is `SkillCatalog.offer` per query; sync registers the library "
            "at start-up.",
            "",
            table(
                [
                    "skills",
                    "index tokens",
                    "vs budget",
                    "naive tokens",
                    "index/naive",
                    "select p50 ms",
                    "select p99 ms",
                    "p99 vs 10 ms",
                    "sync s",
                ],
                cells,
            ),
            "",
            table(
                ["target", "goal", "result", "verdict"],
                [
                    [
                        "skill tokens at every size",
                        f"<= {BUDGET}",
                        f"{max(r['index_tokens_max'] for r in rows):.0f}",
                        "met" if tokens_ok else "MISSED",
                    ],
                    [
                        f"selection at {biggest['size']:.0f} skills (p99)",
                        f"<= {SELECT_TARGET_MS:.0f} ms",
                        f"{biggest['select_p99_ms']:.2f} ms",
                        verdict(biggest["select_p99_ms"], SELECT_TARGET_MS, at_most=True),
                    ],
                ],
            ),
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="10,100,1000,10000", help="library sizes")
    parser.add_argument("--queries", type=int, default=200, help="queries per size")
    parser.add_argument("--write", action="store_true", help="update docs/BENCHMARKS.md")
    args = parser.parse_args()
    rng = random.Random(7)
    started = time.monotonic()
    rows = [asyncio.run(measure(int(s), args.queries, rng)) for s in args.sizes.split(",")]
    text = render(rows, args.queries)
    print(f"{text}\n\n(run took {time.monotonic() - started:.0f} s)")
    if args.write:
        write_section("skill_index", text)


if __name__ == "__main__":
    main()
