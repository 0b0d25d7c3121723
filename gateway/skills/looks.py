"""The verdict on a skill's ratings: a group-sequential test, one look per step of evidence.

The question is whether answers that loaded a skill are rated 👍 less often than the
comparable answers without it. The gateway asks it once per synthesis pass, never per
rating, so the test is taken at *looks*: a look is due when the evidence passes the next
step of a fixed schedule, is taken by the first pass after that, and is recorded in the
store (`skill_looks`) with the skill's text, so no look is ever taken twice, however many
passes or restarts follow. Each look is a one-sided z-test of the difference of two rates
(each smoothed by one 👍 and one 👎) at its own share `alpha_k` of the bound
`false_alarms`, and the shares sum to the bound. A harmless skill is therefore called
harmful at most `false_alarms` of the time, over every look it will ever have: the chance
that any look errs is at most the sum of the looks' chances (the union bound), whatever
the passes' timing and whichever looks are skipped (a pass that finds two steps passed
takes the later look only). That holds to the normal approximation; the simulation
(`python -m eval.retirement`) measures it on ratings: 2.0 to 4.7% of neutral runs at 5%.

The evidence of a look is the effective sample size of the difference, `n = L*W/(L+W)`
for L rated answers with the skill and W without it. The schedule is tuned to the margin
(the smallest harm worth retiring for), as the mixture test before it was: half the bound
is spent at the *design look*, `n* = (z(alpha/2) / (2 * margin))^2` (43 for 15 points at
5%), where a harm of the margin's size is first about as likely caught as not; a quarter
before it, so stark harm is caught early (1/64 when both sides first hold the minimum
evidence and at n*/8, 1/32 at n*/4, 1/16 at n*/2, 1/8 at n*/sqrt(2)); the last quarter
after it, halving at each doubling (1/8 at sqrt(2) n*, 1/16 at 2 sqrt(2) n*, ...), so a
skill keeps being measured for good. At the design look the boundary is z = 1.96 where the
mixture test, checked after every rating, asked about 2.8.

A look calls a skill *harmful* when z passes its boundary and a harm of the margin's size
is within the difference's 95% interval (a small harm proven by a great many ratings is
not one worth retiring for); *helpful* is the mirror image. A verdict reached at a look
stands for that text.
"""

from __future__ import annotations

import math
from statistics import NormalDist

from gateway.skills.verdict import Counts, Verdict

EARLY = (
    (0.0, 1 / 64),
    (1 / 8, 1 / 64),
    (1 / 4, 1 / 32),
    (1 / 2, 1 / 16),
    (math.sqrt(0.5), 1 / 8),
    (1.0, 1 / 2),
)
"""The looks up to the design look: (evidence as a share of n*, share of the bound)."""
TAIL = 1 / 4
"""The bound's share left for the looks after the design look, halved at each."""


def design_size(margin: float, false_alarms: float) -> float:
    """n*: the evidence at which half the bound is spent (see the module's docstring)."""
    z = NormalDist().inv_cdf(1 - false_alarms / 2)
    return (z / (2 * margin)) ** 2


def evidence(loaded: Counts, without: Counts) -> float:
    """The effective sample size of the difference of the two rates."""
    total = loaded.rated + without.rated
    return loaded.rated * without.rated / total if total else 0.0


def look_due(
    loaded: Counts, without: Counts, *, min_evidence: int, margin: float, false_alarms: float
) -> int:
    """The latest look the counts have reached (0 the first), or -1 before the first."""
    if min(loaded.rated, without.rated) < min_evidence:
        return -1
    n = evidence(loaded, without) / design_size(margin, false_alarms)
    if n >= math.sqrt(2):
        return len(EARLY) + math.floor(math.log2(n / math.sqrt(2)) + 1e-9)
    return max(k for k, (step, _) in enumerate(EARLY) if n >= step)


def share(look: int) -> float:
    """The share of the false-alarm bound that look `look` spends."""
    if look < len(EARLY):
        return EARLY[look][1]
    return TAIL * 0.5 ** (look - len(EARLY) + 1)


def boundary(look: int, false_alarms: float) -> float:
    """The z a difference must pass at look `look`."""
    return NormalDist().inv_cdf(1 - false_alarms * share(look))


def z_score(worse: Counts, better: Counts) -> float:
    """How many standard errors rate(better) exceeds rate(worse), each rate smoothed."""
    p1 = (worse.up + 1) / (worse.rated + 2)
    p2 = (better.up + 1) / (better.rated + 2)
    v = p1 * (1 - p1) / (worse.rated + 2) + p2 * (1 - p2) / (better.rated + 2)
    return (p2 - p1) / math.sqrt(v)


def at_look(
    look: int,
    loaded: Counts,
    without: Counts,
    interval: tuple[float, float],
    *,
    margin: float,
    false_alarms: float,
) -> Verdict:
    """The verdict of look `look` on these counts and the difference's 95% interval."""
    z, bound = z_score(loaded, without), boundary(look, false_alarms)
    low, high = interval
    if low <= -margin and z >= bound:
        return "harmful"
    if high >= margin and -z >= bound:
        return "helpful"
    return "unclear"
