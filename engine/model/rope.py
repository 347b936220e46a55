"""Rotary position embeddings (rotate-half convention of Llama/Qwen), including llama3 scaling."""

from __future__ import annotations

import math

import torch

from turnspec.engine.model.config import RopeConfig


def inv_frequencies(rope: RopeConfig, head_dim: int) -> torch.Tensor:
    """[head_dim // 2] fp32 inverse frequencies."""
    inv = 1.0 / (rope.theta ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim))
    if rope.kind == "llama3":
        low_wavelen = rope.original_max_position / rope.low_freq_factor
        high_wavelen = rope.original_max_position / rope.high_freq_factor
        wavelen = 2 * math.pi / inv
        smooth = (rope.original_max_position / wavelen - rope.low_freq_factor) / (
            rope.high_freq_factor - rope.low_freq_factor)
        scaled = torch.where(wavelen > low_wavelen, inv / rope.factor, inv)
        mid = (wavelen <= low_wavelen) & (wavelen >= high_wavelen)
        scaled = torch.where(mid, (1 - smooth) * inv / rope.factor + smooth * inv, scaled)
        inv = scaled
    return inv.float()


class RotaryTable:
    """Precomputed cos/sin for every position up to `max_positions`; gathered per step."""

    def __init__(self, rope: RopeConfig, head_dim: int, max_positions: int,
                 device: torch.device, dtype: torch.dtype) -> None:
        inv = inv_frequencies(rope, head_dim)
        t = torch.arange(max_positions, dtype=torch.float32)
        freqs = torch.outer(t, inv)  # [P, hd/2]
        emb = torch.cat([freqs, freqs], dim=-1)  # [P, hd]
        self.cos = emb.cos().to(device=device, dtype=dtype)
        self.sin = emb.sin().to(device=device, dtype=dtype)
        self.max_positions = max_positions

    def lookup(self, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """positions [b, n] int64 -> (cos, sin) [b, n, head_dim]."""
        return self.cos[positions], self.sin[positions]


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """x [b, n, heads, hd]; cos/sin [b, n, hd]."""
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    rotated = torch.cat((-x2, x1), dim=-1)
    return x * cos.unsqueeze(2) + rotated * sin.unsqueeze(2)
