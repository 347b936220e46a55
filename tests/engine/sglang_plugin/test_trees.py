"""Verify trees (TURNSPEC_SGLANG_SPEC=trees) through the hooks as DFLASH's worker calls them, on
the CPU: each step plans trees into the verify's block, attaches their mask and positions, and
after a target pass whose choice after each node is the row's true continuation (where the
node's path follows it) puts the verify in path order, so that DFLASH's linear accept commits
the longest prefix of that continuation any tree node holds, plus the target's bonus, and the
path's KV sits in the slots of its positions. Plain namespaces for SGLang's batch, verify input,
logits output and KV pool (as in test_history.py); the KV pool moves rows as SGLang's does."""

from __future__ import annotations

import math
import random
from array import array
from types import SimpleNamespace

import pytest
import torch

from tests.engine.sglang_plugin.test_history import batch_of, rows
from turnspec.engine.sglang_plugin import hooks, trees
from turnspec.engine.sglang_plugin.config import PluginConfig
from turnspec.engine.sglang_plugin.state import STATE
from turnspec.kernels.tree_mask import ancestors_of, reference_tree_mask

V, W = 6, 7  # vocabulary, drafts a block (N = 8 nodes)


class Pool:
    """KV rows per slot; `move_kv_cache` as SGLang's native move (gather, then scatter)."""

    def __init__(self, slots: int) -> None:
        self.k = torch.arange(slots * 2, dtype=torch.float32).view(slots, 2)

    def move_kv_cache(self, tgt_loc: torch.Tensor, src_loc: torch.Tensor) -> None:
        self.k[tgt_loc] = self.k[src_loc]


def target_choices(tree: trees.Tree, truth: list[list[int]], rng: random.Random) -> torch.Tensor:
    """[b, N]: the target's choice after each node: the truth's next token where the node's path
    is the truth's prefix, else any token (the target's view of a wrong path)."""
    b, n = tree.tokens.shape
    out = torch.zeros((b, n), dtype=torch.int64)
    for r in range(b):
        tok, par, dep = (x[r].tolist() for x in (tree.tokens, tree.parents, tree.depths))
        on = [True] * n
        for i in range(1, n):
            on[i] = on[par[i]] and tok[i] == truth[r][dep[i] - 1]
        for i in range(n):
            out[r, i] = truth[r][dep[i]] if on[i] else rng.randrange(V)
    return out


def longest(tree: trees.Tree, r: int, truth: list[int]) -> int:
    tok, par, dep = (x[r].tolist() for x in (tree.tokens, tree.parents, tree.depths))
    best, on = 0, [True] * len(tok)
    for i in range(1, len(tok)):
        on[i] = on[par[i]] and tok[i] == truth[dep[i] - 1]
        best = max(best, dep[i] if on[i] else 0)
    return best


