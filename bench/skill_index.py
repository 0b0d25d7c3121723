"""Benchmark: skill index tokens and selection time against library size.

For libraries of 10, 100, 1,000 and 10,000 skills on disk, measures the tokens
the skill index adds to the prompt (against the naive baseline of listing every
skill) and the time to select the index for a query. Run:

    python -m bench.skill_index [--sizes 10,100,1000,10000] [--queries 200]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import tempfile
import time
from pathlib import Path

from gateway.core.tokens import estimate_tokens
from gateway.skills.catalog import SkillCatalog
from gateway.skills.library import SkillLibrary
from gateway.skills.selection import INDEX_HEADER, index_entry
from gateway.store import Store

WORDS = (
    "invoice tax travel visa recipe bread python error garden tomato budget loan insurance "
    "flight hotel train printer wifi router password phone battery resume interview "
    "contract lease deposit vaccine allergy running knee guitar chord camera lens"
).split()
BUDGET = 800


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
        async with Store(Path(tmp) / "db.sqlite") as store:
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
    timings.sort()
    return {
        "size": size,
        "index_tokens_max": max(tokens),
        "naive_tokens": naive,
        "select_p50_ms": statistics.median(timings) * 1000,
        "select_p99_ms": timings[int(len(timings) * 0.99) - 1] * 1000,
        "sync_s": sync_s,
    }


def _pairs(catalog: SkillCatalog) -> list[tuple[str, str]]:
    return [(e.name, e.description) for e in catalog.index._entries]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10,100,1000,10000")
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    rng = random.Random(7)
    rows = [asyncio.run(measure(int(s), args.queries, rng)) for s in args.sizes.split(",")]
    print(f"skill index, budget {BUDGET} tokens, {args.queries} queries per size")
    print(
        f"{'skills':>7} {'index tok':>9} {'naive tok':>10} {'index/naive':>11} "
        f"{'sel p50 ms':>10} {'sel p99 ms':>10} {'p99/10ms':>8} {'sync s':>7}"
    )
    for r in rows:
        print(
            f"{r['size']:>7} {r['index_tokens_max']:>9} {r['naive_tokens']:>10} "
            f"{r['index_tokens_max'] / r['naive_tokens']:>11.3f} {r['select_p50_ms']:>10.3f} "
            f"{r['select_p99_ms']:>10.3f} {r['select_p99_ms'] / 10:>8.3f} {r['sync_s']:>7.2f}"
        )
    over = [r for r in rows if r["index_tokens_max"] > BUDGET]
    print("within budget at every size" if not over else f"OVER BUDGET: {over}")


if __name__ == "__main__":
    main()
