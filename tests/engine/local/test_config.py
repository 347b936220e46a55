"""LocalEngineConfig checks itself: a bad knob is an error that names it and what was expected."""

from __future__ import annotations

import re

import pytest

from turnspec.engine.local.config import LocalEngineConfig
from turnspec.engine.model.cpu_linear import CPU_GEMMS


def test_cpu_gemm_takes_auto_or_a_backend() -> None:
    for name in CPU_GEMMS:
        assert LocalEngineConfig(model_dir="m", cpu_gemm=name).cpu_gemm == name
    assert LocalEngineConfig(model_dir="m").cpu_gemm == "auto"
    message = f"cpu_gemm: expected one of {CPU_GEMMS}, got 'blas'"
    with pytest.raises(ValueError, match=re.escape(message)):
        LocalEngineConfig(model_dir="m", cpu_gemm="blas")


@pytest.mark.parametrize("kwargs, message", [
    ({"device": "tpu"}, "device: expected 'cpu' or 'cuda[:N]', got 'tpu'"),
    ({"max_batch": 0}, "max_batch: expected a positive integer, got 0"),
    ({"admit_min_free": 40}, "admit_min_free=40: expected at most max_batch=32"),
    ({"spec_policy": "never"}, "spec_policy: expected one of"),
    ({"threads": 0}, "threads: expected a positive integer or None (torch's default), got 0"),
    ({"spec_lookup": None}, "spec_lookup: expected True or False, got None"),
    ({"spec_lookup": "on"}, "spec_lookup: expected True or False, got 'on'"),
    ({"spec_branches": 0}, "spec_branches: expected an integer 1..16, got 0"),
    ({"spec_branches": 17}, "spec_branches: expected an integer 1..16, got 17"),
    ({"spec_branches": True}, "spec_branches: expected an integer 1..16, got True"),
    ({"spec_branch_rows": 0}, "spec_branch_rows: expected a positive integer or None"),
    ({"spec_branch_rows": True}, "spec_branch_rows: expected a positive integer or None"),
])
def test_bad_knobs_say_what_was_expected(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        LocalEngineConfig(model_dir="m", **kwargs)


def test_prompt_lookup_is_on_by_default() -> None:
    """On CPU and CUDA alike: the default no longer depends on the device (the H200 timed it on
    independent voice turns: docs/benchmarks.md); `--spec-lookup off` is the way out."""
    import argparse

    from turnspec.engine.local.args import add_engine_args

    assert LocalEngineConfig(model_dir="m").spec_lookup is True
    p = argparse.ArgumentParser()
    add_engine_args(p)
    assert p.parse_args([]).spec_lookup == "on"
    assert p.parse_args(["--spec-lookup", "off"]).spec_lookup == "off"


def test_verify_branches_default_to_sixteen_on_cuda_with_a_drafter_only() -> None:
    """CUDA serves sixteen verify branches a greedy row by default (a branch is one more row of a
    launch-bound verify there); a CPU, where a branch costs a row's compute, and an engine
    without a drafter verify one; an explicit count always wins."""
    cfg = LocalEngineConfig(model_dir="m")
    assert cfg.branches_for(on_cpu=False, has_drafter=True) == 16
    assert cfg.branches_for(on_cpu=True, has_drafter=True) == 1
    assert cfg.branches_for(on_cpu=False, has_drafter=False) == 1
    assert LocalEngineConfig(model_dir="m", spec_branches=2).branches_for(True, True) == 2
