"""Attention of new query tokens over a paged KV pool (prefill-extend, decode and verify).

Layout (one layer):
  k_pool, v_pool : [num_blocks, block_size, n_kv_heads, head_dim]
  block_tables   : [batch, max_blocks] int32, block ids of each sequence in order (-1 = unused)
  q              : [batch, n_q, n_heads, head_dim] (padded; row b has `q_lens[b]` valid queries)
  kv_lens        : [batch] int32, KV length of each row *including* the new tokens, whose K/V
                   must already be written into the pool
  q_lens         : [batch] int32, valid queries per row; query i sits at position
                   kv_lens[b] - q_lens[b] + i and attends causally to positions <= its own.
  output         : [batch, n_q, n_heads, head_dim] in q's dtype; padded queries
                   (i >= q_lens[b]) are exactly zero.

Preconditions the wrapper cannot check without a device->host sync (callers guarantee them):
0 <= q_lens[b] <= n_q, q_lens[b] <= kv_lens[b] <= max_blocks * block_size, and
block_tables[b, j] is a valid block id for every j < ceil(kv_lens[b] / block_size).

`paged_attention` dispatches to the Triton kernel on CUDA and to `reference_paged_attention`
elsewhere (the CPU engine path: a gather of each row's context plus SDPA). The Triton path makes
no host sync, so it can be captured in a CUDA graph.
"""

from __future__ import annotations

import functools

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

next_pow2 = triton.next_power_of_2


@functools.cache
def num_sms(device: torch.device) -> int:
    """Streaming multiprocessors of a CUDA device (1 elsewhere: the CPU interpreter)."""
    if device.type != "cuda":
        return 1
    return torch.cuda.get_device_properties(device).multi_processor_count


def _check(q: torch.Tensor, k_pool: torch.Tensor, v_pool: torch.Tensor,
           block_tables: torch.Tensor, kv_lens: torch.Tensor, q_lens: torch.Tensor) -> None:
    if q.dim() != 4:
        raise ValueError(f"q: expected [batch, n_q, n_heads, head_dim], got shape {tuple(q.shape)}")
    if k_pool.dim() != 4 or k_pool.shape != v_pool.shape:
        raise ValueError(
            "k_pool/v_pool: expected equal shapes [num_blocks, block_size, n_kv_heads, head_dim], "
            f"got {tuple(k_pool.shape)} and {tuple(v_pool.shape)}")
    if q.shape[3] != k_pool.shape[3] or q.shape[2] % k_pool.shape[2] != 0:
        raise ValueError(
            f"q heads/dim {tuple(q.shape[2:])} incompatible with pool heads/dim {tuple(k_pool.shape[2:])}")
    b = q.shape[0]
    if block_tables.dim() != 2 or block_tables.shape[0] != b:
        raise ValueError(f"block_tables: expected [{b}, max_blocks], got {tuple(block_tables.shape)}")
    if kv_lens.shape != (b,) or q_lens.shape != (b,):
        raise ValueError(f"kv_lens/q_lens: expected shape ({b},), got {tuple(kv_lens.shape)}, {tuple(q_lens.shape)}")


def _check_triton(q: torch.Tensor, k_pool: torch.Tensor, v_pool: torch.Tensor,
                  block_tables: torch.Tensor, kv_lens: torch.Tensor, q_lens: torch.Tensor) -> None:
    """Extra checks for the kernel: dtypes, devices, unit stride on head_dim."""
    if q.dtype not in (torch.float16, torch.bfloat16, torch.float32):
        raise ValueError(f"q: expected float16/bfloat16/float32, got {q.dtype}")
    if k_pool.dtype != q.dtype or v_pool.dtype != q.dtype:
        raise ValueError(f"k_pool/v_pool: expected dtype {q.dtype} like q, got {k_pool.dtype}/{v_pool.dtype}")
    for name, t in (("block_tables", block_tables), ("kv_lens", kv_lens), ("q_lens", q_lens)):
        if t.dtype != torch.int32:
            raise ValueError(f"{name}: expected int32, got {t.dtype}")
    for name, t in (("k_pool", k_pool), ("v_pool", v_pool), ("block_tables", block_tables),
                    ("kv_lens", kv_lens), ("q_lens", q_lens)):
        if t.device != q.device:
            raise ValueError(f"{name}: expected device {q.device} like q, got {t.device}")
    for name, t in (("q", q), ("k_pool", k_pool), ("v_pool", v_pool)):
        if t.stride(3) != 1:
            raise ValueError(f"{name}: expected unit stride on head_dim, got strides {t.stride()}")


