"""The trees' datastore branch (engine/sglang_plugin/datastore.py) on the CPU: the host's store
drafts are the embedded engine's proposer's, the GPU's alignment takes the tokens committed
since the host's snapshot off their front (or drops a draft they contradict), a row with no
lookup continuation verifies the store's in its tree, and finished answers join a learning
store."""

from __future__ import annotations

import math
from array import array
from types import SimpleNamespace

import pytest
import torch

from tests.engine.sglang_plugin.test_history import batch_of
from turnspec.engine.sglang_plugin import trees
from turnspec.engine.sglang_plugin.config import PluginConfig
from turnspec.engine.sglang_plugin.datastore import StoreBranch, after_request_finished, aligned
from turnspec.engine.sglang_plugin.history import DeviceHistory
from turnspec.engine.sglang_plugin.state import STATE
from turnspec.engine.spec.proposers.datastore import TokenDatastore

ANSWER = [40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52]


def store_file(tmp_path) -> str:
    path = tmp_path / "answers.jsonl"
    path.write_text("".join(f'{{"completion": {ANSWER}}}\n' for _ in range(2)))
    return str(path)


def test_host_drafts_are_the_proposers_and_only_for_rows_that_may_plan(tmp_path) -> None:
    branch = StoreBranch(PluginConfig(mode="trees", datastore=store_file(tmp_path)))
    reqs = [SimpleNamespace(origin_input_ids=[1, 40, 41], output_ids=array("q", [42])),
            SimpleNamespace(origin_input_ids=[1, 40, 41], output_ids=array("q", [42])),
            SimpleNamespace(origin_input_ids=[7, 8], output_ids=array("q", [9]))]
    drafts, known, drafted = branch.drafts(reqs, [True, False, True], 4, 5, torch.device("cpu"))
    want = TokenDatastore([ANSWER]).propose([1, 40, 41, 42], 9).tokens
    assert drafts[0].tolist() == want == ANSWER[3:12]
    assert drafts[1].tolist() == [-1] * 9 and drafts[2].tolist() == [-1] * 9  # not ok / no match
    assert known.tolist() == [4, 4, 3] and drafted == 1


def test_alignment_skips_what_was_committed_since_and_drops_what_contradicts() -> None:
    hist = torch.full((4, 32), 0, dtype=torch.int64)
    lengths = torch.tensor([4, 6, 6, 20])
    hist[0, :4] = torch.tensor([1, 40, 41, 42])                    # the host is up to date
    hist[1, :6] = torch.tensor([1, 40, 41, 42, 43, 44])            # two committed since
    hist[2, :6] = torch.tensor([1, 40, 41, 42, 43, 99])            # ... one of them not the draft's
    drafts = torch.tensor([ANSWER[3:12]] * 4)
    known = torch.tensor([4, 4, 4, 4])                             # row 3: 16 since, past the lag
    got = aligned(hist, lengths, torch.arange(4, dtype=torch.int32), drafts, known, 4)
    assert got.tolist() == [[43, 44, 45, 46], [45, 46, 47, 48], [-1] * 4, [-1] * 4]


def test_a_row_without_a_lookup_continuation_verifies_the_stores_in_its_tree(tmp_path) -> None:
    STATE.configure(PluginConfig(mode="trees", datastore=store_file(tmp_path)))
    STATE.store, STATE.device_stats, STATE.overlap = StoreBranch(STATE.config), None, False
    greedy = SimpleNamespace(top_k=1, temperature=0.0, frequency_penalty=0.0,
                             presence_penalty=0.0, repetition_penalty=1.0)
    req = SimpleNamespace(rid="a", req_pool_idx=0, grammar=None, sampling_params=greedy,
                          origin_input_ids=[1, 2, 3, 40, 41], output_ids=array("q", [42]))
    batch = batch_of([req], extend=False, cap=64)
    STATE.history = DeviceHistory(6, 64, "cpu")
    STATE.history.write([req])
    n, w = 8, 7
    blocks = torch.tensor([[42, 9, 9, 9, 9, 9, 9, 9]])             # the drafter's block: not the store's
    top = torch.tensor([[9, 10, 11, 12]] * w).view(1, w, 4)
    lp = torch.tensor([[math.log(0.3), math.log(0.1), math.log(0.05), math.log(0.05)]] * w)
    step = SimpleNamespace(batch=batch, tree=None)
    try:
        drafter_block = blocks[:, 1:].clone()
        trees.plan(step, blocks, [True], [False], (top, lp.view(1, w, 4)))
        tree = step.tree
        assert torch.equal(tree.drafted, drafter_block)            # settle's drafts, not a count
        tok, par = tree.tokens[0].tolist(), tree.parents[0].tolist()
        path = [i for i in range(n) if par[i] == 0 and tok[i] == 43]
        assert path, tok                                           # the store's first token
        at, seen = path[0], [43]
        while True:
            kids = [i for i in range(n) if par[i] == at]
            nxt = [i for i in kids if tok[i] == ANSWER[3 + len(seen)]]
            if not nxt:
                break
            at = nxt[0]
            seen.append(tok[at])
        assert seen == ANSWER[3 : 3 + len(seen)] and len(seen) >= 3, (tok, par)
        assert STATE.stats["store_drafts"] == 1
    finally:
        STATE.store, STATE.history, STATE.device_stats = None, None, None
        STATE.stats.clear()
        STATE.configure(PluginConfig(mode="lookup"))


class FINISH_ABORT:  # noqa: N801 - SGLang's name for an aborted request's reason
    pass


def test_finished_answers_join_a_learning_store_unless_aborted() -> None:
    branch = StoreBranch(PluginConfig(mode="trees", learn_tokens=1000), background=False)
    done = SimpleNamespace(rid="a", output_ids=array("q", ANSWER), finished_reason=object())
    gone = SimpleNamespace(rid="b", output_ids=array("q", [7, 8, 9, 10, 11]),
                           finished_reason=FINISH_ABORT())
    branch.watch([done, gone])
    for rid in ("a", "b", "c"):                                    # c: never seen, nothing
        STATE.store = branch
        after_request_finished(None, object(), rid=rid, natural_stop=False)
    STATE.store = None
    branch.store.wait()                                           # index what was learned
    assert branch.store.answers == 1 and not branch.live
    assert branch.store.propose([40, 41, 42], 3).tokens == [43, 44, 45]
    branch.store.close()


def test_the_store_rides_on_trees_only() -> None:
    with pytest.raises(ValueError, match="expected TURNSPEC_SGLANG_SPEC=trees"):
        PluginConfig(mode="lookup", learn_tokens=10)
    with pytest.raises(ValueError, match="expected tokens >= 0"):
        PluginConfig(mode="trees", learn_tokens=-1)
