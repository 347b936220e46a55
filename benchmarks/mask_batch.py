"""`turnspec bench mask`'s step benches: masking a whole decode step or verify step at once.

  call rows    b tool-call rows a decode step (every row constrained): the engine's way (one
               bitmask, one copy, one kernel over the rows) against a fill + copy + apply per row
  text rows    b rows of free text under tool_choice auto (every token allowed, most of a voice
               turn): the engine's way, which leaves all-allowed rows out of the apply, against
               applying every grammar row as the engine did before
  text blocks  the same for b speculative verify blocks of B positions
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import torch

from turnspec.engine.local.grammar_mask import mask_block_rows, mask_rows
from turnspec.tools_grammar.grammar import ToolGrammarMatcher, apply_bitmask


def us_stats(samples_ns: list[int]) -> dict:
    """mean / p50 / p99 in µs and the count, from nanosecond samples."""
    xs = sorted(s / 1000 for s in samples_ns)
    return {"mean": statistics.fmean(xs), "p50": xs[len(xs) // 2],
            "p99": xs[min(len(xs) - 1, int(len(xs) * 0.99))], "n": len(xs)}


def _per_row(grammars: list[ToolGrammarMatcher], remaining: list[int], logits: torch.Tensor) -> None:
    """The per-row masking the engine's step did before mask_rows: fill, copy and apply a row."""
    for r, g in enumerate(grammars):
        bitmask = g.new_bitmask(1)
        g.fill_mask(bitmask, 0, remaining=remaining[r])
        apply_bitmask(logits[r:r + 1], bitmask.to(logits.device))


def _apply_all(grammars: list[ToolGrammarMatcher], remaining: list[int], logits: torch.Tensor) -> None:
    """mask_rows as it was before it skipped all-allowed rows: every grammar row applied."""
    bitmask = grammars[0].new_bitmask(len(grammars))
    for r, g in enumerate(grammars):
        g.fill_mask(bitmask, r, remaining=remaining[r])
    apply_bitmask(logits, bitmask)


def _apply_all_blocks(grammars: list[ToolGrammarMatcher], remaining: list[int], logits: torch.Tensor,
                      drafts: list[list[int]]) -> None:
    """mask_block_rows as it was before it skipped all-allowed rows: every position applied."""
    b, block, vocab = logits.shape
    bitmask = grammars[0].new_bitmask(b * block)
    for r, g in enumerate(grammars):
        g.fill_block_masks(drafts[r][: block - 1], bitmask, row_offset=r * block, remaining=remaining[r])
    apply_bitmask(logits.view(b * block, vocab), bitmask)


def _time(fn: Callable[..., None], args: tuple, runs: int, device: str) -> dict:
    sync: Callable[[], None] = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    samples = []
    for i in range(runs):
        sync()
        t0 = time.perf_counter_ns()
        fn(*args)
        sync()
        if i >= 2:  # warm-up (first CUDA/Triton launch compiles)
            samples.append(time.perf_counter_ns() - t0)
    return us_stats(samples)


def bench_batch(matchers: list[ToolGrammarMatcher], vocab: int, device: str,
                ways: tuple[tuple[str, Callable], ...] = (("batched", mask_rows), ("per_row", _per_row)),
                sizes: tuple[int, ...] = (1, 16, 64, 256)) -> dict:
    """µs per decode step to mask b rows (matchers cycled), each way; speedup_p50 = the second
    way's p50 over the first's."""
    out = {}
    for b in sizes:
        grammars = [matchers[i % len(matchers)] for i in range(b)]
        remaining = [64] * b
        logits = torch.randn(b, vocab, device=device)
        row = {name: _time(fn, (grammars, remaining, logits), max(12, 1200 // b), device)
               for name, fn in ways}
        row["speedup_p50"] = row[ways[1][0]]["p50"] / row[ways[0][0]]["p50"]
        out[str(b)] = row
    return out


def bench_text(matchers: list[ToolGrammarMatcher], vocab: int, device: str) -> dict:
    """Free-text rows under tool_choice auto: skipped (the engine) against applied."""
    return bench_batch(matchers, vocab, device, ways=(("skipped", mask_rows), ("applied", _apply_all)))


def bench_text_blocks(streams: list[tuple[ToolGrammarMatcher, list[int]]], vocab: int, block: int,
                      device: str, sizes: tuple[int, ...] = (1, 4, 16)) -> dict:
    """µs per verify step to mask b free-text blocks of `block` positions, drafts taken from the
    reference text: skipped (the engine) against applied."""
    out = {}
    for b in sizes:
        pick = [streams[i % len(streams)] for i in range(b)]
        grammars = [m for m, _ in pick]
        drafts = [tokens[: block - 1] for _, tokens in pick]
        remaining = [64] * b
        logits = torch.randn(b, block, vocab, device=device)
        row = {name: _time(fn, (grammars, remaining, logits, drafts), max(12, 240 // b), device)
               for name, fn in (("skipped", mask_block_rows), ("applied", _apply_all_blocks))}
        row["speedup_p50"] = row["applied"]["p50"] / row["skipped"]["p50"]
        out[str(b)] = row
    return out