@pytest.mark.parametrize("seed", range(4))
def test_a_tree_step_commits_the_longest_true_prefix_and_moves_its_kv(seed: int) -> None:
    rng, gen = random.Random(seed), torch.Generator().manual_seed(seed)
    STATE.configure(PluginConfig(mode="trees", lookup_below=3.0))
    STATE.history, STATE.device_stats, STATE.overlap = None, None, False
    STATE.stats.clear()
    greedy = SimpleNamespace(top_k=1, temperature=0.0, frequency_penalty=0.0,
                             presence_penalty=0.0, repetition_penalty=1.0)
    sampled = SimpleNamespace(top_k=50, temperature=0.7, frequency_penalty=0.0,
                              presence_penalty=0.0, repetition_penalty=1.0)
    reqs = [SimpleNamespace(rid=f"r{i}", req_pool_idx=slot, grammar=None,
                            sampling_params=sampled if i == 2 else greedy,
                            origin_input_ids=[rng.randrange(V) for _ in range(rng.randrange(12, 30))],
                            output_ids=array("q", [rng.randrange(V)])) for i, slot in enumerate([3, 0, 1])]
    hooks.around_forward(lambda w, b: SimpleNamespace(next_token_ids=torch.zeros(3, dtype=torch.int64),
                                                      accept_lens=None, speculative_num_draft_tokens=None),
                         object(), batch_of(reqs, extend=True, cap=64))
    STATE.history.lengths -= 1  # the prefill's own token was written from output_ids already
    n, pool, bs = W + 1, Pool(64), len(reqs)
    try:
        for _ in range(4):
            blocks = torch.randint(0, V, (bs, n), generator=gen)
            blocks[:, 0] = torch.tensor([r.output_ids[-1] for r in reqs])
            top = torch.stack([torch.stack([torch.tensor([int(blocks[i, 1 + d]),
                               *rng.sample([t for t in range(V) if t != int(blocks[i, 1 + d])], 2)])
                               for d in range(W)]) for i in range(bs)]).view(bs * W, 3)
            lp = torch.tensor([[math.log(rng.uniform(0.3, 0.95)), math.log(0.25), math.log(0.05)]
                               for _ in range(bs * W)])
            worker = SimpleNamespace(_draft_sampler=SimpleNamespace(top_ids=top, top_lp=lp))
            truth = [[rng.randrange(V) for _ in range(n)] for _ in reqs]
            for i in range(bs):  # the truth often follows the drafts a while, or a guess
                k = rng.randrange(W + 1)
                truth[i][:k] = blocks[i, 1 : 1 + k].tolist()
                if k < W and rng.random() < 0.8:
                    truth[i][k] = int(top.view(bs, W, 3)[i, k, 1])
            prefix = torch.tensor([len(r.origin_input_ids) + len(r.output_ids) - 1 for r in reqs])
            loc = torch.arange(bs * n).view(bs, n) + 8
            seen = {}

            def step(worker, batch, blocks=blocks, truth=truth, prefix=prefix, loc=loc, seen=seen):
                positions = (prefix.unsqueeze(1) + torch.arange(n)).reshape(-1)
                verify = SimpleNamespace(draft_token=blocks.view(-1), draft_token_num=n,
                                         positions=positions, custom_mask=None)
                vbatch = SimpleNamespace(seq_lens=prefix, seq_lens_sum=None,
                                         forward_mode=SimpleNamespace(is_idle=lambda: False))
                target_worker = SimpleNamespace(model_runner=SimpleNamespace(
                    attn_backend=None, decode_cuda_graph_runner=None))
                hooks.before_prepare_for_verify(verify, vbatch, target_worker)
                tree = STATE.step.tree
                seen["tree"] = trees.Tree(tree.tokens.clone(), tree.parents.clone(),
                                          tree.depths.clone(), tree.branching.clone())
                assert verify.positions.tolist() == (prefix.unsqueeze(1) + tree.depths).reshape(-1).tolist()
                assert verify.custom_mask.tolist() == reference_tree_mask(
                    ancestors_of(tree.parents), prefix).tolist()
                choice = target_choices(tree, truth, rng)
                logits = torch.nn.functional.one_hot(choice.view(-1), V).float()
                seen["kv"] = pool.k.clone()
                out = SimpleNamespace(logits_output=SimpleNamespace(
                    next_token_logits=logits, hidden_states=logits.clone()))
                tp = SimpleNamespace(model_runner=SimpleNamespace(token_to_kv_pool=pool))
                trees.around_target_forward(lambda *a, **k: out, tp, batch=None,
                                            forward_batch=SimpleNamespace(out_cache_loc=loc.view(-1)),
                                            is_verify=True)
                # DFLASH's greedy linear accept over the rewritten block and the permuted logits,
                # read from the output after the call as SGLang does (settle may replace them)
                pred = out.logits_output.next_token_logits.argmax(-1).view(bs, n)
                # the hidden states (a copy of the logits here) went in the same order
                assert torch.equal(out.logits_output.hidden_states,
                                   out.logits_output.next_token_logits)
                commits = []
                for i in range(bs):
                    a = 0
                    while a < W and int(blocks[i, 1 + a]) == int(pred[i, a]):
                        a += 1
                    commits.append([*blocks[i, 1 : 1 + a].tolist(), int(pred[i, a])])
                seen["commits"] = commits
                width = [len(c) for c in commits]
                toks = [c + [0] * (n - len(c)) for c in commits]
                return SimpleNamespace(next_token_ids=torch.tensor(toks).view(-1),
                                       accept_lens=torch.tensor(width), speculative_num_draft_tokens=n)

            hooks.around_forward(step, worker, batch_of(reqs, extend=False, cap=64))
            tree, commits = seen["tree"], seen["commits"]
            for i, r in enumerate(reqs):
                if bool(tree.branching[i]):  # greedy rows: the longest true prefix, then the bonus
                    a = longest(tree, i, truth[i])
                    assert commits[i] == truth[i][: a + 1], (i, commits[i], truth[i])
                    # the path's KV now sits in the slots of positions prefix + 0..a
                    tok, par, dep = (x[i].tolist() for x in (tree.tokens, tree.parents, tree.depths))
                    node = [j for j in range(n) if dep[j] == a and
                            all(tok[k] == truth[i][dep[k] - 1] for k in _path(par, j)[1:])][0]
                    for d, j in enumerate(_path(par, node)):
                        assert pool.k[loc[i, d]].tolist() == seen["kv"][loc[i, j]].tolist()
                else:
                    assert tree.parents[i].tolist() == list(range(-1, W))  # a sampled row: chain
                r.output_ids.extend(commits[i])
            assert rows(STATE.history, [3, 0, 1]) == [r.origin_input_ids + list(r.output_ids)
                                                     for r in reqs]
        report = STATE.report()
        assert report["tree_rows"] == 8 and report["tree_branch_paths"] > 0, report
    finally:
        STATE.history, STATE.device_stats = None, None
        STATE.configure(PluginConfig(mode="lookup"))


