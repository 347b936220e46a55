"""The planner: the lookup rule, each row's candidate blocks in their order, and the step's
budget of extra verify rows handed out by rank."""

from __future__ import annotations

from collections.abc import Sequence

from turnspec.engine.spec.options import SpecOptions
from turnspec.engine.spec.planner import (
    LOOKUP_AGREE,
    LOOKUP_MATCH,
    RowInput,
    plan_step,
    row_candidates,
    takes_lookup,
)
from turnspec.engine.spec.proposers import Proposal
from turnspec.engine.spec.proposers.drafter import DrafterBlocks
from turnspec.engine.spec.swaps import apply_swaps, plan_swaps
from turnspec.engine.spec.width import Curve, WidthRule


class FixedProposals:
    """A proposer whose proposal for a row is set by the test: keyed by the row's first token."""

    def __init__(self, by_first: dict[int, Proposal]) -> None:
        self.by_first = by_first
        self.asked: list[int] = []

    def propose(self, tokens: Sequence[int], width: int) -> Proposal:
        self.asked.append(tokens[0])
        p = self.by_first.get(tokens[0], Proposal())
        return Proposal(p.tokens[:width], p.match)


def test_lookup_is_taken_when_the_drafter_expects_little_or_agrees_and_it_runs_longer() -> None:
    assert LOOKUP_AGREE == 2
    cont = [5, 6, 7, 8, 9]
    assert takes_lookup(cont, [1, 2], verified=6, expected=1.5, below=2.0)       # drafter unsure
    assert not takes_lookup(cont, [1, 2], verified=2, expected=3.0, below=2.0)   # sure, disagrees
    assert takes_lookup(cont, [5, 6], verified=3, expected=3.0, below=2.0)       # agrees, longer
    assert not takes_lookup(cont, [5, 6], verified=5, expected=3.0, below=2.0)   # not longer
    assert not takes_lookup(cont, [5, 1], verified=1, expected=3.0, below=2.0)   # agrees on one only
    assert not takes_lookup([5], [5, 6], verified=0, expected=0.0, below=2.0)    # one token: never


def test_a_long_copy_in_progress_is_taken_over_a_confident_drafter() -> None:
    cont = list(range(10, 25))                            # 15 tokens to copy
    sure = dict(verified=15, expected=4.0, below=2.0)     # the drafter expects 4, disagrees
    assert not takes_lookup(cont, [1, 2], **sure)                              # no match given
    assert not takes_lookup(cont, [1, 2], **sure, match=LOOKUP_MATCH - 1)      # too short a match
    assert takes_lookup(cont, [1, 2], **sure, match=LOOKUP_MATCH)              # a copy in progress
    assert not takes_lookup(cont[:5], [1, 2], **sure, match=16)                # offers 5, not > 4 + 1
    assert takes_lookup(cont[:6], [1, 2], **sure, match=16)


def test_the_datastore_draft_takes_the_last_place() -> None:
    own = chosen = [5, 6, 7]
    swapped = [[2, 6, 7], [3, 6, 7]]
    assert row_candidates(chosen, own, [8, 8], swapped, 3, [4, 4]) == \
        [[8, 8, -1], [2, 6, 7], [4, 4, -1]]
    assert row_candidates(chosen, own, [], swapped, 2, [4]) == swapped   # one token: no block
    assert row_candidates(chosen, own, [], swapped, 2, [5, 6, 7]) == swapped  # the chosen
    assert row_candidates(chosen, own, [], swapped, 2, [2, 6, 7]) == [[3, 6, 7], [2, 6, 7]]
    assert row_candidates(chosen, own, [], swapped, 1, [4, 4]) == [[4, 4, -1]]


def five_rows() -> tuple[list[RowInput], DrafterBlocks, FixedProposals]:
    """Rows 0..4 (row r's tokens start with r), width 3; row 3 samples; row 4's confidence cut
    left no draft. Row 0's drafter expects little, so it takes its lookup continuation."""
    rows = [RowInput([r, 1, 1], 3, r != 3) for r in range(5)]
    own = [[5, 6, 7]] * 4 + [[-1, -1, -1]]
    firsts = [[2, 3], [2, 3], [9, 3], [2, 3], [2, 3]]
    drafted = DrafterBlocks(
        argmax=[[5, 6, 7]] * 5, drafts=[list(o) for o in own], expected=[0.5, 5.0, 5.0, 5.0, 5.0],
        probs=[[0.9, 0.9, 0.9]] * 5,
        guesses=[[f, [1, 1], [1, 1]] for f in firsts], guess_probs=[[[0.05, 0.01]] * 3] * 5)
    lookup = FixedProposals({0: Proposal([9, 9], 6), 1: Proposal([5, 6, 7], 3),
                             2: Proposal([8, 8, 8], 2), 3: Proposal([1, 2], 2)})
    return rows, drafted, lookup


