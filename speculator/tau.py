"""Offline tau: replay greedy speculative decoding over target-generated (greedy) data.

For a sequence whose response the target produced greedily, online greedy decoding with the
drafter visits exactly these anchors: the first response token (prefill's output), then
anchor + accepted + 1 after each step. At each anchor the drafter sees the target features of
every position strictly before it (a causal target gives the same features from one full
forward as from the incremental verify passes) and its drafts are accepted while they equal
the actual next tokens; the bonus token is the actual token after the accepted prefix. So
tau = generated tokens / steps here equals the online greedy acceptance length (z-lab
`acceptance_lengths`, bonus included), up to floating-point ties.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
from torch import Tensor

from turnspec.speculator.blocks import block_inputs
from turnspec.speculator.data import Sample
from turnspec.speculator.model import DFlashDrafter
from turnspec.speculator.target import FrozenTarget


@dataclass(slots=True, frozen=True)
class TauResult:
    tau: float                   # mean tokens per step (accepted + bonus), 1 <= tau <= B
    steps: int
    tokens: int                  # generated tokens replayed (after the first, prefill's)
    samples: int
    histogram: tuple[int, ...]   # histogram[n-1] = steps that produced n tokens

    def to_dict(self) -> dict:
        return asdict(self)


@torch.no_grad()
def evaluate_tau(drafter: DFlashDrafter, target: FrozenTarget, samples: list[Sample], *,
                 block_size: int | None = None, batch_size: int = 32,
                 max_len: int = 2048) -> TauResult:
    """Greedy tau of `drafter` on `samples` (right-truncated to max_len tokens)."""
    blk = block_size or drafter.config.block_size
    if not 2 <= blk <= drafter.config.block_size:
        raise ValueError(f"block_size={blk}: expected 2..{drafter.config.block_size} "
                         "(serve at or below the trained block size)")
    seqs = [s for s in samples if s.prompt_len < min(len(s.input_ids), max_len) - 1]
    seqs.sort(key=lambda s: len(s.input_ids))
    hist = torch.zeros(blk, dtype=torch.long, device=target.device)
    was_training = drafter.training
    drafter.eval()
    for i in range(0, len(seqs), batch_size):
        hist += _replay(drafter, target, seqs[i : i + batch_size], blk, max_len)
    drafter.train(was_training)
    counts = hist.tolist()
    steps = sum(counts)
    tokens = sum((n + 1) * c for n, c in enumerate(counts))
    return TauResult(tau=tokens / steps if steps else float("nan"), steps=steps, tokens=tokens,
                     samples=len(seqs), histogram=tuple(counts))


def _replay(drafter: DFlashDrafter, target: FrozenTarget, seqs: list[Sample], blk: int,
            max_len: int) -> Tensor:
    """One batch of sequences -> histogram [blk] of tokens produced per step."""
    dev = target.device
    lens = [min(len(s.input_ids), max_len) for s in seqs]
    width = max(lens)
    ids = torch.zeros(len(seqs), width + blk, dtype=torch.long)             # padded for gathers
    for r, (s, n) in enumerate(zip(seqs, lens, strict=True)):
        ids[r, :n] = torch.tensor(s.input_ids[:n])
    ids = ids.to(dev)
    anchor = torch.tensor([s.prompt_len for s in seqs], device=dev)        # [b]
    end = torch.tensor(lens, device=dev) - 1                               # last position
    b = len(seqs)
    with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=dev.type == "cuda"):
        taps = target.features(ids[:, :width])                             # [b, S, K*H]
        ctx = drafter.project_context(taps.to(drafter.dtype))
        kv = drafter.context_kv(ctx, torch.arange(width, device=dev).expand(b, width))
        ks, vs = [k for k, _ in kv], [v for _, v in kv]
        offs = torch.arange(blk, device=dev)
        hist = torch.zeros(blk, dtype=torch.long, device=dev)
        while True:
            active = anchor < end                                          # [b]
            if not bool(active.any()):                                     # one sync per step
                break
            pos = anchor[:, None] + offs                                   # [b, blk]
            blocks = block_inputs(ids, anchor[:, None], blk, drafter.config.mask_token_id)[:, 0]
            h = drafter.forward_block(target.embed(blocks).to(ctx.dtype), pos, ks, vs, anchor)
            drafts = target.logits(h[:, 1:]).argmax(-1)                    # [b, blk-1]
            truth = ids.gather(1, pos[:, 1:])
            hit = (drafts == truth) & (pos[:, 1:] <= end[:, None])
            accepted = hit.long().cumprod(-1).sum(-1)                      # [b]
            produced = torch.minimum(accepted + 1, end - anchor).clamp(min=1)
            hist += torch.bincount((produced - 1)[active], minlength=blk)
            anchor = torch.where(active, anchor + produced, anchor)
    return hist
