"""kernels/tree_plan.py: each row's verify tree on the device is the tree the host builds from the
same proposal (engine/spec/tree.py `best_first` over `family`), as a set of root paths (the two
number nodes differently), and is a valid tree in topological order."""

from __future__ import annotations

import math
import random

import pytest
import torch

from turnspec.engine.spec.tree import best_first, family
from turnspec.kernels.tree_plan import reference_tree_plan

DEV = "cuda" if torch.cuda.is_available() else "cpu"  # the kernel compiled there, else interpreted
W, G, V = 15, 2, 12  # a small vocabulary, so the lookup and the guesses meet the drafts


def _paths(tokens: list[int], parents: list[int]) -> set[tuple[int, ...]]:
    out = set()
    for i in range(len(tokens)):
        path, j = [], i
        while j > 0:
            path.append(tokens[j])
            j = parents[j]
        out.add(tuple(path[::-1]))
    return out


def _row(rng: random.Random) -> dict:
    """One row's proposal: drafts, their probabilities, two distinct guesses a position (never the
    draft), and a lookup continuation that follows the drafts a while, then leaves or ends."""
    drafts = [rng.randrange(V) for _ in range(W)]
    probs = [rng.uniform(0.05, 0.99) for _ in range(W)]
    guesses, gp = [], []
    for d in range(W):
        others = rng.sample([t for t in range(V) if t != drafts[d]], G)
        left = 1 - probs[d]
        a = rng.uniform(0.01, left * 0.9)
        guesses.append(others)
        gp.append([a, rng.uniform(0.001, a)])
    keep = rng.randint(0, W)
    cont = drafts[:keep]
    if keep < W and rng.random() < 0.7:
        pick = rng.random()
        if pick < 0.3:
            cont.append(guesses[keep][0])  # leaves with the drafter's own guess
        else:
            cont.append(rng.randrange(V))
        cont += [rng.randrange(V) for _ in range(rng.randint(0, W - keep - 1))]
    cont += [-1] * (W - len(cont))
    return dict(anchor=rng.randrange(V), drafts=drafts, probs=probs, guesses=guesses, gp=gp,
                cont=cont, unranked=rng.choice([0.2, 0.6, 0.95]), ok=rng.random() < 0.85)


def _tensors(rows: list[dict]) -> tuple[torch.Tensor, ...]:
    blocks = torch.tensor([[r["anchor"], *r["drafts"]] for r in rows])
    guesses = torch.tensor([r["guesses"] for r in rows])
    lp = torch.tensor([[[math.log(p), *(math.log(q) for q in qs)]
                        for p, qs in zip(r["probs"], r["gp"], strict=True)] for r in rows],
                      dtype=torch.float32)
    cont = torch.tensor([r["cont"] for r in rows])
    unranked = torch.tensor([math.log(r["unranked"]) for r in rows], dtype=torch.float32)
    ok = torch.tensor([r["ok"] for r in rows])
    return blocks, guesses, lp, cont, unranked, ok


@pytest.mark.parametrize("seed", range(25))
def test_the_device_tree_is_the_hosts_best_first_tree(seed: int) -> None:
    rng = random.Random(seed)
    rows = [_row(rng) for _ in range(6)]
    tokens, parents, depths = reference_tree_plan(*_tensors(rows))
    assert tokens.shape == parents.shape == depths.shape == (6, W + 1)
    for r, row in enumerate(rows):
        tok, par, dep = tokens[r].tolist(), parents[r].tolist(), depths[r].tolist()
        assert par[0] == -1 and dep[0] == 0 and tok[0] == row["anchor"]
        assert all(0 <= par[i] < i and dep[i] == dep[par[i]] + 1 for i in range(1, W + 1))
        if row["ok"]:
            blocks, probs = family(row["drafts"], row["probs"], row["guesses"], row["gp"],
                                   row["cont"], row["unranked"])
        else:
            blocks, probs = [row["drafts"]], [row["probs"]]
        host = best_first(row["anchor"], blocks, probs, W + 1)
        assert _paths(tok, par) == _paths(list(host.tokens), list(host.parents)), (seed, r)


def test_a_row_that_may_not_branch_verifies_the_drafters_chain() -> None:
    rows = [_row(random.Random(7)) for _ in range(2)]
    for r in rows:
        r["ok"] = False
    tokens, parents, depths = reference_tree_plan(*_tensors(rows))
    for r, row in enumerate(rows):
        assert tokens[r].tolist() == [row["anchor"], *row["drafts"]]
        assert parents[r].tolist() == list(range(-1, W))
        assert depths[r].tolist() == list(range(W + 1))


def test_a_sure_lookup_copy_takes_the_tree_and_a_sure_drafter_keeps_its_chain() -> None:
    """The planner's two extremes: a lookup continuation valued near 1 (the rule took it) that
    leaves at the first draft fills the tree; a drafter sure of every draft keeps its chain."""
    rng = random.Random(3)
    copy, sure = _row(rng), _row(rng)
    unranked = [min(set(range(V)) - {copy["drafts"][d], *copy["guesses"][d]}) for d in range(W)]
    copy.update(cont=unranked, unranked=0.999, ok=True, probs=[0.3] * W)
    sure.update(probs=[0.999] * W, gp=[[1e-4, 1e-5]] * W, ok=True)
    tokens, parents, _ = reference_tree_plan(*_tensors([copy, sure]))
    assert tokens[0].tolist() == [copy["anchor"], *copy["cont"]]
    assert parents[0].tolist() == list(range(-1, W))
    assert tokens[1].tolist() == [sure["anchor"], *sure["drafts"]]


@pytest.mark.parametrize("seed", range(12))
def test_the_kernel_plans_the_references_trees(seed: int) -> None:
    """The one-launch kernel (interpreted on the CPU) picks the reference's nodes; both number
    them by depth, the kernel breaking depth ties in pick order."""
    from turnspec.kernels.tree_plan import triton_tree_plan

    rng = random.Random(100 + seed)
    rows = [_row(rng) for _ in range(5)]
    args = _tensors(rows)
    want = reference_tree_plan(*args)
    dev = [a.to(DEV) for a in args]
    if seed % 2:  # the guesses as the plugin passes them: a view past the drafter's own top id
        dev[1] = torch.cat([dev[0][:, 1:, None], dev[1]], 2)[..., 1:]
        assert not dev[1].is_contiguous()
    got = [t.cpu() for t in triton_tree_plan(*dev)]
    for r in range(len(rows)):
        assert _paths(got[0][r].tolist(), got[1][r].tolist()) == \
            _paths(want[0][r].tolist(), want[1][r].tolist()), (seed, r)
        assert sorted(got[2][r].tolist()) == sorted(want[2][r].tolist())
        assert got[2][r].tolist() == sorted(got[2][r].tolist())     # topological: by depth
