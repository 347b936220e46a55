"""scripts/analysis/tree_values.py on a hand-built turn: the lattice holds a path of two swapped
guesses that the plugin's family (single swaps) cannot, the family walk is branch_lab's tree of
the family, and the fitted acceptance rates read what the target accepted."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "scripts/analysis"))  # tree_values imports branch_lab


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / f"scripts/analysis/{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


lab = _load("branch_lab")
tv = _load("tree_values")


def turn() -> lab.Turn:
    """Anchors 0..5 over ids 1, 10, 20, ...: at every anchor the drafter drafts 7 then 8 (never
    right) and ranks the target's next two tokens as its first guesses."""
    ids = [1, 10, 20, 30, 40, 50, 60, 70]
    t = lab.Turn(ids, 0, 6, [], [], [], [], [])
    for a in range(6):
        nxt = ids[a + 1: a + 3] + [0] * (2 - len(ids[a + 1: a + 3]))
        t.drafts.append([7, 8])
        t.probs.append([0.6, 0.6])
        t.expected.append(0.5)
        t.guesses.append([[nxt[0], 3, 4], [nxt[1], 5, 6]])
        t.guess_probs.append([[0.3, 0.05, 0.05], [0.3, 0.05, 0.05]])
    return t


def test_the_lattice_holds_two_swaps_where_the_family_holds_one() -> None:
    t = turn()
    assert tv.lattice_depth(t, 0, [], 16, [10, 20]) == 2
    fam_tokens, fam_steps = tv.walk(t, 16, lambda k, d, q: q)
    lat_tokens, lat_steps = tv.walk(t, 16, None)
    assert fam_tokens == lat_tokens == 6
    assert fam_steps == 3 and lat_steps == 2  # 2 a step (1 + bonus) against 3 (2 + bonus)


def test_the_family_walk_is_branch_labs_family_tree() -> None:
    t = turn()
    assert tv.walk(t, 16, lambda k, d, q: q) == lab.walk(t, 2, "family", None, 16)


def test_the_fitted_rates_read_the_targets_choices() -> None:
    t = turn()
    _, _, kinds = tv.labelled(t, 0, 0, lab.PromptLookup())
    assert kinds[0] == ["draft", "draft"] and ["swap", "after"] in kinds
    table = tv.fit([t])
    draft = table[tv.cell("draft", 0, 0.6)]  # never right: pulled below its 0.6
    swap = table[tv.cell("swap", 0, 0.3)]   # right at every anchor: pulled above its 0.3
    assert draft < 0.6 and swap > 0.3
