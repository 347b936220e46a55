"""The arithmetic of the planner's lookup rule (engine/spec/planner.py `lookup_wins`), written
once in the one form that Python numbers, torch tensors and Triton kernels all run: the
embedded engine and the τ replay call it on a row's numbers, the SGLang plugin on a batch's
tensors (plan_lookup.py `reference_choose`) and inside its plan kernel (`_choose_kernel`). Unannotated on purpose: Triton compiles a function's annotations.

  n         the lookup continuation's length
  agrees    its first tokens are the drafter's own first drafts
  verified  the drafts the row would verify of the drafter's block
  expected  the drafter's expected accepted drafts
  below     take the continuation where the drafter expects fewer than this
  match     how many of the row's last tokens the continuation's source matches
  match_min a match this long is a copy in progress
"""

from __future__ import annotations

import triton
import triton.language as tl  # noqa: F401 (Triton's interpreter patches it into a jit'd function)


def wins(n, agrees, verified, expected, below, match, match_min):
    """The continuation replaces the drafter's block (a single copied token never does)."""
    return (n >= 2) & ((expected < below) | (agrees & (n > verified))
                       | ((match >= match_min) & (n > expected + 1)))


wins_in_kernel = triton.jit(wins)
