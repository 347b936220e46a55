"""swaps: the planned swaps of a row's extra verify branches, checked against the expected
accepted drafts computed by enumerating every target continuation."""

from __future__ import annotations

import itertools

import pytest

from turnspec.engine.spec.swaps import apply_swaps, first_swaps, plan_swaps

OTHER = 99  # a token no block proposes: the rest of each position's probability


def expected_best(blocks: list[list[int]], dist: list[dict[int, float]]) -> float:
    """E[the longest prefix any of `blocks` shares with the truth], the truth drawn position by
    position, independently, from `dist`."""
    total = 0.0
    for truth in itertools.product(*(d.items() for d in dist)):
        prob = 1.0
        for _, p in truth:
            prob *= p
        best = 0
        for block in blocks:
            n = 0
            while n < len(block) and block[n] == truth[n][0]:
                n += 1
            best = max(best, n)
        total += prob * best
    return total


def case(rows: list[list[float]]) -> tuple[list[int], list[float], list[list[tuple[int, float]]],
                                           list[dict[int, float]]]:
    """Per position, probabilities of the drafter's draft (token 10 + d) and of its next guesses
    (tokens 20 + d, 30 + d, ...) -> own, own_p, alts and the truth distribution."""
    own, own_p, alts, dist = [], [], [], []
    for d, ps in enumerate(rows):
        toks = [10 * (k + 1) + d for k in range(len(ps))]
        own.append(toks[0])
        own_p.append(ps[0])
        alts.append(list(zip(toks[1:], ps[1:], strict=True)))
        dist.append({**dict(zip(toks, ps, strict=True)), OTHER: 1.0 - sum(ps)})
    return own, own_p, alts, dist


CASES = [
    [[0.95, 0.03], [0.5, 0.4], [0.7, 0.2], [0.6, 0.3]],   # sure of the first, unsure of the next
    [[0.4, 0.35, 0.1], [0.9, 0.05, 0.02], [0.8, 0.1, 0.05]],  # unsure of the first
    [[0.5, 0.45], [0.5, 0.45], [0.5, 0.45]],               # near ties everywhere: branch off branches
]


@pytest.mark.parametrize("rows", CASES)
def test_each_plan_gain_is_what_its_branch_adds_to_the_tree(rows: list[list[float]]) -> None:
    """Adding the planned branches one by one raises the exact expected best-prefix length by
    each branch's stated gain."""
    own, own_p, alts, dist = case(rows)
    blocks = [own]
    before = expected_best(blocks, dist)
    plan = plan_swaps(own_p, alts, 4)
    assert len(plan) == 4
    for gain, swaps in plan:
        blocks.append(apply_swaps(own, swaps))
        after = expected_best(blocks, dist)
        assert after - before == pytest.approx(gain, abs=1e-9)
        before = after
    assert [g for g, _ in plan] == sorted((g for g, _ in plan), reverse=True)


@pytest.mark.parametrize("rows", CASES)
def test_the_first_planned_branch_is_the_best_single_branch(rows: list[list[float]]) -> None:
    """Over every block that swaps one draft for one of the next guesses, none adds more to the
    expected accepted drafts than the plan's first."""
    own, own_p, alts, dist = case(rows)
    base = expected_best([own], dist)
    (gain, _), = plan_swaps(own_p, alts, 1)
    singles = [apply_swaps(own, [(d, t)]) for d, guesses in enumerate(alts) for t, _ in guesses]
    best = max(expected_best([own, s], dist) - base for s in singles)
    assert gain == pytest.approx(best, abs=1e-9)


def test_a_sure_first_draft_is_not_swapped() -> None:
    """Sure of the first draft, unsure of the second: the plan swaps the second (the earlier
    rule, swapping the first draft, would add 0.03 * (1 + ...) at most)."""
    own, own_p, alts, _ = case(CASES[0])
    (_, swaps), = plan_swaps(own_p, alts, 1)
    assert swaps == ((1, 21),)


def test_branches_off_branches_when_guesses_tie() -> None:
    own, own_p, alts, _ = case(CASES[2])
    plan = plan_swaps(own_p, alts, 3)
    assert any(len(swaps) > 1 for _, swaps in plan), plan


def test_positions_past_the_verified_drafts_and_bad_input() -> None:
    """A confidence cut verifies fewer drafts than the block holds: no swap lands past them."""
    own, own_p, alts, _ = case(CASES[1])
    for _, swaps in plan_swaps(own_p[:1], alts, 3):
        assert all(d == 0 for d, _ in swaps)
    assert plan_swaps([], [], 2) == []
    with pytest.raises(ValueError, match="expected one list per draft"):
        plan_swaps(own_p, alts[:1], 2)
    with pytest.raises(ValueError, match="expected 0 or more"):
        plan_swaps(own_p, alts, -1)


def eager_plan(own_p: list[float], alts: list[list[tuple[int, float]]],
               n: int) -> list[tuple[float, tuple[tuple[int, int], ...]]]:
    """The plan with every guess of every position pushed at once: what plan_swaps' lazy
    siblings must reproduce."""
    w = len(own_p)
    tail = [0.0] * (w + 1)
    for d in range(w - 1, -1, -1):
        tail[d] = own_p[d] * (1.0 + tail[d + 1])
    frontier = []

    def children(swaps, start, reach):
        for d in range(start, w):
            for token, q in alts[d]:
                frontier.append((reach * q * (1.0 + tail[d + 1]), (*swaps, (d, token)), reach * q))
            reach *= own_p[d]

    children((), 0, 1.0)
    out = []
    while frontier and len(out) < n:
        best = max(frontier, key=lambda f: f[0])
        frontier.remove(best)
        out.append((best[0], best[1]))
        children(best[1], best[1][-1][0] + 1, best[2])
    return out


@pytest.mark.parametrize("seed", range(20))
def test_lazy_siblings_plan_what_pushing_every_guess_plans(seed: int) -> None:
    """Random drafter rows (15 drafts, 1..7 guesses a position, most likely first): the same
    gains, and the same branches wherever the gains differ."""
    import random

    rng = random.Random(seed)
    k = rng.randint(1, 7)
    own_p, alts = [], []
    for d in range(15):
        mass = sorted((rng.random() ** 2 for _ in range(k + 1)), reverse=True)
        scale = rng.uniform(0.3, 1.0) / sum(mass)
        own_p.append(mass[0] * scale)
        alts.append([(100 * d + j, m * scale) for j, m in enumerate(mass[1:])])
    n = rng.randint(1, 15)
    lazy, eager = plan_swaps(own_p, alts, n), eager_plan(own_p, alts, n)
    assert [g for g, _ in lazy] == pytest.approx([g for g, _ in eager], rel=1e-12)
    gains = [g for g, _ in eager]
    for (g, sw), (_, esw) in zip(lazy, eager, strict=True):
        if gains.count(g) == 1:
            assert sw == esw


def test_first_swaps_swap_the_first_draft_only_where_there_is_one() -> None:
    assert first_swaps([5, 6, 7], [2, 3]) == [[2, 6, 7], [3, 6, 7]]
    assert first_swaps([-1, -1], [2, 3]) == []   # a confidence cut left no draft
    assert first_swaps([], [2]) == []
