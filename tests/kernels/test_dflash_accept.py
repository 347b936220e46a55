"""DFlash accept rule: the reference against a plain Python loop, the Triton kernel (interpreted
on CPU) against the reference, on fresh random blocks with planted and random accept lengths."""

from __future__ import annotations

import pytest
import torch

from turnspec.kernels.dflash_accept import (
    dflash_accept,
    dflash_accept_packed,
    reference_dflash_accept,
    triton_dflash_accept,
    triton_dflash_accept_packed,
)


def loop_accept(drafts: torch.Tensor, target: torch.Tensor) -> tuple[list[int], list[int]]:
    """Straight from the definition: walk each row until the first mismatch."""
    accept, bonus = [], []
    for d_row, t_row in zip(drafts.tolist(), target.tolist(), strict=True):
        a = 0
        while a < len(d_row) and d_row[a] == t_row[a]:
            a += 1
        accept.append(a)
        bonus.append(t_row[a])
    return accept, bonus


def planted_block(seed: int, b: int, block: int, vocab: int = 49152) -> tuple[torch.Tensor, torch.Tensor]:
    """Drafts equal to the target up to a random accept length (0..B-1), then one mismatch, then
    random tokens that sometimes match again (must not count)."""
    g = torch.Generator().manual_seed(seed)
    target = torch.randint(0, vocab, (b, block), generator=g)
    drafts = target[:, :-1].clone()
    accept = torch.randint(0, block, (b,), generator=g)
    for row, a in enumerate(accept.tolist()):
        if a < block - 1:
            drafts[row, a] = (target[row, a] + 1 + torch.randint(0, vocab - 1, (), generator=g)) % vocab
            rematch = torch.rand(block - 2 - a, generator=g) < 0.5
            drafts[row, a + 1:][~rematch] = torch.randint(0, vocab, (int((~rematch).sum()),), generator=g)
    return drafts, target


def small_vocab_block(seed: int, b: int, block: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Vocabulary of 2: matches everywhere at random, so every accept length occurs."""
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, 2, (b, block - 1), generator=g), torch.randint(0, 2, (b, block), generator=g)


@pytest.mark.parametrize("block", [1, 2, 10, 16, 17])
@pytest.mark.parametrize("make", [planted_block, small_vocab_block], ids=["planted", "vocab2"])
def test_reference_matches_loop(make, block: int) -> None:
    drafts, target = make(block, 64, block)
    accept, bonus = reference_dflash_accept(drafts, target)
    assert accept.dtype == torch.int32 and bonus.dtype == torch.int64
    assert (accept.tolist(), bonus.tolist()) == loop_accept(drafts, target)


@pytest.mark.parametrize("block", [1, 2, 10, 16, 17])
@pytest.mark.parametrize("make", [planted_block, small_vocab_block], ids=["planted", "vocab2"])
def test_triton_matches_reference(make, block: int) -> None:
    drafts, target = make(100 + block, 24, block)
    ref_accept, ref_bonus = reference_dflash_accept(drafts, target)
    accept, bonus = triton_dflash_accept(drafts, target)
    assert accept.dtype == torch.int32 and bonus.dtype == torch.int64
    assert torch.equal(accept, ref_accept) and torch.equal(bonus, ref_bonus)
    packed = triton_dflash_accept_packed(drafts, target)
    assert packed.shape == (24, 2) and packed.dtype == torch.int64
    assert torch.equal(packed, torch.stack([ref_accept.long(), ref_bonus], dim=1))


def test_all_accept_lengths_occur_in_planted_blocks() -> None:
    # Guards the generator: the comparisons above must cover 0 and B-1 and values between.
    accept, _ = reference_dflash_accept(*planted_block(5, 256, 16))
    assert set(accept.tolist()) == set(range(16))


def test_triton_accepts_strided_views() -> None:
    # drafts as a slice of a wider draft buffer, target as a transposed argmax layout.
    drafts, target = planted_block(7, 16, 16)
    wide = torch.zeros(16, 32, dtype=torch.int64)
    wide[:, 3:18] = drafts
    target_t = target.t().contiguous().t()
    assert not target_t.is_contiguous()
    accept, bonus = triton_dflash_accept(wide[:, 3:18], target_t)
    ref = reference_dflash_accept(drafts, target)
    assert torch.equal(accept, ref[0]) and torch.equal(bonus, ref[1])


def test_cpu_dispatch_runs_the_reference() -> None:
    drafts, target = planted_block(9, 8, 16)
    accept, bonus = dflash_accept(drafts, target)
    ref = reference_dflash_accept(drafts, target)
    assert torch.equal(accept, ref[0]) and torch.equal(bonus, ref[1])
    assert torch.equal(dflash_accept_packed(drafts, target), torch.stack([ref[0].long(), ref[1]], 1))


def test_empty_batch() -> None:
    accept, bonus = triton_dflash_accept(torch.empty(0, 15, dtype=torch.int64),
                                         torch.empty(0, 16, dtype=torch.int64))
    assert accept.shape == (0,) and bonus.shape == (0,)


@pytest.mark.parametrize("drafts, target, match", [
    (torch.zeros(4, 15, dtype=torch.int64), torch.zeros(4, 15, dtype=torch.int64), r"expected shape \(4, 16\)"),
    (torch.zeros(4, 15, dtype=torch.int32), torch.zeros(4, 16, dtype=torch.int64), "expected int64"),
    (torch.zeros(15, dtype=torch.int64), torch.zeros(16, dtype=torch.int64), "expected 2-D"),
], ids=["width", "dtype", "rank"])
def test_rejects_bad_inputs(drafts: torch.Tensor, target: torch.Tensor, match: str) -> None:
    for fn in (triton_dflash_accept, reference_dflash_accept, dflash_accept_packed):
        with pytest.raises(ValueError, match=match):
            fn(drafts, target)
