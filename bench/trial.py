"""Benchmark (v): a proposal's trial priced, and chat answers while a pass with trials runs.

`skillgate serve` (the real process, Telegram against the fake Bot API) and a fake model of
its own (`--serve-model`, a child process speaking the OpenAI protocol through
`tests/fakes/openai_server.py`, answering every call after `--model-latency` seconds) play a
small world: rated sessions about twelve topics, stored through the gateway's store. A first
pass reads the older ones and proposes nothing (they become what a proposal might break);
then each pass finds `--proposals` topics with 👎 answers (`--turns` sessions each) and the
model proposes one skill per topic, which `Synthesizer.stage` tries before review with the
default trial settings (or `--turns` per side). The trial's answering model loads the
proposal when the index offers it and answers "BETTER" with it, plainly without it; the
blind judge is the fake's `judge_by_marks` (declared trusted: its calibration, once per
judge, is priced in (s) and not here).

The pass runs where production runs it: inside `serve`, on its event loop (the scheduled
pass is `SynthesisSchedule._tick` calling `Synthesizer.run` there; the bench asks for it
with `POST /admin/api/synthesize`, which calls the same method on the same loop).

(a) One pass with no chat traffic: the model calls and the prompt and completion tokens of
each kind (synthesis, same-claim question, trial answer, trial comparison) as the fake model
counts them (characters / 4, what its usage reports), the tokens the gateway recorded for the
pass (`GET /admin/api/usage`), each proposal's trial (calls, pairs, verdict), and the
gateway's CPU over the pass, per pair. Calls and tokens are exact and the same at every run.

(b) `--rounds` rounds of: a steady `--rate` updates/s of chat webhooks (bench.webhook's
sender) while the next pass with trials runs (new topics each round), as many updates as the
pass of (a) took seconds; then the same load on the same gateway with no pass running, and
on the bare aiohttp handler. p50 and p99 over bare per round, and the cores other processes
on the machine used meanwhile; the target (#52): p99 within 25 ms of bare while a pass with
trials runs. Run:

    python -m bench.trial [--proposals 3] [--turns 3] [--rounds 3] [--rate 50]
        [--model-latency 0.5] [--write]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import re
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

from bench.fakes import KEY, echo
from bench.loadgen import Batch, make_batch
from bench.procs import announce, until_told_to_stop
from bench.report import machine, percentile, publish, run_in_scratch, spread, table, verdict
from bench.webhook import Rig, run_phase
from gateway.core.records import Trace
from gateway.core.turn import TurnStart
from gateway.store import SqliteStore
from gateway.synthesis import prompt as synthesis_prompt
from tests.fakes.openai_server import FakeOpenAI, Scripted, judge_by_marks, judge_by_words

ADMIN = "bench-trial-admin-token"
P99_OVER_BARE_MS = 25.0
"""#52's target: a pass with trials running, chat p99 within this of the bare handler's."""


@dataclass(frozen=True)
class Topic:
    """What users ask about, and the skill the model proposes for it."""

    slug: str
    question: str
    description: str
    statement: str


