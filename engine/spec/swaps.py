"""Which drafts a row's extra verify branches swap (`--spec-branch-plan planned`): the swaps
that add the most expected accepted drafts, by the drafter's own probabilities.

A DFlash drafter proposes a whole block in one pass, with a distribution at every position.
Verifying several blocks that share a prefix is verifying a token tree: the row commits the
longest prefix that any of them shares with the target. If the positions are read as
independent, with p_k the drafter's probability of its draft k and q its probability of an
alternative t at position d, the block `own[:d] + [t] + own[d+1:]` adds the tree nodes below
that swap, and the drafts the target is expected to accept among them are

    gain = P(own[:d] accepted) * q * (1 + E[accepted drafts of own after d | the swap held])
         = prod(p_0..p_{d-1}) * q * (1 + p_{d+1} + p_{d+1} p_{d+2} + ...)

A swap may also follow another (branch off a branch): its prefix probability then runs through
the earlier swap's q. `plan_swaps` expands the tree best first, as EAGLE-2's dynamic draft
tree does, under the constraint that every branch is one verify row: a block that follows the
drafter's own drafts after its last swap.

Why not always swap the first draft (`first`, the earlier rule): on generic chat half of the
blocks first fail at the first draft and a quarter at the second (docs/cpu-runs/
miss-rank-generic-new.json); where the drafter is sure of the first token and unsure of the
second, a swap at the first position buys almost nothing.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence

# "first": the drafter's block under its next most likely first tokens (`first_swaps`);
# "planned": the best-first tree below (plan_swaps)
BRANCH_PLANS = ("first", "planned")


def _tail(p: Sequence[float]) -> list[float]:
    """tail[d] = expected accepted drafts from position d on, given the block held before d:
    p_d + p_d p_{d+1} + ... (tail[len(p)] = 0)."""
    out = [0.0] * (len(p) + 1)
    for d in range(len(p) - 1, -1, -1):
        out[d] = p[d] * (1.0 + out[d + 1])
    return out


def plan_swaps(own_p: Sequence[float], alts: Sequence[Sequence[tuple[int, float]]],
               n: int) -> list[tuple[float, tuple[tuple[int, int], ...]]]:
    """Up to `n` branches of a block whose drafts the drafter gives probabilities `own_p` (one
    per draft it verifies), each as (expected accepted drafts it adds, its swaps ((position,
    token), ...) in position order), best first. `alts[d]`: (token, probability) of the
    drafter's next guesses at position d, most likely first; a position past `own_p` is never
    swapped."""
    if n < 0:
        raise ValueError(f"plan_swaps: n={n}, expected 0 or more")
    w = len(own_p)
    if len(alts) < w:
        raise ValueError(f"plan_swaps: {len(alts)} positions of alternatives for {w} drafts; "
                         "expected one list per draft")
    tail = _tail(own_p)
    # heap of (-gain, tiebreak, swaps, prefix probability before the last swap, the last swap's
    # guess rank). A position's guesses come most likely first, so a swap's gain never exceeds
    # its better sibling's: only the best guess of each position enters the heap, and the next
    # one when its sibling leaves it (the same plan as pushing every guess, at a fraction of
    # the heap work with many guesses a position).
    heap: list[tuple[float, int, tuple[tuple[int, int], ...], float, int]] = []
    count = 0

    def push(swaps: tuple[tuple[int, int], ...], d: int, rank: int, reach: float) -> None:
        """The branch `swaps` plus a swap of position d for its guess of rank `rank`, where the
        prefix before d holds with probability `reach`."""
        nonlocal count
        if rank >= len(alts[d]):
            return
        token, q = alts[d][rank]
        gain = reach * q * (1.0 + tail[d + 1])
        if gain > 0.0:
            heapq.heappush(heap, (-gain, count, (*swaps, (d, token)), reach, rank))
            count += 1

    def push_children(swaps: tuple[tuple[int, int], ...], start: int, reach: float) -> None:
        """The best single further swap at each position >= start of a branch whose prefix
        before `start` holds with probability `reach`."""
        for d in range(start, w):
            push(swaps, d, 0, reach)
            reach *= own_p[d]
            if reach <= 0.0:
                break

    push_children((), 0, 1.0)
    out: list[tuple[float, tuple[tuple[int, int], ...]]] = []
    while heap and len(out) < n:
        neg, _, swaps, reach, rank = heapq.heappop(heap)
        out.append((-neg, swaps))
        d, q = swaps[-1][0], alts[swaps[-1][0]][rank][1]
        push(swaps[:-1], d, rank + 1, reach)           # its next sibling
        push_children(swaps, d + 1, reach * q)          # and the swaps that follow it
    return out


def apply_swaps(own: Sequence[int], swaps: Sequence[tuple[int, int]]) -> list[int]:
    """`own` with each (position, token) of `swaps` in place."""
    block = list(own)
    for d, token in swaps:
        block[d] = token
    return block


def first_swaps(own: Sequence[int], firsts: Sequence[int]) -> list[list[int]]:
    """The "first" plan: `own` with its first draft swapped for each of the drafter's next most
    likely first tokens `firsts`; none where a confidence cut left no draft."""
    return [[t, *own[1:]] for t in firsts] if own and own[0] >= 0 else []
