"""The attention masks, pinned entry by entry: context strictly before the anchor (`<`, not
`<=`: the SpecForge tau~1.3 bug), bidirectional inside a block, nothing across blocks."""

from __future__ import annotations

import torch

from turnspec.engine.drafter.masks import inference_mask, training_mask


def test_training_mask_context_strictly_before_anchor_and_blocks_isolated():
    s, blk = 10, 3
    anchors = torch.tensor([[2, 6]])
    m = training_mask(anchors, s, blk, causal=False, window=None)[0, 0]   # [6, 10 + 6]
    assert m.shape == (6, 16)
    for q in range(6):
        n = q // blk
        a = int(anchors[0, n])
        ctx = m[q, :s]
        assert ctx[:a].all() and not ctx[a:].any(), (q, ctx)   # kv < anchor, the anchor excluded
        blocks = m[q, s:].view(2, blk)
        assert blocks[n].all() and not blocks[1 - n].any()      # bidirectional, own block only


def test_training_mask_sliding_layers_causal_with_window():
    anchors = torch.tensor([[5]])
    m = training_mask(anchors, 8, 4, causal=True, window=3)[0, 0]          # [4, 12]
    for i in range(4):
        q_pos = 5 + i
        ctx = m[i, :8].nonzero().flatten().tolist()
        assert ctx == [j for j in range(5) if q_pos - j < 3]
        blk = m[i, 8:].nonzero().flatten().tolist()
        assert blk == [j for j in range(4) if j <= i and i - j < 3]


def test_inference_mask_respects_ctx_lens():
    pos = torch.tensor([[4, 5, 6], [2, 3, 4]])
    m = inference_mask(pos, torch.tensor([4, 2]), 5, causal=False, window=None)[:, 0]
    assert m.shape == (2, 3, 8)
    assert m[0, :, :5].tolist() == [[True] * 4 + [False]] * 3
    assert m[1, :, :5].tolist() == [[True] * 2 + [False] * 3] * 3
    assert m[:, :, 5:].all()
    # sliding: context rows sit right before the anchor (row j at anchor - ctx_len + j)
    w = inference_mask(pos, torch.tensor([4, 2]), 5, causal=True, window=3)[0, 0]
    assert w[0, :5].tolist() == [False, False, True, True, False]       # q=4 sees pos 2, 3
    assert w[2, 5:].tolist() == [True, True, True] and w[0, 5:].tolist() == [True, False, False]
