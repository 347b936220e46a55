"""The drafter's head keeps its top tokens, on the CPU: inside the draft CUDA graph (the
plugin's sampler, over a stand-in with the constructor SGLang's `_DflashDraftSampler` is pinned
to) and where the head runs eagerly; both agree with SGLang's argmax, and the lookup rule reads
what either kept through `lookup_swap.drafter_top`."""

from __future__ import annotations

from types import SimpleNamespace

import torch

from turnspec.engine.sglang_plugin import draft_head, trees
from turnspec.engine.sglang_plugin.config import PluginConfig
from turnspec.engine.sglang_plugin.lookup_swap import drafter_top
from turnspec.engine.sglang_plugin.state import STATE, StepContext

BLOCK, HIDDEN, VOCAB = 4, 8, 32


class Sampler:  # SGLang's _DflashDraftSampler, tp=1: the argmax over the target's head
    def __init__(self, *, weight, block_size, num_org, org_vocab_start, max_bs, tp_group=None):
        self.weight, self.block_size = weight, int(block_size)
        self.num_org, self.org_vocab_start = int(num_org), int(org_vocab_start)
        self.out = torch.empty(int(max_bs) * (self.block_size - 1), dtype=torch.int64)


def head(seed: int = 0) -> torch.Tensor:
    return torch.randn(VOCAB, HIDDEN, generator=torch.Generator().manual_seed(seed))


def test_the_graphed_head_keeps_argmax_and_top_k_of_each_draft_position() -> None:
    """Block position 0 is the anchor (no draft); positions 1.. are the drafts, row by row."""
    for mode, k in (("lookup", 1), ("trees", 1 + trees.GUESSES)):
        STATE.configure(PluginConfig(mode=mode))
        assert draft_head.top_k() == k
        weight, bs = head(), 2
        sampler = draft_head.sampler_class(Sampler)(
            weight=weight, block_size=BLOCK, num_org=VOCAB, org_vocab_start=0, max_bs=3,
            tp_group=None)
        hidden = torch.randn(bs * BLOCK, HIDDEN, generator=torch.Generator().manual_seed(1))
        sampler(hidden)
        drafts = hidden.view(bs, BLOCK, HIDDEN)[:, 1:].reshape(-1, HIDDEN)
        logits = drafts @ weight.T
        n = bs * (BLOCK - 1)
        assert torch.equal(sampler.out[:n], logits.argmax(-1))
        want = logits.log_softmax(-1).topk(k, dim=-1)
        assert torch.equal(sampler.top_ids[:n], want.indices)
        assert torch.allclose(sampler.top_lp[:n], want.values)
        assert torch.equal(sampler.top_ids[:n, 0], sampler.out[:n])  # the argmax ranks first
        step = StepContext(SimpleNamespace(_draft_sampler=sampler), None)
        ids, lp = drafter_top(step, bs, BLOCK - 1)
        assert ids.shape == (bs, BLOCK - 1, k) and torch.equal(ids.reshape(n, k), want.indices)


def test_the_eager_head_keeps_the_same_top_k_for_the_step_and_returns_sglangs_tokens() -> None:
    STATE.configure(PluginConfig(mode="trees"))
    weight = head(2)
    lm_head = SimpleNamespace(weight=weight)
    hidden = torch.randn(6, HIDDEN, generator=torch.Generator().manual_seed(3))

    def sglang_head(worker, *, hidden_states, lm_head, chunk_size):
        return (hidden_states @ lm_head.weight.T).argmax(-1)

    STATE.step = None  # no step of the plugin's: nothing kept
    tokens = draft_head.around_eager_head(sglang_head, None, hidden_states=hidden, lm_head=lm_head)
    assert torch.equal(tokens, (hidden @ weight.T).argmax(-1))
    STATE.step = step = StepContext(SimpleNamespace(), None)
    try:
        tokens = draft_head.around_eager_head(sglang_head, None, hidden_states=hidden,
                                              lm_head=lm_head)
        ids, lp = drafter_top(step, 2, 3)
    finally:
        STATE.step = None
    want = (hidden @ weight.T).log_softmax(-1).topk(1 + trees.GUESSES, dim=-1)
    assert torch.equal(ids.reshape(6, -1), want.indices)
    assert torch.allclose(lp.reshape(6, -1), want.values)
    assert torch.equal(ids.reshape(6, -1)[:, 0], tokens)
