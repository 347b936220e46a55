"""The drafter's head keeps its top tokens: the speculation core's lookup rule reads the drafter's
own log-probability at each draft position, and a tree (trees.py) also its next guesses. SGLang's
DFLASH head keeps the argmax only, so the plugin replaces the head inside the draft CUDA graph
(`sampler_class`, REPLACE on `_DflashDraftSampler`) and wraps the eager one (`around_eager_head`);
`lookup_swap.drafter_top` reads what either kept this step.
"""

from __future__ import annotations

from typing import Any

import torch

from turnspec.engine.sglang_plugin import trees
from turnspec.engine.sglang_plugin.checks import REPLACES
from turnspec.engine.sglang_plugin.state import STATE


def top_k() -> int:
    """Top tokens kept per draft position: the lookup rule reads the drafter's own; a tree also
    its next guesses (trees.GUESSES)."""
    return 1 + trees.GUESSES if STATE.config.mode == "trees" else 1


def top_of(logits: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """logits [n, V] -> the k most likely tokens [n, k] and their log-probabilities (fp32)."""
    top = logits.float().log_softmax(dim=-1).topk(k, dim=-1)
    return top.indices, top.values


def around_eager_head(original, worker, *, hidden_states, lm_head, chunk_size=256):
    """The drafter's eager head: SGLang's tokens, and the top-k of the same logits."""
    tokens = original(worker, hidden_states=hidden_states, lm_head=lm_head, chunk_size=chunk_size)
    if STATE.step is not None and hidden_states.numel():
        w = lm_head.weight
        logits = torch.matmul(hidden_states.to(w.dtype), w.T)
        STATE.step.eager_top = top_of(logits, top_k())
    return tokens


def sampler_class(base: type) -> type:
    """The draft CUDA graph's head (`base`: SGLang's `_DflashDraftSampler`) keeping, beside its
    argmax, each position's top tokens and log-probabilities in static buffers the graph
    writes at every replay. One tensor-parallel rank only (refused otherwise)."""

    class TurnspecDraftSampler(base):
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            n = int(kwargs["max_bs"]) * (self.block_size - 1)
            dev = self.weight.device
            self.top_ids = torch.zeros((n, top_k()), dtype=torch.int64, device=dev)
            self.top_lp = torch.zeros((n, top_k()), dtype=torch.float32, device=dev)

        def __call__(self, hidden_states, input_ids=None):
            bs = hidden_states.shape[0] // self.block_size
            hs = hidden_states.view(bs, self.block_size, -1)[:, 1:, :].reshape(
                -1, hidden_states.shape[-1]).to(self.weight.dtype)
            n = hs.shape[0]
            logits = torch.matmul(hs, self.weight[: self.num_org].T)
            self.out[:n].copy_(torch.argmax(logits, dim=-1) + self.org_vocab_start)
            ids, lp = top_of(logits, top_k())
            self.top_ids[:n].copy_(ids + self.org_vocab_start)
            self.top_lp[:n].copy_(lp)

    setattr(TurnspecDraftSampler, REPLACES, base)  # the pins are base's (checks.py)
    return TurnspecDraftSampler
