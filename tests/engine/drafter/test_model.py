"""The drafter: training path == inference path, context strictly before the anchor, shapes."""

from __future__ import annotations

import dataclasses

import torch

from tests.engine.model.test_cpu_linear import needs_onednn_bf16
from turnspec.engine.drafter.config import DFlashConfig
from turnspec.engine.drafter.model import DFlashDrafter, apply_rope, rope_cos_sin

CFG = DFlashConfig(hidden_size=32, num_layers=2, num_heads=4, num_kv_heads=2, head_dim=8,
                   intermediate_size=48, rms_norm_eps=1e-6, rope_theta=10000.0, block_size=4,
                   mask_token_id=1, target_layer_ids=(0, 2), num_target_layers=4,
                   vocab_size=50)


def _drafter(cfg: DFlashConfig = CFG) -> DFlashDrafter:
    torch.manual_seed(0)
    return DFlashDrafter(cfg).double().eval()


def _inputs(b: int = 2, s: int = 12, n: int = 3):
    g = torch.Generator().manual_seed(1)
    taps = torch.randn(b, s, CFG.num_taps * CFG.hidden_size, generator=g, dtype=torch.float64)
    embeds = torch.randn(b, n, CFG.block_size, CFG.hidden_size, generator=g,
                         dtype=torch.float64)
    anchors = torch.tensor([[1, 5, 8], [3, 4, 7]])
    return taps, embeds, anchors


def _block(d: DFlashDrafter, taps, embeds, anchors, row: int, n: int, pad: int = 0):
    """forward_block for one training block: context = rows [0, anchor), padded by `pad`."""
    a = int(anchors[row, n])
    ctx = d.project_context(taps[row, : a + pad])
    kv = d.context_kv(ctx, torch.arange(a + pad, device=taps.device))
    pos = (a + torch.arange(d.config.block_size, device=taps.device))[None]
    return d.forward_block(embeds[row, n][None], pos, [k[None] for k, _ in kv],
                           [v[None] for _, v in kv], torch.tensor([a], device=taps.device))[0]


def test_forward_train_equals_forward_block_per_block():
    for cfg in (CFG, dataclasses.replace(CFG, layer_types=("sliding_attention", "full_attention"),
                                         sliding_window=3)):
        d = _drafter(cfg)
        taps, embeds, anchors = _inputs()
        out = d.forward_train(taps, embeds, anchors)                       # [b, N, B, H]
        assert out.shape == (2, 3, cfg.block_size, cfg.hidden_size)
        for row in range(2):
            for n in range(3):
                ref = _block(d, taps, embeds, anchors, row, n, pad=2)     # padding rows ignored
                torch.testing.assert_close(out[row, n], ref, rtol=1e-10, atol=1e-10)


def test_context_is_strictly_before_the_anchor():
    d = _drafter()
    taps, embeds, anchors = _inputs()
    base = d.forward_train(taps, embeds, anchors)
    a = int(anchors[0, 1])                                                 # anchor 5 in row 0
    at_anchor = taps.clone()
    at_anchor[0, a] += 1.0
    out = d.forward_train(at_anchor, embeds, anchors)
    torch.testing.assert_close(out[0, 1], base[0, 1], rtol=0, atol=0)     # anchor's own: unseen
    assert not torch.equal(out[0, 2], base[0, 2])                          # later anchor 8 sees it
    before = taps.clone()
    before[0, a - 1] += 1.0
    assert not torch.equal(d.forward_train(before, embeds, anchors)[0, 1], base[0, 1])


def test_batched_forward_block_matches_single_rows():
    d = _drafter()
    taps, embeds, anchors = _inputs()
    lens = torch.tensor([5, 8])
    ctx = d.project_context(taps[:, :8])
    kv = d.context_kv(ctx, torch.arange(8).expand(2, 8))
    pos = lens[:, None] + torch.arange(CFG.block_size)
    out = d.forward_block(embeds[:, 0], pos, [k for k, _ in kv], [v for _, v in kv], lens)
    for row in range(2):
        single = d.forward_block(embeds[row, 0][None], pos[row][None],
                                 [k[row : row + 1, : lens[row]] for k, _ in kv],
                                 [v[row : row + 1, : lens[row]] for _, v in kv], lens[row][None])
        torch.testing.assert_close(out[row], single[0], rtol=1e-10, atol=1e-10)


def test_rope_rotate_half_matches_complex_rotation():
    pos = torch.tensor([0, 3, 17])
    cos, sin = rope_cos_sin(pos, 8, 10000.0, torch.float64)
    x = torch.randn(3, 1, 8, dtype=torch.float64)
    y = apply_rope(x, cos, sin)
    inv = 1.0 / 10000.0 ** (torch.arange(0, 8, 2, dtype=torch.float64) / 8)
    z = torch.complex(x[..., :4], x[..., 4:]) * torch.polar(torch.ones(3, 4, dtype=torch.float64),
                                                            pos[:, None] * inv)[:, None]
    torch.testing.assert_close(y, torch.cat([z.real, z.imag], -1), rtol=1e-6, atol=1e-6)
    assert torch.equal(apply_rope(x, *rope_cos_sin(torch.zeros(3, dtype=torch.long), 8, 1e4,
                                                   torch.float64)), x)


@needs_onednn_bf16
def test_dtype_is_read_off_the_norms_so_packed_linears_do_not_hide_it() -> None:
    from turnspec.engine.model.cpu_linear import pack_bf16_linears

    d = DFlashDrafter(CFG).to(torch.bfloat16)
    assert d.dtype == torch.bfloat16 and DFlashDrafter(CFG).dtype == torch.float32
    assert pack_bf16_linears(d) > 0 and d.dtype == torch.bfloat16