def by_row(plan, rows: int) -> dict[int, list[list[int]]]:
    out: dict[int, list[list[int]]] = {}
    for blk, r in zip(plan.blocks[rows:], plan.owner[rows:], strict=True):
        out.setdefault(r, []).append(blk)
    return out


def test_extra_blocks_in_order_without_repeats_and_within_the_limits() -> None:
    """The other block of the lookup choice comes first, then the drafter's block under its next
    first tokens; repeats of a block already verified are skipped, sampled rows get none, a
    confidence cut with no draft left gets no swapped first token, and the per-row and per-step
    limits hold, the step's rows handed out by rank (every row's first extra block before any
    row's second)."""
    rows, drafted, lookup = five_rows()
    plan = plan_step(rows, drafted, SpecOptions(branches=4, plan="first"), lookup)
    assert plan.blocks[:5] == [[9, 9, -1], [5, 6, 7], [5, 6, 7], [5, 6, 7], [-1, -1, -1]]
    assert by_row(plan, 5) == {
        0: [[5, 6, 7], [2, 6, 7], [3, 6, 7]],   # drafter's own, then swapped firsts
        1: [[2, 6, 7], [3, 6, 7]],              # its continuation repeats the chosen
        2: [[8, 8, 8], [9, 6, 7], [3, 6, 7]],
    }                                           # row 3 samples, row 4 has no draft
    assert plan.owner[5:] == [0, 1, 2, 0, 1, 2, 0, 2]   # by rank: every row's first first
    assert plan.verify_width == 3
    assert plan_step(rows, drafted, SpecOptions(branches=2, plan="first"), lookup).owner[5:] == [0, 1, 2]
    capped = plan_step(rows, drafted, SpecOptions(branches=4, plan="first", max_extra_rows=4), lookup)
    assert capped.owner[5:] == [0, 1, 2, 0] and capped.blocks[-1] == [2, 6, 7]  # row 0's second
    paused = [RowInput(r.tokens, 0, r.greedy) for r in rows]
    assert plan_step(paused, drafted, SpecOptions(branches=4, plan="first"), lookup).owner == \
        [0, 1, 2, 3, 4]
    assert lookup.asked == [0, 1, 2, 3, 4] * 3   # speculating rows only
    plain = plan_step(rows, drafted, SpecOptions(lookup=False), lookup)
    assert plain.blocks == drafted.drafts and len(lookup.asked) == 15  # no lookup asked


def test_planned_swaps_follow_the_tree_and_a_row_plans_its_share_of_the_budget() -> None:
    """One greedy row, 16 branches, at most 2 extra rows: the row plans 2 swapped blocks, the
    best-first tree's (swaps.py). The datastore's continuation takes a row's last place, so
    under a cap it is verified only where the row's other candidates leave room."""
    probs, guesses, gp = [0.6, 0.5, 0.9], [[11, 12], [21, 22], [31, 32]], \
        [[0.3, 0.1], [0.4, 0.05], [0.05, 0.01]]
    drafted = DrafterBlocks([[5, 6, 7]], [[5, 6, 7]], [2.0], [probs], [guesses], [gp])
    rows = [RowInput([0, 1, 1], 3, True)]
    store = FixedProposals({0: Proposal([4, 4], 3)})
    tree = plan_swaps(probs, [list(zip(g, q, strict=True)) for g, q in zip(guesses, gp, strict=True)], 2)
    plan = plan_step(rows, drafted, SpecOptions(branches=16, max_extra_rows=2), FixedProposals({}))
    assert plan.blocks[1:] == [apply_swaps([5, 6, 7], sw) for _, sw in tree]
    capped = plan_step(rows, drafted, SpecOptions(branches=16, max_extra_rows=2),
                       FixedProposals({}), store)
    assert capped.blocks[1:] == plan.blocks[1:]
    three = plan_step(rows, drafted, SpecOptions(branches=3), FixedProposals({}), store)
    assert three.blocks[1:] == [plan.blocks[1], [4, 4, -1]]


def test_a_width_rule_gives_the_rows_as_many_blocks_as_pay() -> None:
    """Under a width rule the step's budget comes from the measured cost of the pass: free
    extra tokens give every greedy row its branches, a pass whose cost grows with every token
    none; the rows that verify one block (the sampled row, the row with no draft) count in it."""
    rows, drafted, lookup = five_rows()
    tau = Curve.of([(1, 2.0), (4, 3.0)])
    free = WidthRule(tau, Curve.of([(1, 1.0), (10_000, 1.0)]))
    linear = WidthRule(tau, Curve.of([(1, 1.0), (2, 2.0)]))
    wide = plan_step(rows, drafted, SpecOptions(branches=4, plan="first", width=free), lookup)
    assert wide.owner == plan_step(rows, drafted, SpecOptions(branches=4, plan="first"), lookup).owner
    narrow = plan_step(rows, drafted, SpecOptions(branches=4, plan="first", width=linear), lookup)
    assert narrow.owner == [0, 1, 2, 3, 4]