TOPICS = (
    Topic(
        "printer-spooler",
        "My printer shows offline although the wifi works, what can I check?",
        "Use for a printer that appears offline on a working wireless network.",
        "Restart the print spooler before reinstalling drivers.",
    ),
    Topic(
        "passport-renewal",
        "How do I renew my passport before a trip abroad next month?",
        "Use for passport renewal deadlines ahead of international travel.",
        "Tell travellers to book the consulate appointment early.",
    ),
    Topic(
        "first-loaf",
        "What is a simple bread recipe for someone who never baked?",
        "Use for beginner loaf baking with flour, yeast and water.",
        "Give beginners a four-ingredient loaf with proving times.",
    ),
    Topic(
        "compound-interest",
        "Can you explain compound interest with a small worked example?",
        "Use for explaining how savings deposits grow by compounding.",
        "Show compounding by a year-by-year table of one deposit.",
    ),
    Topic(
        "tyre-patch",
        "How do I fix a flat bicycle tyre at home?",
        "Use for repairing punctured bicycle inner tubes by hand.",
        "Walk riders through patching a punctured tube with levers.",
    ),
    Topic(
        "yellow-leaves",
        "Why are the leaves of my tomato plants turning yellow?",
        "Use for yellowing tomato foliage in vegetable gardens.",
        "Check watering and nitrogen before blaming plant disease.",
    ),
    Topic(
        "slow-router",
        "Why is my home internet so slow in the evening?",
        "Use for evening slowdowns of a home broadband router.",
        "Compare a cabled speed test with the wireless one first.",
    ),
    Topic(
        "cat-litter",
        "My cat stopped using the litter box, what should I do?",
        "Use for a cat avoiding its litter tray indoors.",
        "Suggest a vet visit and an unscented, cleaner tray.",
    ),
    Topic(
        "rent-deposit",
        "How can I get my rental deposit back when I move out?",
        "Use for recovering a tenancy deposit from a landlord.",
        "Photograph every room at handover and cite the lease.",
    ),
    Topic(
        "jet-lag",
        "How do I get over jet lag after a long flight east?",
        "Use for adjusting sleep after crossing many time zones.",
        "Shift bedtime gradually and seek morning daylight.",
    ),
    Topic(
        "car-battery",
        "My car will not start on cold mornings, is it the battery?",
        "Use for a vehicle failing to crank in freezing weather.",
        "Test the battery voltage before buying a starter motor.",
    ),
    Topic(
        "spanish-verbs",
        "What is an easy way to learn Spanish verb conjugations?",
        "Use for memorising Spanish verb endings by tense.",
        "Drill one tense at a time with spaced flashcards.",
    ),
)
GUARDS_PER_TOPIC = 4
"""Older rated sessions per topic (half 👍, half 👎): what a proposal might break."""
PLAIN = (
    "There are a few things you could look at. It depends on your situation, so have a look "
    "around and see what seems to fit best; if nothing does, ask someone who knows."
)
SYNTHESIS_OPENING = synthesis_prompt.system_message(3, 16_384).split("\n", 1)[0]
_SESSION = re.compile(r'<(untrusted-chat-[0-9a-f]+) session="(\d+)"[^>]*>\n(.*?)\n</\1>', re.S)
_OFFERED = re.compile(r"^- ([a-z0-9-]+):", re.M)

Kinds = dict[str, list[int]]
"""Per kind of call: [calls, prompt tokens, completion tokens]."""


class Model:
    """The fake model's answers, and its count of every call by kind."""

    def __init__(self, latency: float) -> None:
        self.latency = latency
        self.kinds: Kinds = defaultdict(lambda: [0, 0, 0])
        self.proposed: set[str] = set()
        self.slugs = {t.slug for t in TOPICS}

    def _count(self, kind: str, body: dict[str, Any], text: str | None) -> None:
        # As the fake's usage reports them: characters / 4.
        chars = sum(len(str(m.get("content") or "")) for m in body.get("messages", []))
        tally = self.kinds[kind]
        tally[0] += 1
        tally[1] += chars // 4
        tally[2] += len(text or "") // 4

    def _say(self, kind: str, body: dict[str, Any], text: str) -> Scripted:
        self._count(kind, body, text)
        return Scripted(text=text, delay=self.latency)

    def answer(self, body: dict[str, Any]) -> Scripted:
        """Chat (the update's key echoed), a synthesis pass's drafts, or a trial's answer."""
        messages = body["messages"]
        system = str(messages[0].get("content") or "")
        last = messages[-1]
        if last.get("role") == "user" and KEY.search(str(last.get("content") or "")):
            return self._say("chat", body, echo(body))
        if system.startswith(SYNTHESIS_OPENING):
            return self._say("synthesis", body, self.drafts(str(messages[-1]["content"])))
        if any(m.get("role") == "tool" for m in messages):
            return self._say(
                "trial answer", body, "BETTER: three numbered steps, as the skill says."
            )
        offered = [s for s in _OFFERED.findall(system) if s in self.slugs]
        if offered and body.get("tools"):
            self._count("trial answer", body, None)
            return Scripted(tool_calls=[("load_skill", {"name": offered[0]})], delay=self.latency)
        return self._say("trial answer", body, PLAIN)

    def drafts(self, evidence: str) -> str:
        """One skill for each topic whose 👎 sessions this batch shows, once per topic."""
        fixes: dict[str, list[int]] = defaultdict(list)
        for _tag, session, text in _SESSION.findall(evidence):
            for topic in TOPICS:
                if topic.question in text and "(fix " in text:
                    fixes[topic.slug].append(int(session))
        proposals: list[dict[str, Any]] = []
        for topic in TOPICS:
            if topic.slug in fixes and topic.slug not in self.proposed and len(proposals) < 3:
                self.proposed.add(topic.slug)
                proposals.append(
                    {
                        "kind": "create",
                        "target": None,
                        "name": topic.slug,
                        "description": topic.description,
                        "content": f"# {topic.slug}\n\n1. {topic.statement}\n2. Then check.\n",
                        "based_on": fixes[topic.slug],
                        "rationale": "Users rated vague answers down.",
                        "statement": topic.statement,
                        "allowed_tools": [],
                    }
                )
        return json.dumps({"proposals": proposals})

    def same_claim(self, body: dict[str, Any]) -> Scripted:
        return self._say("same-claim question", body, judge_by_words(body))

    def compare(self, body: dict[str, Any]) -> Scripted:
        found = judge_by_marks(body)
        text = found if isinstance(found, str) else found.text or ""
        return self._say("trial comparison", body, text)

    def drain(self) -> Kinds:
        kinds, self.kinds = dict(self.kinds), defaultdict(lambda: [0, 0, 0])
        return kinds


