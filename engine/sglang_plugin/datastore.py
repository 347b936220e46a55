"""The datastore branch of the trees (`TURNSPEC_SGLANG_DATASTORE`, `..._LEARN`; `turnspec serve
--engine sglang --sglang-spec trees --spec-datastore PATH [--spec-datastore-learn]`).

The store is the embedded engine's own proposer (engine/spec/proposers/datastore.py, with
learning.py for the served answers): the continuation that earlier answers most often took
after a row's last tokens. It lives on the host, and the host knows a row's tokens one step
late under overlap scheduling (the last step's commits are still on the GPU). So:

1. `drafts` (host, while the GPU runs the previous step): each greedy row's store draft after
   the tokens the host knows, `LAG` tokens longer than the block, and how many tokens that was;
   one pinned copy to the GPU, no wait.
2. `aligned` (GPU): the tokens committed since (kept there, history.py) must open the draft;
   the rest of it is the row's continuation after its anchor, else none.
3. trees.plan: a row whose own history has no lookup continuation takes the store's in its
   place, so it enters the row's tree as the passed-over continuation does (kernels/tree_plan.py).

`note_finished` (DFLASH's `note_request_finished`): a finished answer that was not aborted
joins the learning store, as the embedded engine's do.
"""

from __future__ import annotations

from typing import Any

import torch

from turnspec.engine.sglang_plugin.config import PluginConfig
from turnspec.engine.sglang_plugin.lookup_swap import history
from turnspec.engine.sglang_plugin.state import STATE, on_device
from turnspec.engine.spec.proposers.datastore import TokenDatastore
from turnspec.engine.spec.proposers.learning import LearningDatastore

LIVE_CAP = 4096  # requests whose tokens are kept for learning (the oldest dropped past it)


class StoreBranch:
    """The store (fixed, learning, or both) and the requests it may learn from."""

    def __init__(self, config: PluginConfig, background: bool = True) -> None:
        base = TokenDatastore.from_path(config.datastore) if config.datastore else None
        self.store: TokenDatastore | LearningDatastore | None = base
        if config.learn_tokens:
            self.store = LearningDatastore(base, max_tokens=config.learn_tokens,
                                           background=background)
        self.live: dict[str, Any] = {}  # rid -> the request, while it may still finish

    def watch(self, reqs: list[Any]) -> None:
        """Keep the step's requests, so their answers can be learned when they finish."""
        if isinstance(self.store, LearningDatastore):
            for r in reqs:
                self.live[r.rid] = r
            while len(self.live) > LIVE_CAP:
                self.live.pop(next(iter(self.live)))

    def note_finished(self, rid: str) -> None:
        """A request finished: its answer joins the learning store unless it was aborted (the
        embedded engine learns those that stopped or reached their length, too)."""
        req = self.live.pop(rid, None)
        reason = type(getattr(req, "finished_reason", None)).__name__
        if req is not None and reason != "FINISH_ABORT" and isinstance(self.store, LearningDatastore):
            self.store.learn(list(req.output_ids))

    def drafts(self, reqs: list[Any], ok: list[bool], width: int, lag: int,
               device: torch.device) -> tuple[torch.Tensor, torch.Tensor, int]:
        """Step 1: [b, width + lag] int64 store drafts (-1 after a draft's end, and for rows not
        `ok`) and [b] int64 tokens the host knew of each row, on `device`; rows drafted."""
        out, known, drafted = [], [], 0
        for r, may in zip(reqs, ok, strict=True):
            tokens = history(r, None)
            draft = self.store.propose(tokens, width + lag).tokens if may and self.store else []
            out.append(draft + [-1] * (width + lag - len(draft)))
            known.append(len(tokens))
            drafted += bool(draft)
        return on_device(out, torch.int64, device), on_device(known, torch.int64, device), drafted


def aligned(hist_tokens: torch.Tensor, hist_lengths: torch.Tensor, rows: torch.Tensor,
            drafts: torch.Tensor, known: torch.Tensor, width: int) -> torch.Tensor:
    """Step 2: [b, width] each row's continuation after its last committed token, from its
    store draft `drafts` [b, width + lag] made after `known` [b] of its tokens: the d tokens
    committed since must be the draft's first d (0 <= d <= lag), and the next `width` follow
    them; -1 where they are not, or past the draft's end."""
    b, span = drafts.shape
    lag = span - width
    rows = rows.to(torch.int64)
    d = hist_lengths[rows].to(torch.int64) - known                    # [b] committed since
    j = torch.arange(lag, device=drafts.device)
    at = (known.unsqueeze(1) + j).clamp(max=hist_tokens.shape[1] - 1)
    since = hist_tokens[rows.unsqueeze(1), at]                        # [b, lag]
    agree = ((since == drafts[:, :lag]) | (j >= d.unsqueeze(1))).all(1) & (d >= 0) & (d <= lag)
    cols = (d.clamp(0, lag).unsqueeze(1) + torch.arange(width, device=drafts.device))
    out = drafts.gather(1, cols)
    return torch.where(agree.unsqueeze(1), out, torch.full_like(out, -1))


def after_request_finished(result, worker, *, rid: str, natural_stop: bool):
    """A request finished: its answer joins the learning store (`StoreBranch.note_finished`)."""
    if STATE.store is not None:
        STATE.store.note_finished(rid)
    return result