def _path(par: list[int], j: int) -> list[int]:
    out = [j]
    while par[out[-1]] >= 0:
        out.append(par[out[-1]])
    return out[::-1]


def test_trees_refuse_what_they_cannot_serve() -> None:
    ok = SimpleNamespace(attention_backend="triton", page_size=1)
    assert trees.refusals(ok) == []
    bad = trees.refusals(SimpleNamespace(attention_backend="fa3", page_size=16))
    assert any("attention_backend='fa3'" in b for b in bad) and any("page_size=16" in b for b in bad)
    with pytest.raises(ValueError, match="trees plans on the GPU"):
        PluginConfig(mode="trees", plan_at="verify")


@pytest.mark.skipif(torch.cuda.is_available(), reason="the CPU forms of the kernels")
def test_the_kv_move_compiles_at_start_once_the_pools_exist_and_wide_blocks_are_refused() -> None:
    """SGLang's KV move compiles a kernel per power of two of the slots it moves, up to its
    chunk. The DFLASH worker's start runs the trees' own kernels once; its KV pools do not exist
    yet (the scheduler allocates them after), so the move is warmed after `alloc_memory_pool`:
    the dummy slot 0 onto itself at each of those sizes (no KV changes). A block wider than the
    plan's candidates fit is refused at start."""
    class Recorder(Pool):
        _kv_copy_config = {"num_locs_upper": 128}

        def move_kv_cache(self, tgt_loc: torch.Tensor, src_loc: torch.Tensor) -> None:
            moves.append((tgt_loc.tolist(), src_loc.tolist()))
            super().move_kv_cache(tgt_loc, src_loc)

    moves: list = []
    runner = SimpleNamespace(model_config=SimpleNamespace(vocab_size=V))  # no pool at __init__
    worker = SimpleNamespace(block_size=16, device="cpu", model_runner=runner)
    args = SimpleNamespace(tp_size=1, speculative_draft_window_size=None, attention_backend="triton",
                           page_size=1, disable_overlap_schedule=False)
    STATE.configure(PluginConfig(mode="trees"))
    try:
        hooks.guard_worker(lambda *a, **k: None, worker, args)
        with pytest.raises(RuntimeError, match="the trees' KV move failed at start"):
            trees.after_alloc_memory_pool(None, worker)
        runner.token_to_kv_pool = pool = Recorder(4)  # what the scheduler's allocation sets
        before = pool.k.clone()
        assert trees.after_alloc_memory_pool("kept", worker, None, None, None) == "kept"
    finally:
        STATE.configure(PluginConfig(mode="lookup"))
    assert [len(t) for t, _ in moves] == [16, 32, 64, 128]
    assert all(set(t) == set(s) == {0} for t, s in moves)
    assert torch.equal(pool.k, before)
    wide = SimpleNamespace(block_size=64, device="cpu", model_runner=runner)
    STATE.configure(PluginConfig(mode="trees"))
    try:
        with pytest.raises(RuntimeError, match="expected a block of at most 32"):
            hooks.guard_worker(lambda *a, **k: None, wide, args)
    finally:
        STATE.configure(PluginConfig(mode="lookup"))


