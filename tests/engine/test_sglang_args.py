"""SGLang's flags: one parse for `serve --engine sglang` and `speculator datagen --engine
sglang`."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from turnspec.engine.drafter import DEFAULT_DRAFTER_DIR
from turnspec.engine.local.args import add_engine_args
from turnspec.engine.sglang_args import add_sglang_args, sglang_config_from_args, sglang_extra


def _args(*argv: str) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    add_sglang_args(p)
    add_engine_args(p)
    return p.parse_args(list(argv))


def test_sglang_arg_values_are_json_when_they_parse() -> None:
    assert sglang_extra(["cuda_graph_max_bs=32", "enable_torch_compile=true",
                         " chunked_prefill_size =8192", "log_level=warning", "x=[1, 2]"]) == (
        ("cuda_graph_max_bs", 32), ("enable_torch_compile", True),
        ("chunked_prefill_size", 8192), ("log_level", "warning"), ("x", [1, 2]))
    for bad in ("novalue", "=1"):
        with pytest.raises(ValueError, match=rf"--sglang-arg '{bad}': expected KEY=VALUE"):
            sglang_extra([bad])


def test_config_from_the_flags(smollm2_dir: Path) -> None:
    cfg = sglang_config_from_args(_args("--model", str(smollm2_dir), "--sglang-mem-fraction",
                                        "0.4", "--sglang-arg", "cuda_graph_max_bs_decode=32",
                                        "--sglang-arg", "log_level=warning"))
    assert cfg.model_dir == str(smollm2_dir) and cfg.mem_fraction == 0.4
    assert cfg.speculator == "none" and cfg.attention_backend == "triton"
    kw = cfg.engine_kwargs()
    assert kw["cuda_graph_max_bs_decode"] == 32 and kw["log_level"] == "warning"   # applied last
    assert kw["dtype"] == "bfloat16" and kw["sampling_backend"] == "pytorch"
    spec = sglang_config_from_args(_args("--model", str(smollm2_dir), "--speculator", "default",
                                         "--spec-block-size", "8"))
    assert spec.speculator == str(DEFAULT_DRAFTER_DIR) and spec.spec_block_size == 8
    with pytest.raises(ValueError, match="mem_fraction: expected 0.1..0.95, got 0.99"):
        sglang_config_from_args(_args("--model", str(smollm2_dir), "--sglang-mem-fraction", "0.99"))


def test_the_plugin_flags(smollm2_dir: Path) -> None:
    def cfg(*flags: str):
        return sglang_config_from_args(_args("--model", str(smollm2_dir), "--speculator",
                                             "default", *flags)).plugin

    lookup = cfg("--sglang-spec", "lookup", "--sglang-spec-plan-at", "verify")
    assert lookup.mode == "lookup" and lookup.plan_at == "verify"
    assert sglang_config_from_args(_args("--model", str(smollm2_dir))).plugin.plan_at == "device"
    with pytest.raises(SystemExit):
        _args("--sglang-spec-plan-at", "later")
    trees = cfg("--sglang-spec", "trees")
    assert trees.mode == "trees" and trees.to_env()["TURNSPEC_SGLANG_SPEC"] == "trees"
    assert trees.width == "fixed" and trees.early_rows == 0
    served = cfg("--sglang-spec", "trees", "--sglang-spec-width", "served")
    assert served.to_env()["TURNSPEC_SGLANG_WIDTH"] == "served"
    early = cfg("--sglang-spec", "trees", "--sglang-early-first-token", "1")
    assert early.to_env()["TURNSPEC_SGLANG_EARLY_FIRST_TOKEN"] == "1"


@pytest.mark.parametrize(("flags", "message"), [
    (("--sglang-spec-width", "served"),
     "--sglang-spec-width served runs the plugin's plain decode step; expected --sglang-spec "
     "lookup or trees, got 'off'"),
    (("--sglang-append-graphs",),
     "--sglang-append-graphs is the plugin's; expected --sglang-spec lookup or trees, got 'off'"),
    (("--sglang-early-first-token", "4"),
     "--sglang-early-first-token 4 is the plugin's; expected --sglang-spec lookup or trees, "
     "got 'off'"),
    (("--sglang-spec", "trees", "--sglang-spec-plan-at", "verify"),
     "--sglang-spec trees plans on the GPU; expected --sglang-spec-plan-at device, got 'verify'"),
])
def test_the_plugins_refusals_name_the_command_lines_flags(smollm2_dir: Path, flags: tuple,
                                                            message: str) -> None:
    """Not the environment variables the plugin reads, which a CLI user never set."""
    with pytest.raises(ValueError) as refused:
        sglang_config_from_args(_args("--model", str(smollm2_dir), "--speculator", "default",
                                      *flags))
    assert str(refused.value) == message


def test_the_datastore_flags_arm_the_trees_branch_or_are_refused(smollm2_dir: Path,
                                                                 tmp_path: Path) -> None:
    store = tmp_path / "answers.jsonl"
    store.write_text('{"completion": [5, 6, 7, 8]}\n')
    base = ("--model", str(smollm2_dir), "--speculator", "default")
    cfg = sglang_config_from_args(_args(*base, "--sglang-spec", "trees", "--spec-datastore",
                                        str(store), "--spec-datastore-learn"))
    assert cfg.plugin.datastore == str(store) and cfg.plugin.learn_tokens == 1_000_000
    env = cfg.plugin.to_env()
    assert env["TURNSPEC_SGLANG_DATASTORE"] == str(store)
    assert type(cfg.plugin).from_env(env) == cfg.plugin     # what the scheduler processes read
    with pytest.raises(ValueError, match="expected --sglang-spec trees, got lookup"):
        sglang_config_from_args(_args(*base, "--sglang-spec", "lookup", "--spec-datastore-learn"))
    with pytest.raises(ValueError, match="no such file or folder"):
        sglang_config_from_args(_args(*base, "--sglang-spec", "trees",
                                      "--spec-datastore", str(tmp_path / "none.jsonl")))
