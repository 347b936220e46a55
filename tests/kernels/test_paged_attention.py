"""Paged attention: the torch reference and the Triton kernel (interpreted on CPU, fp32) against a
naive float64 loop over rows, queries and heads. Inputs are fresh random draws per case; the
kernel's output is poisoned with NaN first, so an unwritten element fails the check."""

from __future__ import annotations

import pytest
import torch

from turnspec.kernels.paged_attention import (
    paged_attention,
    reference_paged_attention,
    triton_paged_attention,
)

PAGE, HEAD_DIM = 16, 64


def make_case(seed: int, n_heads: int, n_kv: int, kv_lens: list[int], q_lens: list[int],
              n_q: int | None = None, dtype: torch.dtype = torch.float32) -> dict:
    """Random pool with spare blocks, shuffled block tables (-1 past each row's last block)."""
    g = torch.Generator().manual_seed(seed)
    bsz = len(kv_lens)
    n_q = n_q or max(q_lens)
    max_blocks = max(-(-k // PAGE) for k in kv_lens) + 1
    num_blocks = bsz * max_blocks + 5
    k_pool = torch.randn(num_blocks, PAGE, n_kv, HEAD_DIM, generator=g).to(dtype)
    v_pool = torch.randn(num_blocks, PAGE, n_kv, HEAD_DIM, generator=g).to(dtype)
    ids = torch.randperm(num_blocks, generator=g)[: bsz * max_blocks].view(bsz, max_blocks)
    used = torch.arange(max_blocks).view(1, -1) < torch.tensor([-(-k // PAGE) for k in kv_lens]).view(-1, 1)
    tables = torch.where(used, ids, -1).to(torch.int32)  # [b, max_blocks]
    q = torch.randn(bsz, n_q, n_heads, HEAD_DIM, generator=g).to(dtype)
    return dict(q=q, k_pool=k_pool, v_pool=v_pool, block_tables=tables,
                kv_lens=torch.tensor(kv_lens, dtype=torch.int32),
                q_lens=torch.tensor(q_lens, dtype=torch.int32), scale=HEAD_DIM ** -0.5)


def naive_attention(q, k_pool, v_pool, block_tables, kv_lens, q_lens, scale) -> torch.Tensor:
    """float64, one (row, query) at a time, straight from the layout definition."""
    bsz, n_q, n_heads, head_dim = q.shape
    page, n_kv = k_pool.shape[1], k_pool.shape[2]
    out = torch.zeros(bsz, n_q, n_heads, head_dim, dtype=torch.float64)
    for b in range(bsz):
        for i in range(int(q_lens[b])):
            pos = int(kv_lens[b]) - int(q_lens[b]) + i
            idx = torch.arange(pos + 1)
            blocks = block_tables[b, idx // page].long()
            k = k_pool[blocks, idx % page].double().repeat_interleave(n_heads // n_kv, dim=1)
            v = v_pool[blocks, idx % page].double().repeat_interleave(n_heads // n_kv, dim=1)
            s = torch.einsum("hd,thd->ht", q[b, i].double(), k) * scale  # [n_heads, pos+1]
            out[b, i] = torch.einsum("ht,thd->hd", s.softmax(-1), v)
    return out


def rel_err(out: torch.Tensor, ref: torch.Tensor) -> float:
    return ((out.double() - ref).norm() / ref.norm()).item()


# (kv_lens, q_lens): decode (q=1), verify (q=5), prefill-extend (q=37, mixed with a short row);
# kv_lens deliberately not multiples of PAGE.
SHAPES = {
    "decode": ([37, 130, 1], [1, 1, 1]),
    "verify": ([5, 83], [5, 5]),
    "extend": ([37, 70], [37, 9]),
}
HEADS = [(9, 3), (4, 2), (8, 8)]


def seed_of(shape: str, heads: tuple[int, int]) -> int:
    return 100 * list(SHAPES).index(shape) + 10 * heads[0] + heads[1]


@pytest.mark.parametrize("heads", HEADS, ids=lambda h: f"{h[0]}q{h[1]}kv")
@pytest.mark.parametrize("shape", list(SHAPES), ids=str)
def test_reference_matches_naive_float64(shape: str, heads: tuple[int, int]) -> None:
    kv_lens, q_lens = SHAPES[shape]
    case = make_case(seed_of(shape, heads), *heads, kv_lens, q_lens, dtype=torch.float64)
    assert rel_err(reference_paged_attention(**case), naive_attention(**case)) < 1e-12
    case32 = {k: (v.float() if v.is_floating_point() else v) if torch.is_tensor(v) else v
              for k, v in case.items()}
    assert rel_err(reference_paged_attention(**case32), naive_attention(**case)) < 1e-5


@pytest.mark.parametrize("heads", HEADS, ids=lambda h: f"{h[0]}q{h[1]}kv")
@pytest.mark.parametrize("shape", list(SHAPES), ids=str)
def test_triton_matches_naive_float64(shape: str, heads: tuple[int, int]) -> None:
    kv_lens, q_lens = SHAPES[shape]
    case = make_case(1000 + seed_of(shape, heads), *heads, kv_lens, q_lens)
    out = torch.full_like(case["q"], float("nan"))
    triton_paged_attention(**case, out=out, num_splits=1)
    assert not out.isnan().any(), "kernel left elements unwritten"
    assert rel_err(out, naive_attention(**case)) < 1e-5


@pytest.mark.parametrize("splits, heads", [(2, (9, 3)), (3, (4, 2)), (8, (4, 2))])
def test_triton_split_kv_matches_naive(splits: int, heads: tuple[int, int]) -> None:
    # 8 splits of a 130-key row leave empty splits behind; the combine must ignore them.
    case = make_case(2000 + splits, *heads, [130, 45, 17], [5, 5, 2])
    out = torch.full_like(case["q"], float("nan"))
    triton_paged_attention(**case, out=out, num_splits=splits)
    assert not out.isnan().any(), "kernel left elements unwritten"
    assert rel_err(out, naive_attention(**case)) < 1e-5


def test_padded_queries_and_empty_rows_are_zero() -> None:
    # Row 1 has fewer queries than n_q; row 2 is an idle batch slot (no KV, no queries).
    case = make_case(7, 4, 2, [40, 21, 0], [6, 2, 0], n_q=6)
    ref = reference_paged_attention(**case)
    for splits in (1, 2):
        out = torch.full_like(case["q"], float("nan"))
        triton_paged_attention(**case, out=out, num_splits=splits)
        assert torch.equal(out[1, 2:], torch.zeros_like(out[1, 2:]))
        assert torch.equal(out[2], torch.zeros_like(out[2]))
        assert rel_err(out, naive_attention(**case)) < 1e-5
    assert torch.equal(ref[1, 2:], torch.zeros_like(ref[1, 2:])) and torch.equal(ref[2], torch.zeros_like(ref[2]))
    assert rel_err(ref, naive_attention(**case)) < 1e-5


def test_triton_fp16_within_half_precision_tolerance() -> None:
    case = make_case(11, 9, 3, [37, 83], [5, 5], dtype=torch.float16)
    out = triton_paged_attention(**case, num_splits=1)
    assert out.dtype == torch.float16
    assert rel_err(out, naive_attention(**case)) < 5e-3


def test_triton_accepts_strided_q_and_pools() -> None:
    # q as a slice of a fused qkv projection; pools as one layer of a [layers, ...] allocation.
    case = make_case(13, 4, 2, [50, 29], [5, 5])
    qkv = torch.randn(2, 5, 8, HEAD_DIM)
    qkv[:, :, :4] = case["q"]
    pools = torch.randn(3, *case["k_pool"].shape)
    pools[1] = case["k_pool"]
    strided = dict(case, q=qkv[:, :, :4], k_pool=pools[1])
    assert not strided["q"].is_contiguous()
    out = triton_paged_attention(**strided)  # default launch: auto splits, auto warps
    assert rel_err(out, naive_attention(**case)) < 1e-5


def test_cpu_dispatch_runs_the_reference() -> None:
    case = make_case(17, 9, 3, [37, 83], [5, 5])
    assert torch.equal(paged_attention(**case), reference_paged_attention(**case))


@pytest.mark.parametrize("bad, match", [
    (lambda c: dict(block_tables=c["block_tables"].long()), "block_tables: expected int32"),
    (lambda c: dict(kv_lens=c["kv_lens"].long()), "kv_lens: expected int32"),
    (lambda c: dict(k_pool=c["k_pool"].half()), "k_pool/v_pool: expected dtype"),
    (lambda c: dict(q=c["q"][:, :, :8]), "incompatible"),
    (lambda c: dict(q=c["q"].repeat_interleave(2, dim=3)[..., ::2]), "unit stride"),
    (lambda c: dict(q_lens=c["q_lens"][:1]), "kv_lens/q_lens: expected shape"),
    (lambda c: dict(out=torch.empty(2, 5, 9, HEAD_DIM, dtype=torch.float16)), "out: expected"),
], ids=["tables-int64", "kvlens-int64", "pool-dtype", "heads", "q-stride", "qlens-shape", "out"])
def test_triton_wrapper_rejects_bad_inputs(bad, match: str) -> None:
    case = make_case(19, 9, 3, [37, 83], [5, 5])
    case.update(bad(case))
    with pytest.raises(ValueError, match=match):
        triton_paged_attention(**case)