async def serve_model(latency: float) -> None:
    """The fake model as a child process; its control port's POST /drain hands the counts."""
    model = Model(latency)
    fake = FakeOpenAI()
    fake.default = model.answer
    fake.judge = model.same_claim
    fake.trial_judge = model.compare
    await fake.start()

    async def drain(_request: web.Request) -> web.Response:
        fake.requests, fake.same_claim_requests, fake.trial_requests = [], [], []
        return web.json_response({"kinds": model.drain()})

    app = web.Application()
    app.router.add_post("/drain", drain)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    announce(base_url=fake.base_url, control=f"http://127.0.0.1:{runner.addresses[0][1]}")
    await until_told_to_stop()
    await runner.cleanup()
    await fake.close()


@dataclass
class Priced:
    """One pass with trials, on an otherwise quiet gateway."""

    seconds: float
    cpu: float
    kinds: Kinds
    recorded: dict[str, int]
    """The pass's tokens as the gateway's usage records them (prompt, completion)."""
    trials: list[dict[str, Any]]
    """Per proposal: its name, the trial's calls, pairs, sides tried, verdict."""

    @property
    def pairs(self) -> int:
        return sum(int(t["pairs"]) for t in self.trials)


@dataclass
class Load:
    """Chat latencies of one phase of the steady load."""

    name: str
    round: int
    latencies: list[float]
    sent: int
    answered: int
    others: float
    """Cores other processes on the machine used during the phase."""
    overlap: float = math.nan
    """The share of the phase's updates posted while a pass ran (the pass's phase)."""


@dataclass
class Result:
    priced: Priced
    loads: list[Load] = field(default_factory=list)
    loaded_trials: list[dict[str, Any]] = field(default_factory=list)


async def seed(db: Path, topics: tuple[Topic, ...], kind: str, count: int, at: float) -> None:
    """`count` finished sessions per topic: 👎 ones to draw from ("fix"), or older 👍/👎 ones,
    stored as the gateway stores a turn (beside the running gateway, on its database)."""
    async with SqliteStore(db) as store:
        for topic in topics:
            for i in range(count):
                liked = kind == "guard" and i % 2 == 0
                chat, user = f"{topic.slug}-{kind}-{i}", f"u-{topic.slug}-{kind}-{i}"
                now = at + i
                question = f"{topic.question} ({kind} {i})"
                turn = await store.start_turn(
                    TurnStart("telegram", chat, user, question, None, now, 1800, history_limit=0)
                )
                answer = await store.add_answer(
                    turn.session_id,
                    PLAIN,
                    kind="normal",
                    inbox_id=None,
                    trace=Trace(model="fake-model"),
                    now=now,
                    user_id=user,
                )
                await store.set_feedback(answer.id, user, 1 if liked else -1, now=now)
                if not liked:
                    await store.set_feedback_comment(answer.id, user, "too vague", now=now)
                await store.finish_chat_session("telegram", chat, "new", now=now)