def visibility_mask(kv_lens: torch.Tensor, q_lens: torch.Tensor, n_q: int, max_kv: int) -> torch.Tensor:
    """[b, n_q, max_kv] bool: query i of row b (at position kv_lens[b] - q_lens[b] + i) sees KV
    position j iff j <= its position and j < kv_lens[b]. kv_lens/q_lens [b] int."""
    q_pos = (kv_lens - q_lens).unsqueeze(1) + torch.arange(n_q, device=kv_lens.device)  # [b, n_q]
    kv_pos = torch.arange(max_kv, device=kv_lens.device).view(1, 1, -1)
    return (kv_pos <= q_pos.unsqueeze(-1)) & (kv_pos < kv_lens.view(-1, 1, 1))


def reference_paged_attention(q: torch.Tensor, k_pool: torch.Tensor, v_pool: torch.Tensor,
                              block_tables: torch.Tensor, kv_lens: torch.Tensor,
                              q_lens: torch.Tensor, scale: float,
                              kv_lens_host: list[int] | None = None) -> torch.Tensor:
    """Torch reference: gather each row's KV to a padded [batch, max_kv] view, one masked SDPA.

    `kv_lens_host` (optional) lets the caller pass lengths it already has on the host, so this
    function makes no device->host sync.
    """
    _check(q, k_pool, v_pool, block_tables, kv_lens, q_lens)
    bsz, n_q, n_heads, head_dim = q.shape
    block_size, n_kv = k_pool.shape[1], k_pool.shape[2]
    max_kv = max(kv_lens_host) if kv_lens_host is not None else int(kv_lens.max())
    n_blk = (max_kv + block_size - 1) // block_size
    tables = block_tables[:, :n_blk].clamp(min=0).long()  # [b, n_blk]
    k = k_pool[tables].reshape(bsz, n_blk * block_size, n_kv, head_dim)[:, :max_kv]
    v = v_pool[tables].reshape(bsz, n_blk * block_size, n_kv, head_dim)[:, :max_kv]
    mask = visibility_mask(kv_lens, q_lens, n_q, max_kv)  # [b, n_q, max_kv]
    out = F.scaled_dot_product_attention(
        q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
        attn_mask=mask.unsqueeze(1), scale=scale, enable_gqa=n_heads != n_kv)
    valid = torch.arange(n_q, device=q.device).view(1, -1) < q_lens.view(-1, 1)  # [b, n_q]
    return out.transpose(1, 2).masked_fill(~valid.view(bsz, n_q, 1, 1), 0.0)


# Shape-dependent integers (query count, block-table width, the strides that follow them, the
# split count) are not specialised: each new value of a specialised argument compiles a new
# variant mid-request (~1 s on the H200), so only SPLIT (split or not) selects a variant.
_VARYING = ["sq_b", "sbt_b", "so_b", "sm_b", "n_q", "max_blocks", "num_splits"]