def test_the_verify_graphs_must_read_a_full_uint8_mask() -> None:
    """Checked at the first verify (SGLang builds the target's backends after the DFLASH worker):
    graphs whose backend has no FULL_MASK uint8 buffer would verify a tree under a causal mask."""
    full = SimpleNamespace(mode=SimpleNamespace(name="FULL_MASK"), buffer=torch.zeros(4, dtype=torch.uint8))
    qlen = SimpleNamespace(mode=SimpleNamespace(name="QLEN_ONLY"), buffer=torch.zeros(4, dtype=torch.uint8))
    try:
        for bad in (None, qlen):
            STATE.mask_checked = False
            backend = SimpleNamespace(verify_mask=bad)
            runner = SimpleNamespace(decode_cuda_graph_runner=SimpleNamespace(attn_backend=backend),
                                     attn_backend=backend)
            with pytest.raises(RuntimeError, match="expected FULL_MASK uint8"):
                trees.verify_backend(runner)
        good = SimpleNamespace(verify_mask=full)
        runner = SimpleNamespace(decode_cuda_graph_runner=SimpleNamespace(attn_backend=good),
                                 attn_backend=None)
        assert trees.verify_backend(runner) is good and STATE.mask_checked
        eager = SimpleNamespace(decode_cuda_graph_runner=None, attn_backend="eager")
        assert trees.verify_backend(eager) == "eager"          # no graphs: the runner's own
    finally:
        STATE.mask_checked = False


def parents_of_links(first: list[int], sibling: list[int]) -> list[int]:
    """The parents a grammar walk over (first child, next sibling) links sees (-1 the root)."""
    par = [-1] * len(first)
    for p, child in enumerate(first):
        while child != -1:
            par[child] = p
            child = sibling[child]
    return par


