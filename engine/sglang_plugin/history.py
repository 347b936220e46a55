"""Each request's tokens on the GPU, for plan_at "device": the lookup proposer reads them there
(kernels/plan_lookup.py), so a decode step never waits for the host to learn what the last step
committed.

A row per SGLang request slot (`req.req_pool_idx`, the row of its req_to_token table), as wide
as that table (the longest context a request may have). A prefill writes the row from the
scheduler's record (prompt and output so far: a request retracted and prefilled again
included); after every step, what it committed is appended on the device, behind the step on
its stream. A slot taken by a new request is rewritten at its prefill. A batch mixing prefill
and decode rows (SGLang's --enable-mixed-chunk, off by default) rewrites its decode rows too, from
a record that under overlap scheduling lacks the last step: those rows then look up over tokens
one step short (lossless; fewer copies found).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from turnspec.engine.sglang_plugin.state import on_device, sync_free
from turnspec.kernels.plan_lookup import append


class DeviceHistory:
    def __init__(self, rows: int, cap: int, device: torch.device | str) -> None:
        # one column past the cap: where a full row's appends go (never read)
        self.tokens = torch.zeros((rows, cap + 1), dtype=torch.int64, device=device)
        self.lengths = torch.zeros(rows, dtype=torch.int64, device=device)

    @classmethod
    def for_batch(cls, batch: Any) -> DeviceHistory:
        """Sized to the batch's req_to_token table (every request slot, the longest context)."""
        table = batch.req_to_token_pool.req_to_token
        return cls(int(table.shape[0]), int(table.shape[1]), table.device)

    @property
    def cap(self) -> int:
        """The most tokens a row holds."""
        return int(self.tokens.shape[1]) - 1

    @sync_free
    def write(self, reqs: list[Any]) -> None:
        """Rows of `reqs` (at their prefill) from the scheduler's record, one host-to-device copy.
        The (row, column, token) triples are built with numpy, not a Python loop per token: a
        voice prompt is thousands of tokens, and this runs in the scheduler's prefill step."""
        if not reqs:
            return
        seqs = [np.asarray(list(req.origin_input_ids) + list(req.output_ids),
                           dtype=np.int64)[: self.cap] for req in reqs]
        lens = np.array([len(seq) for seq in seqs], dtype=np.int64)
        slots = np.array([req.req_pool_idx for req in reqs], dtype=np.int64)
        cols = np.arange(int(lens.sum())) - np.repeat(np.cumsum(lens) - lens, lens)
        dev = self.tokens.device
        flat = on_device(np.stack([np.repeat(slots, lens), cols, np.concatenate(seqs)]),
                         torch.int64, dev)
        self.tokens[flat[0], flat[1]] = flat[2]
        at = on_device(np.stack([slots, lens], axis=1), torch.int64, dev)
        self.lengths[at[:, 0]] = at[:, 1]

    @sync_free
    def append(self, rows: torch.Tensor, tokens: torch.Tensor, counts: torch.Tensor | None,
               stride: int) -> None:
        """A step's commits, on the device: batch row i (history row `rows[i]`) committed
        tokens[i * stride : i * stride + counts[i]] (counts None: one token a row)."""
        append(self.tokens, self.lengths, rows, tokens, counts, stride)
