"""DFlash accept rule (docs/dflash.md §2): accept the longest draft prefix that
matches the target, then take the target's token at the first mismatch as the bonus.

  drafts        : [b, B-1] int64, the drafter's tokens for block positions 1..B-1
  target_tokens : [b, B]   int64, the target's token at each block position (argmax when greedy,
                  a sample from p_T(.|prefix) under temperature; one rule serves both and is
                  lossless for a greedy drafter)
  accept_len    : [b] int32 = cumprod(drafts[:, k] == target_tokens[:, k]).sum(), in 0..B-1
  bonus         : [b] int64 = target_tokens[row, accept_len]

The engine commits drafts[:, :accept_len] then bonus (accept_len + 1 tokens). `dflash_accept_packed`
returns both in one [b, 2] int64 tensor so the step makes a single device->host copy.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl


def _check(drafts: torch.Tensor, target_tokens: torch.Tensor) -> None:
    if drafts.dim() != 2 or target_tokens.dim() != 2:
        raise ValueError(f"drafts/target_tokens: expected 2-D [b, B-1] and [b, B], got shapes "
                         f"{tuple(drafts.shape)} and {tuple(target_tokens.shape)}")
    b, n_draft = drafts.shape
    if target_tokens.shape != (b, n_draft + 1):
        raise ValueError(f"target_tokens: expected shape ({b}, {n_draft + 1}) for drafts of shape "
                         f"{tuple(drafts.shape)}, got {tuple(target_tokens.shape)}")
    if drafts.dtype != torch.int64 or target_tokens.dtype != torch.int64:
        raise ValueError(f"drafts/target_tokens: expected int64, got {drafts.dtype}/{target_tokens.dtype}")
    if drafts.device != target_tokens.device:
        raise ValueError(f"drafts/target_tokens: expected one device, got {drafts.device} and "
                         f"{target_tokens.device}")


def reference_dflash_accept(drafts: torch.Tensor,
                            target_tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Torch reference: cumulative product of matches, then a gather."""
    _check(drafts, target_tokens)
    match = (drafts == target_tokens[:, :-1]).to(torch.int32)  # [b, B-1]
    accept_len = match.cumprod(dim=1).sum(dim=1, dtype=torch.int32)  # [b]
    bonus = target_tokens.gather(1, accept_len.long().unsqueeze(1)).squeeze(1)  # [b] int64
    return accept_len, bonus


@triton.jit
def _dflash_accept_kernel(drafts_ptr, target_ptr, accept_ptr, bonus_ptr, sd_b, sd_k, st_b, st_k,
                          sa_b, sbo_b, N_DRAFT: tl.constexpr, BLOCK: tl.constexpr):
    """One program per row: the first mismatch index is the accept length."""
    row = tl.program_id(0)
    k = tl.arange(0, BLOCK)
    in_block = k < N_DRAFT
    d = tl.load(drafts_ptr + row * sd_b + k * sd_k, mask=in_block, other=0)
    t = tl.load(target_ptr + row * st_b + k * st_k, mask=in_block, other=0)
    first_miss = tl.min(tl.where(in_block & (d != t), k, N_DRAFT), axis=0)
    bonus = tl.load(target_ptr + row * st_b + first_miss * st_k)
    # accept_ptr/bonus_ptr may be the two columns of one packed int64 tensor.
    tl.store(accept_ptr + row * sa_b, first_miss.to(accept_ptr.dtype.element_ty))
    tl.store(bonus_ptr + row * sbo_b, bonus)


def _launch(drafts: torch.Tensor, target_tokens: torch.Tensor, accept: torch.Tensor,
            bonus: torch.Tensor) -> None:
    b, n_draft = drafts.shape
    if b == 0:
        return
    _dflash_accept_kernel[(b,)](
        drafts, target_tokens, accept, bonus, *drafts.stride(), *target_tokens.stride(),
        accept.stride(0), bonus.stride(0), N_DRAFT=n_draft,
        BLOCK=max(2, triton.next_power_of_2(n_draft)), num_warps=1)


def triton_dflash_accept(drafts: torch.Tensor,
                         target_tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The Triton path on any device Triton runs on (CUDA, or CPU under TRITON_INTERPRET=1)."""
    _check(drafts, target_tokens)
    b = drafts.shape[0]
    accept = torch.empty(b, dtype=torch.int32, device=drafts.device)
    bonus = torch.empty(b, dtype=torch.int64, device=drafts.device)
    _launch(drafts, target_tokens, accept, bonus)
    return accept, bonus


def triton_dflash_accept_packed(drafts: torch.Tensor, target_tokens: torch.Tensor) -> torch.Tensor:
    """Triton path of `dflash_accept_packed`: [b, 2] int64 = (accept_len, bonus)."""
    _check(drafts, target_tokens)
    packed = torch.empty(drafts.shape[0], 2, dtype=torch.int64, device=drafts.device)
    _launch(drafts, target_tokens, packed[:, 0], packed[:, 1])
    return packed


def dflash_accept(drafts: torch.Tensor,
                  target_tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(accept_len [b] int32, bonus [b] int64); Triton on CUDA, the torch reference elsewhere."""
    if drafts.is_cuda:
        return triton_dflash_accept(drafts, target_tokens)
    return reference_dflash_accept(drafts, target_tokens)


def dflash_accept_packed(drafts: torch.Tensor, target_tokens: torch.Tensor) -> torch.Tensor:
    """[b, 2] int64 with columns (accept_len, bonus): one tensor, so one device->host copy."""
    if drafts.is_cuda:
        return triton_dflash_accept_packed(drafts, target_tokens)
    accept_len, bonus = reference_dflash_accept(drafts, target_tokens)
    return torch.stack([accept_len.long(), bonus], dim=1)