class Gateway:
    """The admin API of the gateway under test."""

    def __init__(self, session: aiohttp.ClientSession, base: str) -> None:
        self.session = session
        self.base = f"{base}/admin/api"
        self.auth = {"Authorization": f"Bearer {ADMIN}"}

    async def get(self, path: str) -> Any:
        async with self.session.get(f"{self.base}{path}", headers=self.auth) as resp:
            resp.raise_for_status()
            return await resp.json()

    async def synthesize(self) -> dict[str, Any]:
        timeout = aiohttp.ClientTimeout(total=None)
        url = f"{self.base}/synthesize"
        async with self.session.post(url, headers=self.auth, timeout=timeout) as resp:
            body: dict[str, Any] = await resp.json()
        if resp.status != 200 or body.get("status") != "ok":
            raise RuntimeError(f"the pass failed: {resp.status} {body}")
        return body

    async def learning_tokens(self) -> dict[str, int]:
        usage = (await self.get("/usage?days=1"))["synthesis"]
        return {k: int(usage[k]) for k in ("prompt_tokens", "completion_tokens")}

    async def trials(self, run: dict[str, Any]) -> list[dict[str, Any]]:
        found = []
        for made in run["proposed"]:
            trial = (await self.get(f"/proposals/{made['id']}"))["trial"] or {}
            found.append(
                {
                    "name": made["name"],
                    "calls": trial.get("calls", 0),
                    "pairs": len(trial.get("pairs") or []),
                    "fixes": (trial.get("fixes") or {}).get("tried", 0),
                    "guards": (trial.get("guards") or {}).get("tried", 0),
                    "verdict": trial.get("verdict", "none"),
                }
            )
        return found


async def timed_pass(gw: Gateway, span: list[float]) -> dict[str, Any]:
    """One pass; its start and end (monotonic) appended to `span`."""
    span.append(time.monotonic())
    body = await gw.synthesize()
    span.append(time.monotonic())
    return body


async def drain_model(session: aiohttp.ClientSession, rig: Rig) -> Kinds:
    async with session.post(f"{rig.llm_control}/drain") as resp:
        kinds: Kinds = (await resp.json())["kinds"]
    return kinds