@pytest.mark.parametrize("mask_applied", [True, False])
def test_grammar_rows_branch_and_settle_after_the_grammar_mask(mask_applied: bool) -> None:
    """In a batch with a grammar the plan runs where DFLASH copies the blocks for its grammar
    walk (`GrammarTree.from_linear_chain`): the row under a grammar branches beside the plain
    one, the walk is handed the trees' links (so every node's logits get the grammar's mask
    after its own path), and the verify goes in path order only once that mask is applied.
    A step whose mask never came fails loudly instead of accepting in node order."""
    rng, gen = random.Random(9), torch.Generator().manual_seed(9)
    STATE.configure(PluginConfig(mode="trees"))
    STATE.history, STATE.device_stats, STATE.overlap = None, None, False
    greedy = SimpleNamespace(top_k=1, temperature=0.0, frequency_penalty=0.0,
                             presence_penalty=0.0, repetition_penalty=1.0)
    reqs = [SimpleNamespace(rid=f"g{i}", req_pool_idx=i, grammar=grammar, sampling_params=greedy,
                            origin_input_ids=[rng.randrange(V) for _ in range(20)],
                            output_ids=array("q", [1])) for i, grammar in enumerate([object(), None])]
    hooks.around_forward(lambda w, b: SimpleNamespace(next_token_ids=torch.zeros(2, dtype=torch.int64),
                                                      accept_lens=None, speculative_num_draft_tokens=None),
                         object(), batch_of(reqs, extend=True, cap=64))
    n, pool = W + 1, Pool(64)
    blocks = torch.randint(0, V, (2, n), generator=gen)
    blocks[:, 0] = 1
    top = torch.stack([torch.stack([torch.tensor([int(blocks[i, 1 + d]), *rng.sample(
        [t for t in range(V) if t != int(blocks[i, 1 + d])], 2)]) for d in range(W)])
        for i in range(2)]).view(2 * W, 3)
    lp = torch.tensor([[math.log(0.4), math.log(0.35), math.log(0.2)]] * (2 * W))
    worker = SimpleNamespace(_draft_sampler=SimpleNamespace(top_ids=top, top_lp=lp))
    seen = {}

    class Walk:  # SGLang's GrammarTree: what the grammar walk will follow
        @classmethod
        def from_device(cls, first, sibling, tokens):
            seen["links"] = (first.tolist(), sibling.tolist(), tokens.clone())
            return "walk"

    def step(worker, batch):
        assert hooks.around_grammar_chain(lambda cls, ids: "chain", Walk, blocks) == "walk"
        tree = seen["tree"] = STATE.step.tree
        prefix = torch.tensor([20, 20])
        verify = SimpleNamespace(draft_token=blocks.view(-1), draft_token_num=n, custom_mask=None,
                                 positions=(prefix.unsqueeze(1) + torch.arange(n)).reshape(-1))
        vbatch = SimpleNamespace(seq_lens=prefix, forward_mode=SimpleNamespace(is_idle=lambda: False))
        target = SimpleNamespace(model_runner=SimpleNamespace(attn_backend=None,
                                                              decode_cuda_graph_runner=None))
        hooks.before_prepare_for_verify(verify, vbatch, target)
        logits = torch.randn(2 * n, V, generator=gen)
        out = SimpleNamespace(logits_output=SimpleNamespace(next_token_logits=logits,
                                                            hidden_states=None))
        tp = SimpleNamespace(model_runner=SimpleNamespace(token_to_kv_pool=pool))
        loc = torch.arange(2 * n) + 8
        trees.around_target_forward(lambda *a, **k: out, tp, batch=None,
                                    forward_batch=SimpleNamespace(out_cache_loc=loc), is_verify=True)
        seen["settled_at_forward"] = tree.settled
        if mask_applied:  # DFLASH masks the grammar (in node order), then accepts
            trees.after_grammar_mask(None, object(), logits)
        return SimpleNamespace(next_token_ids=torch.zeros(2 * n, dtype=torch.int64),
                               accept_lens=torch.ones(2, dtype=torch.int64),
                               speculative_num_draft_tokens=n)

    try:
        if not mask_applied:
            with pytest.raises(RuntimeError, match="never put in path order"):
                hooks.around_forward(step, worker, batch_of(reqs, extend=False, cap=64))
            return
        hooks.around_forward(step, worker, batch_of(reqs, extend=False, cap=64))
        tree = seen["tree"]
        first, sibling, tokens = seen["links"]
        assert tree.branching.tolist() == [True, True]
        assert tree.parents[0].tolist() != list(range(-1, W))   # the grammar row branches
        for r in range(2):  # the walk sees exactly the verified trees, tokens in node order
            assert parents_of_links(first[r], sibling[r]) == tree.parents[r].tolist()
        assert not seen["settled_at_forward"] and tree.settled
        assert not torch.equal(tokens, blocks)  # then rewritten to the accepted paths
    finally:
        STATE.history, STATE.device_stats = None, None
        STATE.configure(PluginConfig(mode="lookup"))


def test_in_order_puts_the_verify_rows_in_path_order_and_keeps_padding_rows() -> None:
    """All rows the verify's: a new tensor in that order; more rows (a padded batch): the
    first ones reordered in place, the rest untouched."""
    flat = torch.tensor([2, 0, 1])
    rows = torch.arange(3 * 2).view(3, 2).float()
    assert trees.in_order(rows, flat).tolist() == [[4, 5], [0, 1], [2, 3]]
    padded = torch.arange(5 * 2).view(5, 2).float()
    out = trees.in_order(padded, flat)
    assert out is padded
    assert padded.tolist() == [[4, 5], [0, 1], [2, 3], [6, 7], [8, 9]]