@triton.jit(do_not_specialize=_VARYING)
def _paged_attention_kernel(
        q_ptr, k_ptr, v_ptr, bt_ptr, kv_lens_ptr, q_lens_ptr, o_ptr, m_ptr, l_ptr, scale_log2e,
        sq_b, sq_t, sq_h, sk_blk, sk_pos, sk_h, sv_blk, sv_pos, sv_h, sbt_b, sbt_n,
        so_b, so_t, so_h, so_s, sm_b, sm_t, sm_h, n_q, n_kv, max_blocks, num_splits,
        GROUP: tl.constexpr, HEAD_DIM: tl.constexpr, HEAD_DIM_PAD: tl.constexpr,
        PAGE: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_Q: tl.constexpr, BLOCK_N: tl.constexpr,
        SPLIT: tl.constexpr, DOT_PRECISION: tl.constexpr):
    """One program = (row, kv head) x query tile x KV split. Its BLOCK_M rows are
    (query token, q head of this kv head) pairs, so each K/V tile is read once for the group."""
    pid = tl.program_id(0)
    row, kvh = pid // n_kv, pid % n_kv
    tile, split = tl.program_id(1), tl.program_id(2)
    kv_len = tl.load(kv_lens_ptr + row)
    q_len = tl.load(q_lens_ptr + row)

    offs_m = tl.arange(0, BLOCK_M)
    q_tok = tile * BLOCK_Q + offs_m // GROUP  # [BLOCK_M]
    head = kvh * GROUP + offs_m % GROUP
    in_tile = (offs_m < BLOCK_Q * GROUP) & (q_tok < n_q)
    valid = in_tile & (q_tok < q_len)
    q_pos = kv_len - q_len + q_tok
    offs_d = tl.arange(0, HEAD_DIM_PAD)
    d_ok = offs_d < HEAD_DIM
    q = tl.load(q_ptr + row * sq_b + q_tok[:, None] * sq_t + head[:, None] * sq_h + offs_d[None, :],
                mask=valid[:, None] & d_ok[None, :], other=0.0)

    # Keys this tile can see end after its last valid query; a tile of padding sees none.
    last_tok = tl.minimum(tile * BLOCK_Q + BLOCK_Q, q_len) - 1
    kv_end = tl.where(tile * BLOCK_Q < q_len, kv_len - q_len + last_tok + 1, 0)
    kv_end = tl.minimum(kv_end, max_blocks * PAGE)
    chunk = tl.cdiv(tl.cdiv(kv_end, num_splits), BLOCK_N) * BLOCK_N
    lo = split * chunk
    hi = tl.minimum(lo + chunk, kv_end)

    # Finite start for the running max: fully masked rows then give p = 0, alpha = 1, no NaN.
    m_i = tl.full([BLOCK_M], -1.0e30, tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM_PAD], tl.float32)
    for start in range(lo, hi, BLOCK_N):
        offs_n = start + tl.arange(0, BLOCK_N)
        n_ok = offs_n < hi
        blk = tl.load(bt_ptr + row * sbt_b + (offs_n // PAGE) * sbt_n, mask=n_ok, other=0)
        blk = blk.to(tl.int64)
        slot = offs_n % PAGE
        kv_mask = n_ok[:, None] & d_ok[None, :]
        k = tl.load(k_ptr + blk[:, None] * sk_blk + slot[:, None] * sk_pos + kvh * sk_h
                    + offs_d[None, :], mask=kv_mask, other=0.0)  # [BLOCK_N, HEAD_DIM_PAD]
        s = tl.dot(q, tl.trans(k), input_precision=DOT_PRECISION) * scale_log2e
        visible = n_ok[None, :] & (offs_n[None, :] <= q_pos[:, None])
        s = tl.where(visible, s, float("-inf"))  # [BLOCK_M, BLOCK_N]
        m_new = tl.maximum(m_i, tl.max(s, 1))
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(v_ptr + blk[:, None] * sv_blk + slot[:, None] * sv_pos + kvh * sv_h
                    + offs_d[None, :], mask=kv_mask, other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v, input_precision=DOT_PRECISION)
        m_i = m_new

    o_off = row * so_b + q_tok[:, None] * so_t + head[:, None] * so_h + offs_d[None, :]
    if not SPLIT:
        l_safe = tl.where(l_i > 0, l_i, 1.0)
        out = tl.where(valid[:, None] & (l_i[:, None] > 0), acc / l_safe[:, None], 0.0)
        tl.store(o_ptr + o_off, out.to(o_ptr.dtype.element_ty), mask=in_tile[:, None] & d_ok[None, :])
    else:  # unnormalised partials; the combine kernel merges splits and zeroes padding
        tl.store(o_ptr + o_off + split * so_s, acc, mask=in_tile[:, None] & d_ok[None, :])
        ml_off = row * sm_b + q_tok * sm_t + head * sm_h + split
        tl.store(m_ptr + ml_off, m_i, mask=in_tile)
        tl.store(l_ptr + ml_off, l_i, mask=in_tile)


@triton.jit(do_not_specialize=["sa_b", "sa_t", "sa_h", "sa_s", "sm_b", "sm_t", "sm_h", "so_b",
                                "n_q", "num_splits"])
def _paged_attention_combine_kernel(
        acc_ptr, m_ptr, l_ptr, q_lens_ptr, o_ptr, sa_b, sa_t, sa_h, sa_s, sm_b, sm_t, sm_h,
        so_b, so_t, so_h, n_q, n_heads, num_splits,
        SPLITS_PAD: tl.constexpr, HEAD_DIM: tl.constexpr, HEAD_DIM_PAD: tl.constexpr):
    """One program = (row, query token, head): merge the split partials with their maxima."""
    pid = tl.program_id(0)
    row, rest = pid // (n_q * n_heads), pid % (n_q * n_heads)
    tok, head = rest // n_heads, rest % n_heads
    offs_s = tl.arange(0, SPLITS_PAD)
    s_ok = offs_s < num_splits
    offs_d = tl.arange(0, HEAD_DIM_PAD)
    d_ok = offs_d < HEAD_DIM
    ml_off = row * sm_b + tok * sm_t + head * sm_h + offs_s
    m = tl.load(m_ptr + ml_off, mask=s_ok, other=-1.0e30)
    w = tl.where(s_ok, tl.exp2(m - tl.max(m, 0)), 0.0)  # [SPLITS_PAD]
    l_sum = tl.sum(w * tl.load(l_ptr + ml_off, mask=s_ok, other=0.0), 0)
    acc = tl.load(acc_ptr + row * sa_b + tok * sa_t + head * sa_h + offs_s[:, None] * sa_s
                  + offs_d[None, :], mask=s_ok[:, None] & d_ok[None, :], other=0.0)
    acc = tl.sum(w[:, None] * acc, 0)  # [HEAD_DIM_PAD]
    keep = (tok < tl.load(q_lens_ptr + row)) & (l_sum > 0)
    out = tl.where(keep, acc / tl.where(l_sum > 0, l_sum, 1.0), 0.0)
    tl.store(o_ptr + row * so_b + tok * so_t + head * so_h + offs_d, out.to(o_ptr.dtype.element_ty),
             mask=d_ok)


def query_tiling(n_q: int, group: int) -> tuple[int, int]:
    """(BLOCK_M, BLOCK_Q): a program's rows are BLOCK_Q query tokens x `group` q heads; tl.dot
    needs >= 16 rows, and 64 keeps a prefill tile's registers in budget."""
    block_m = max(16, next_pow2(group), min(64, next_pow2(group * n_q)))
    return block_m, block_m // group


def default_num_splits(batch: int, n_kv: int, q_tiles: int, max_kv: int, device: torch.device) -> int:
    """Split KV only when (row, kv head, q tile) programs leave most SMs idle and the context is
    long: each split then keeps >= 512 keys, so the extra combine launch stays worth it."""
    programs = batch * n_kv * q_tiles
    sms = num_sms(device)
    if programs * 2 > sms:
        return 1
    return max(1, min(sms // programs, max_kv // 512, 64))


def triton_paged_attention(q: torch.Tensor, k_pool: torch.Tensor, v_pool: torch.Tensor,
                           block_tables: torch.Tensor, kv_lens: torch.Tensor, q_lens: torch.Tensor,
                           scale: float, kv_lens_host: list[int] | None = None,
                           out: torch.Tensor | None = None, num_splits: int | None = None,
                           block_n: int = 64, num_warps: int | None = None,
                           num_stages: int = 2) -> torch.Tensor:
    """The Triton path on any device Triton runs on (CUDA, or CPU under TRITON_INTERPRET=1).

    `out` (optional) is a preallocated [batch, n_q, n_heads, head_dim] tensor of q's dtype (unit
    stride on head_dim) that is fully overwritten. `num_splits` None picks `default_num_splits`;
    it and the launch knobs exist for the benchmark. `num_warps` None: 4 up to head_dim 64, else 8
    (ptxas -v, sm_90, bf16: head_dim 128 with 4 warps spills 450-700 bytes; with 8 it spills none).
    """
    _check(q, k_pool, v_pool, block_tables, kv_lens, q_lens)
    _check_triton(q, k_pool, v_pool, block_tables, kv_lens, q_lens)
    bsz, n_q, n_heads, head_dim = q.shape
    page, n_kv = k_pool.shape[1], k_pool.shape[2]
    group = n_heads // n_kv
    block_m, block_q = query_tiling(n_q, group)
    q_tiles = triton.cdiv(n_q, block_q)
    max_kv = max(kv_lens_host) if kv_lens_host else block_tables.shape[1] * page
    if num_splits is not None and not 1 <= num_splits <= 256:
        raise ValueError(f"num_splits: expected 1..256 or None, got {num_splits}")
    splits = num_splits or default_num_splits(bsz, n_kv, q_tiles, max_kv, q.device)
    if out is None:
        out = torch.empty(bsz, n_q, n_heads, head_dim, dtype=q.dtype, device=q.device)
    elif out.shape != q.shape or out.dtype != q.dtype or out.device != q.device or out.stride(3) != 1:
        raise ValueError(f"out: expected {tuple(q.shape)} {q.dtype} on {q.device} with unit stride on "
                         f"head_dim, got {tuple(out.shape)} {out.dtype} on {out.device}, strides {out.stride()}")
    if bsz == 0 or n_q == 0:
        return out
    if splits == 1:
        part, m, l_ = out, out, out  # m/l unused
        so = (*out.stride()[:3], 0)
    else:
        part = torch.empty(bsz, n_q, n_heads, splits, head_dim, dtype=torch.float32, device=q.device)
        m = torch.empty(bsz, n_q, n_heads, splits, dtype=torch.float32, device=q.device)
        l_ = torch.empty_like(m)
        so = part.stride()[:4]
    sm = m.stride()[:3]
    num_warps = num_warps or (4 if head_dim <= 64 else 8)
    dot_precision = "ieee" if q.dtype == torch.float32 else "tf32"  # tf32 = default, no-op for 16-bit
    _paged_attention_kernel[(bsz * n_kv, q_tiles, splits)](
        q, k_pool, v_pool, block_tables, kv_lens, q_lens, part, m, l_, scale * 1.4426950408889634,
        *q.stride()[:3], *k_pool.stride()[:3], *v_pool.stride()[:3], *block_tables.stride(),
        *so, *sm, n_q, n_kv, block_tables.shape[1], splits,
        GROUP=group, HEAD_DIM=head_dim, HEAD_DIM_PAD=max(16, next_pow2(head_dim)), PAGE=page,
        BLOCK_M=block_m, BLOCK_Q=block_q, BLOCK_N=block_n, SPLIT=splits > 1,
        DOT_PRECISION=dot_precision, num_warps=num_warps, num_stages=num_stages)
    if splits > 1:
        _paged_attention_combine_kernel[(bsz * n_q * n_heads,)](
            part, m, l_, q_lens, out, *part.stride()[:4], *sm, *out.stride()[:3], n_q, n_heads,
            splits, SPLITS_PAD=max(2, next_pow2(splits)), HEAD_DIM=head_dim,
            HEAD_DIM_PAD=max(16, next_pow2(head_dim)), num_warps=2)
    return out


def paged_attention(q: torch.Tensor, k_pool: torch.Tensor, v_pool: torch.Tensor,
                    block_tables: torch.Tensor, kv_lens: torch.Tensor, q_lens: torch.Tensor,
                    scale: float, kv_lens_host: list[int] | None = None) -> torch.Tensor:
    """Dispatch: the Triton kernel on CUDA, the torch reference elsewhere (same output contract,
    padded queries zero). Pass `kv_lens_host` when known: the reference then skips a sync and the
    kernel sizes its KV split from the real context instead of the block-table width."""
    if q.is_cuda:
        return triton_paged_attention(q, k_pool, v_pool, block_tables, kv_lens, q_lens, scale,
                                      kv_lens_host)
    return reference_paged_attention(q, k_pool, v_pool, block_tables, kv_lens, q_lens, scale,
                                     kv_lens_host)