async def run(args: argparse.Namespace, tmp: Path) -> Result:
    """The whole benchmark in `tmp`: seed, price one pass, then the load phases."""
    if not 1 <= args.proposals <= 3:
        raise SystemExit("--proposals is 1 to 3 (a pass proposes at most 3 by default)")
    if (args.rounds + 1) * args.proposals > len(TOPICS):
        raise SystemExit(f"at most {len(TOPICS)} topics: --rounds 1 more times --proposals")
    settings = {
        "SKILLGATE_ADMIN_TOKEN": ADMIN,
        "SKILLGATE_TRUSTED_JUDGES": "fake-model",
        "SKILLGATE_TRIAL_TURNS_PER_SIDE": str(args.turns),
    }
    model = ("bench.trial", "--serve-model", "--model-latency", str(args.model_latency))
    rig = Rig(tmp, lean=False, model=model, settings=settings)
    db = tmp / "skillgate-data" / "skillgate.db"
    first = TOPICS[: args.proposals]
    used = TOPICS[: (args.rounds + 1) * args.proposals]
    phase = 0

    def batch(count: int) -> Batch:
        nonlocal phase
        phase += 1
        return make_batch(phase, count, 1000, phase * 100_000)

    try:
        await rig.start(["skillgate", "bare"])
        base = rig.urls["skillgate"][0].removesuffix("/webhook/telegram")
        async with aiohttp.ClientSession() as session:
            gw = Gateway(session, base)
            # Older rated sessions, read by a pass that proposes nothing.
            start = time.time() - 7200
            await seed(db, used, "guard", GUARDS_PER_TOPIC, start)
            await gw.synthesize()
            for name in ("skillgate", "bare"):  # warm-up: pools, lazy imports
                await run_phase(rig, session, name, batch(args.rate), args.rate, 40)
            await drain_model(session, rig)
            # (a) One pass with trials, nothing else running.
            await seed(db, first, "fix", args.turns, start + 600)
            tokens0, cpu0, t0 = await gw.learning_tokens(), rig.cpu()["skillgate"], time.monotonic()
            run_a = await gw.synthesize()
            seconds, cpu = time.monotonic() - t0, rig.cpu()["skillgate"] - cpu0
            tokens1 = await gw.learning_tokens()
            priced = Priced(
                seconds=seconds,
                cpu=cpu,
                kinds=await drain_model(session, rig),
                recorded={k: tokens1[k] - tokens0[k] for k in tokens0},
                trials=await gw.trials(run_a),
            )
            print(
                f"pass: {len(priced.trials)} proposals, {priced.pairs} pairs, "
                f"{seconds:.1f} s, gateway CPU {cpu:.2f} s",
                flush=True,
            )
            result = Result(priced)
            # (b) Rounds of: the steady load while the next pass runs, without one, on bare.
            count = max(args.rate, int(args.rate * seconds))
            for round_no in range(1, args.rounds + 1):
                topics = TOPICS[round_no * args.proposals : (round_no + 1) * args.proposals]
                await seed(db, topics, "fix", args.turns, start + 600 * (round_no + 1))
                span: list[float] = []
                running = asyncio.create_task(timed_pass(gw, span))
                posted = time.monotonic()
                loaded = await run_phase(rig, session, "skillgate", batch(count), args.rate, 40)
                result.loaded_trials += await gw.trials(await running)
                # Update i is posted i/rate after `posted`: those inside the pass's span.
                inside = sum(
                    1 for i in range(count) if span[0] <= posted + i / args.rate <= span[1]
                )
                phases = [("with a pass", loaded)]
                for name, label in (("skillgate", "no pass"), ("bare", "bare")):
                    p = await run_phase(rig, session, name, batch(count), args.rate, 40)
                    phases.append((label, p))
                for label, p in phases:
                    load = Load(label, round_no, p.latencies_ms, p.sent, p.answered, p.others)
                    if label == "with a pass":
                        load.overlap = inside / count
                    result.loads.append(load)
                    print(
                        f"round {round_no} {label:>11}: p50 {percentile(p.latencies_ms, 50):.1f}"
                        f" ms p99 {percentile(p.latencies_ms, 99):.1f} ms, other load "
                        f"{p.others:.2f} cores",
                        flush=True,
                    )
    finally:
        rig.stop()
    return result


def _kind_rows(priced: Priced) -> list[list[str]]:
    rows = []
    trial = [0, 0, 0]
    for kind in ("synthesis", "same-claim question", "trial answer", "trial comparison"):
        calls, prompt, completion = priced.kinds.get(kind, [0, 0, 0])
        if kind.startswith("trial"):
            trial = [a + b for a, b in zip(trial, (calls, prompt, completion), strict=True)]
        rows.append([kind, str(calls), str(prompt), str(completion)])
    n, pairs = max(1, len(priced.trials)), max(1, priced.pairs)
    rows.append(["the trials together", *(str(x) for x in trial)])
    rows.append(["per proposal", *(f"{x / n:.1f}" for x in trial)])
    rows.append(["per pair", *(f"{x / pairs:.1f}" for x in trial)])
    return rows


