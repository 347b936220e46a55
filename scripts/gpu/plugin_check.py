"""turnspec's speculator inside SGLang, checked on the GPU: the independent set's turns through
`sglang.Engine` with no speculation, stock DFLASH, and DFLASH with the plugin armed, greedy.

usage (on the device, after `sglang.sh unpack`; one mode a process, as SGLang starts one engine
a process cleanly):
    python3 scripts/gpu/plugin_check.py run none|stock|lookup|device|trees|trees-learn|trees32|served OUT.json [--n 64]
    python3 scripts/gpu/plugin_check.py compare OUT_DIR      # none.json, stock.json, lookup.json, ...

`lookup` plans on the host before the verify (TURNSPEC_SGLANG_PLAN_AT=verify), `device` on the
GPU (the plugin's default); `trees` verifies a token tree a greedy row (TURNSPEC_SGLANG_SPEC=trees).

`run` writes each turn's output ids, verify steps and committed tokens, the wall time, and the
plugin's counters from SGLang's own server info. `compare` prints τ per split (tokens per
verify step, SGLang's `spec_verify_ct`), output tok/s over the batch, and how many turns each
speculative mode answers exactly as no speculation does (bf16: a verify of 16 tokens and a
one-token decode may round differently at near-ties, for stock DFLASH as for the plugin;
with `--dtype float16`, three more mantissa bits, such ties are rarer, and `compare` names every
turn that differs). float32 cannot run: SGLang 0.5.17's CUDA RMSNorm (sgl_kernel) takes half
types only ("rmsnorm ... failed to dispatch data type Float", seen on the H100).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EVALSET = ROOT / "docs/gpu-runs/2026-12-04-copy-rule/evalset-samples.jsonl.gz"
SPLITS = ("independent-voice", "independent-generic")
CHUNK = 32  # prompts a generate call (cuda_graph_max_bs_decode below)
MODES = ("none", "stock", "lookup", "device", "trees", "trees-learn", "trees32", "served")
# the plugin's modes; trees-learn: trees with a learning datastore (later batches draw on the
# answers of earlier ones: other conversations of the same kinds); trees32: trees of 32 nodes
# a row (DFLASH's block of 32: the drafter's 31 drafts, more swaps and the lookup among them);
# served: trees, or plain decode where that commits more a second (TURNSPEC_SGLANG_WIDTH=served)
PLAN_AT = {"lookup": "verify", "device": "device", "trees": "device", "trees-learn": "device",
           "trees32": "device", "served": "device"}


def turns(n: int) -> list[tuple[str, str, list[int]]]:
    """(split, id, prompt ids) of `n` turns a split, spread as `speculator eval` spreads them."""
    from turnspec.speculator.data import read_samples
    from turnspec.speculator.train_io import eval_splits

    with tempfile.TemporaryDirectory() as tmp:
        plain = Path(tmp) / "evalset.jsonl"
        plain.write_bytes(gzip.decompress(EVALSET.read_bytes()))
        splits = eval_splits(read_samples(plain), n)
    return [(name, s.id, list(s.input_ids[: s.prompt_len])) for name in SPLITS for s in splits[name]]


def run(mode: str, out: Path, n: int, max_new: int, model: str, drafter: str,
        mem: float = 0.7, dtype: str = "bfloat16") -> None:
    import sglang

    from turnspec.engine.sglang_plugin.arm import arm
    from turnspec.engine.sglang_plugin.config import PluginConfig

    spec = ("trees" if mode.startswith("trees") or mode == "served" else
            "lookup" if mode in PLAN_AT else "off")
    arm(PluginConfig(mode=spec, plan_at=PLAN_AT.get(mode, "device"),
                     learn_tokens=1_000_000 if mode == "trees-learn" else 0,
                     width="served" if mode == "served" else "fixed"))
    kw = {"model_path": model, "dtype": dtype, "attention_backend": "triton",
          "sampling_backend": "pytorch", "mem_fraction_static": mem, "log_level": "error",
          "cuda_graph_max_bs_decode": 32}
    if mode != "none":
        kw |= {"speculative_algorithm": "DFLASH", "speculative_draft_model_path": drafter}
    if mode == "trees32":
        kw["speculative_num_draft_tokens"] = 32
    todo = turns(n)
    engine = sglang.Engine(**kw)
    params = {"temperature": 0, "max_new_tokens": max_new}
    engine.generate(input_ids=[todo[0][2]], sampling_params=params)  # warm
    got, wall = [], 0.0
    for i in range(0, len(todo), CHUNK):  # batches the CUDA graphs cover
        t0 = time.perf_counter()
        got += engine.generate(input_ids=[p for _, _, p in todo[i : i + CHUNK]],
                               sampling_params=params)
        wall += time.perf_counter() - t0
    info = engine.get_server_info()
    engine.shutdown()
    rows = [{"split": split, "id": sid, "output_ids": g.get("output_ids"),
             "verify_steps": int(g["meta_info"].get("spec_verify_ct") or 0),
             "tokens": int(g["meta_info"]["completion_tokens"])}
            for (split, sid, _), g in zip(todo, got, strict=True)]
    states = info.get("internal_states") or [{}]
    out.write_text(json.dumps({"mode": mode, "dtype": dtype, "wall_s": wall, "max_new": max_new,
                               "rows": rows,
                               "plugin": states[0].get("turnspec"),
                               "avg_spec_accept_length": states[0].get("avg_spec_accept_length")},
                              indent=1) + "\n")
    print(f"{mode}: {len(rows)} turns in {wall:.1f} s; plugin {states[0].get('turnspec')}")


def compare(folder: Path) -> None:
    runs = {m: json.loads((folder / f"{m}.json").read_text()) for m in MODES
            if (folder / f"{m}.json").exists()}
    dtypes = {doc.get("dtype", "bfloat16") for doc in runs.values()}
    if len(dtypes) > 1:
        raise SystemExit(f"{folder}: runs in several dtypes {sorted(dtypes)}; expected one "
                         "(answers in bf16 and fp32 differ at ties whatever the speculation)")
    ref = {r["id"]: r["output_ids"] for r in runs.get("none", {"rows": []})["rows"]}
    print(f"{'mode':11} {'split':22} {'tau':>6} {'tok/s':>8} {'same as none':>13}")
    for mode, doc in runs.items():
        tok_s = sum(r["tokens"] for r in doc["rows"]) / doc["wall_s"]
        for split in SPLITS:
            rows = [r for r in doc["rows"] if r["split"] == split]
            steps = sum(r["verify_steps"] for r in rows)
            tau = sum(r["tokens"] for r in rows) / steps if steps else float("nan")
            same = sum(ref.get(r["id"]) == r["output_ids"] for r in rows)
            print(f"{mode:11} {split:22} {tau:6.2f} {tok_s:8.0f} {same:>6}/{len(rows)}")
        if doc.get("plugin"):
            print(f"{'':11} plugin: {doc['plugin']}")
        if dtypes != {"bfloat16"} and ref:  # ties rarer than in bf16: every difference by name
            differ = [r["id"] for r in doc["rows"] if ref.get(r["id"]) != r["output_ids"]]
            print(f"{'':11} {doc.get('dtype')}, differs from none on: {differ or 'no turn'}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("mode", choices=MODES)
    r.add_argument("out", type=Path)
    r.add_argument("--n", type=int, default=64)
    r.add_argument("--max-new", type=int, default=160)
    r.add_argument("--model", default=os.environ.get("MODEL", ""))
    r.add_argument("--drafter", default="/tmp/sgcarry/drafter")
    r.add_argument("--mem", type=float, default=0.7,
                   help="SGLang's mem_fraction_static (0.25 lets the three modes share one GPU)")
    r.add_argument("--dtype", choices=("bfloat16", "float16"), default="bfloat16",
                   help="float16: three more mantissa bits than bf16, so fewer near-ties; "
                        "compare names every turn that differs (float32: SGLang's RMSNorm "
                        "kernel takes half types only)")
    c = sub.add_parser("compare")
    c.add_argument("folder", type=Path)
    args = p.parse_args()
    if args.cmd == "compare":
        compare(args.folder)
        return
    from turnspec.engine.local.args import resolve_model_dir

    run(args.mode, args.out, args.n, args.max_new, args.model or resolve_model_dir(None),
        args.drafter, args.mem, args.dtype)


if __name__ == "__main__":
    main()
