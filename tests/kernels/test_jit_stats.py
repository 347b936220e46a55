"""compiled_variants: no count under the interpreter (nothing compiles), and the varying
integers of the paged-attention kernels are declared unspecialised."""

from __future__ import annotations

import os

import pytest

from turnspec.kernels import paged_attention
from turnspec.kernels.jit_stats import compiled_variants


@pytest.mark.skipif(os.environ.get("TRITON_INTERPRET") != "1", reason="interpreter only")
def test_interpreted_kernels_have_no_compile_count() -> None:
    assert compiled_variants() is None


def _unspecialised(fn) -> set[str]:
    if hasattr(fn, "params"):                                   # compiled JITFunction
        return {p.name for p in fn.params if p.do_not_specialize}
    return set(fn.kwargs["do_not_specialize"])                  # interpreter


def test_split_count_and_shape_integers_are_runtime_arguments() -> None:
    # each specialised value would be a compile (~1 s on the H200) in the middle of a request
    for fn, names in ((paged_attention._paged_attention_kernel,
                       ("n_q", "max_blocks", "num_splits", "sbt_b", "sq_b", "so_b")),
                      (paged_attention._paged_attention_combine_kernel, ("n_q", "num_splits"))):
        assert set(names) <= set(fn.arg_names) and set(names) <= _unspecialised(fn)
        assert "NUM_SPLITS" not in fn.arg_names