def render(result: Result, args: argparse.Namespace) -> str:
    priced = result.priced
    fake_prompt = sum(v[1] for v in priced.kinds.values())
    fake_completion = sum(v[2] for v in priced.kinds.values())
    trial_rows = [
        [t["name"], t["calls"], t["pairs"], f"{t['fixes']} / {t['guards']}", t["verdict"]]
        for t in priced.trials
    ]
    load_rows, overs = [], []
    for load in result.loads:
        bare = next(x for x in result.loads if x.name == "bare" and x.round == load.round)
        p50, p99 = percentile(load.latencies, 50), percentile(load.latencies, 99)
        over = p99 - percentile(bare.latencies, 99)
        load_rows.append(
            [
                str(load.round),
                load.name,
                f"{load.answered}/{load.sent}",
                f"{p50:.1f}",
                f"{p99:.1f}",
                "-" if load is bare else f"{p50 - percentile(bare.latencies, 50):.1f}",
                "-" if load is bare else f"{over:.1f}",
                f"{load.others:.2f}",
                "-" if math.isnan(load.overlap) else f"{load.overlap:.0%}",
            ]
        )
        if load.name == "with a pass":
            overs.append(over)
    worst = max(overs)
    verdicts = [
        f"p99 over bare while a pass with trials runs: {spread(overs)} ms over "
        f"{len(overs)} round(s), worst {worst:.1f} ms; target at most {P99_OVER_BARE_MS:.0f} ms "
        f"in every round: {verdict(worst, P99_OVER_BARE_MS, at_most=True)}"
    ]
    sent = result.loads[0].sent
    loaded = ", ".join(f"{t['name']} {t['pairs']} pairs" for t in result.loaded_trials)
    return "\n".join(
        [
            f"Machine: {machine()}.",
            "",
            f"{args.proposals} proposals a pass, {args.turns} turns per side "
            f"(SKILLGATE_TRIAL_TURNS_PER_SIDE), SKILLGATE_TRIAL_CALLS at its default; the fake "
            f"model answers every call after {args.model_latency:g} s. (a) One pass, no chat "
            "traffic: model calls and tokens as the fake model counts them (exact, the same "
            "every run), the gateway's CPU over the pass (rough).",
            "",
            table(
                ["calls by kind", "calls", "prompt tokens", "completion tokens"], _kind_rows(priced)
            ),
            "",
            table(
                ["proposal", "trial calls (gateway)", "pairs", "tried: fixes / guards", "verdict"],
                trial_rows,
            ),
            "",
            f"The pass: {priced.seconds:.1f} s, gateway CPU {priced.cpu * 1000:.0f} ms, "
            f"{priced.cpu * 1000 / max(1, priced.pairs):.1f} ms per pair (the pass's synthesis "
            "and same-claim calls included). Tokens the gateway recorded for it: "
            f"{priced.recorded['prompt_tokens']} prompt, {priced.recorded['completion_tokens']} "
            f"completion (the fake counted {fake_prompt} and {fake_completion}).",
            "",
            f"(b) A steady {args.rate:g} updates/s of chat webhooks, {sent} a phase; each round "
            "while the next pass with trials runs (its trials: "
            f"{loaded}), then with no pass, then on the bare aiohttp handler. Latency in ms "
            "from the POST to the answer's sendMessage, over bare in the same round; 'other "
            "load': cores other processes on the machine used meanwhile; 'during pass': the "
            "share of the phase's updates posted while the pass ran.",
            "",
            table(
                [
                    "round",
                    "phase",
                    "answered",
                    "p50",
                    "p99",
                    "p50 over bare",
                    "p99 over bare",
                    "other load",
                    "during pass",
                ],
                load_rows,
            ),
            "",
            *verdicts,
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--proposals", type=int, default=3, help="proposals a pass (1-3)")
    parser.add_argument("--turns", type=int, default=3, help="trial turns per side (default 3)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the load (default 3)")
    parser.add_argument("--rate", type=int, default=50, help="chat updates/s while a pass runs")
    parser.add_argument(
        "--model-latency", type=float, default=0.5, help="seconds the fake model takes per call"
    )
    parser.add_argument("--write", action="store_true", help="update docs/BENCHMARKS.md")
    parser.add_argument("--serve-model", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_model:
        asyncio.run(serve_model(args.model_latency))
        return
    started = time.monotonic()
    result = run_in_scratch(lambda tmp: run(args, tmp))
    publish("trial", render(result, args), started, write=args.write)


if __name__ == "__main__":
    main()
