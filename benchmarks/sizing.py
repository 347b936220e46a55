"""8B-class sizing without weights: SGLang's step times for a Qwen3-8B-shaped target (GPU).

`python -m turnspec.benchmarks.sizing --block B --out DIR` writes a Qwen3-8B config (or the
`--config` one) and, with B >= 2, a DFlash drafter config of the matching shape, starts SGLang with
`load_format="dummy"` (random weights, nothing downloaded), and times one decode step (B = 0:
no speculation) or one DFlash step, draft plus verify of B tokens (B >= 2), at each concurrency.
Random weights make acceptance meaningless; only the costs count. `--merge DIR` folds the
per-block files into the measured-points JSON that `turnspec simulate --measured` reads.
Blocks of 16 to 256 give the verify-cost table by width that scripts/analysis/
width_projection.py --measured turns into the width rule's choices; `--plugin lookup|trees`
arms turnspec's speculator inside that DFLASH (engine/sglang_plugin/; trees up to B = 32).

A step's time is measured from the wall clock of two batched calls with fresh random prompts:
one that only prefills (1 new token) and one that also decodes N - 1 tokens (`ignore_eos`), so
(T_N - T_1) / steps is the step time with prefill and launch costs cancelled; with DFlash the
steps are SGLang's `spec_verify_ct`. Each point is the median of `--repeat` such pairs.
Run on the lent H200: scripts/gpu/sizing.sh.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from pathlib import Path
from typing import Any

QWEN3_8B: dict[str, Any] = {
    "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": 4096,
    "intermediate_size": 12288, "num_hidden_layers": 36, "num_attention_heads": 32,
    "num_key_value_heads": 8, "head_dim": 128, "hidden_act": "silu", "rms_norm_eps": 1e-6,
    "rope_theta": 1000000, "rope_scaling": None, "max_position_embeddings": 40960,
    "vocab_size": 151936, "tie_word_embeddings": False, "attention_bias": False,
    "attention_dropout": 0.0, "bos_token_id": 151643, "eos_token_id": 151645,
    "torch_dtype": "bfloat16", "use_sliding_window": False, "sliding_window": None}


def drafter_config(target: dict[str, Any], layers: int, block: int) -> dict[str, Any]:
    """A DFlash drafter (z-lab layout) with the target's layer shape, tapping `layers` evenly
    spaced target layers, as SGLang's DFLASH loads it."""
    n = target["num_hidden_layers"]
    taps = [round(1 + i * (n - 4) / (layers - 1)) for i in range(layers)] if layers > 1 else [1]
    keep = ("model_type", "hidden_size", "intermediate_size", "num_attention_heads",
            "num_key_value_heads", "head_dim", "hidden_act", "rms_norm_eps", "rope_theta",
            "rope_scaling", "max_position_embeddings", "vocab_size", "attention_bias",
            "torch_dtype")
    return {**{k: target[k] for k in keep}, "architectures": ["DFlashDraftModel"],
            "num_hidden_layers": layers, "tie_word_embeddings": False, "block_size": block,
            "num_target_layers": n,
            "dflash_config": {"mask_token_id": target["vocab_size"] - 300, "target_layer_ids": taps},
            "layer_types": ["full_attention"] * layers, "use_sliding_window": False,
            "sliding_window": None}


def target_config(path: str | None) -> dict[str, Any]:
    """The target to size: an HF config.json (any decoder SGLang builds), or Qwen3-8B."""
    if path is None:
        return QWEN3_8B
    cfg = json.loads(Path(path).read_text())
    missing = {"architectures", "hidden_size", "num_hidden_layers", "vocab_size"} - cfg.keys()
    if missing:
        raise SystemExit(f"--config {path}: expected an HF config.json, missing {sorted(missing)}")
    return cfg


def copy_bandwidth_gbs(gib: float = 2.0, repeat: int = 20) -> float:
    """Device-to-device copy bandwidth in GB/s, counting bytes read and written (median)."""
    import torch

    src = torch.empty(int(gib * 2**30), dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    times = []
    for i in range(repeat + 3):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        dst.copy_(src)
        b.record()
        torch.cuda.synchronize()
        if i >= 3:
            times.append(a.elapsed_time(b) / 1000.0)
    return 2 * src.numel() / statistics.median(times) / 1e9


def _prompts(rng: random.Random, n: int, length: int, vocab: int) -> list[list[int]]:
    return [[rng.randrange(1000, vocab - 1000) for _ in range(length)] for _ in range(n)]


def measure_point(engine: Any, conc: int, args: argparse.Namespace, rng: random.Random,
                  vocab: int) -> dict[str, Any]:
    params = {"temperature": 0.0, "ignore_eos": True}
    steps_ms, verify = [], []
    for _ in range(args.repeat):
        t = time.perf_counter()
        engine.generate(input_ids=_prompts(rng, conc, args.prompt_tokens, vocab),
                        sampling_params={**params, "max_new_tokens": 1})
        t1 = time.perf_counter() - t
        t = time.perf_counter()
        out = engine.generate(input_ids=_prompts(rng, conc, args.prompt_tokens, vocab),
                              sampling_params={**params, "max_new_tokens": args.decode_tokens})
        tn = time.perf_counter() - t
        metas = [o["meta_info"] for o in out]
        if args.block >= 2:
            steps = max(int(m.get("spec_verify_ct") or 0) for m in metas)
            verify.append(statistics.mean(m["completion_tokens"] / max(m.get("spec_verify_ct") or 1, 1)
                                          for m in metas))
        else:
            steps = args.decode_tokens - 1
        if steps <= 0:
            raise RuntimeError(f"no decode steps reported at concurrency {conc}: {metas[0]}")
        steps_ms.append((tn - t1) * 1000.0 / steps)
    point = {"mode": "dflash" if args.block >= 2 else "decode", "concurrency": conc,
             "block": max(args.block, 1), "step_ms": round(statistics.median(steps_ms), 4),
             "step_ms_all": [round(s, 4) for s in steps_ms], "steps": steps}
    if verify:
        point["accept_len"] = round(statistics.median(verify), 3)
    return point


def run(args: argparse.Namespace) -> dict[str, Any]:
    import sglang

    out = Path(args.out)
    target = target_config(args.config)
    target_dir = out / "target-dummy"
    target_dir.mkdir(parents=True, exist_ok=True)
    (target_dir / "config.json").write_text(json.dumps(target, indent=1))
    kw: dict[str, Any] = {
        "model_path": str(target_dir), "load_format": "dummy", "skip_tokenizer_init": True,
        "dtype": "bfloat16", "attention_backend": "triton", "sampling_backend": "pytorch",
        "mem_fraction_static": args.mem_fraction, "context_length": args.prompt_tokens + args.decode_tokens + 64 + args.block,
        "cuda_graph_max_bs_decode": max(args.concurrency), "log_level": "error"}
    draft = None
    if args.plugin != "off":
        from turnspec.engine.sglang_plugin.arm import arm
        from turnspec.engine.sglang_plugin.config import PluginConfig

        arm(PluginConfig(mode=args.plugin))
    if args.block >= 2:
        draft = drafter_config(target, args.drafter_layers, args.block)
        ddir = out / f"dflash-{args.drafter_layers}l-dummy"
        ddir.mkdir(exist_ok=True)
        (ddir / "config.json").write_text(json.dumps(draft, indent=1))
        kw |= {"speculative_algorithm": "DFLASH", "speculative_draft_model_path": str(ddir),
               "speculative_draft_load_format": "dummy",
               "speculative_num_draft_tokens": args.block}
    t0 = time.perf_counter()
    engine = sglang.Engine(**kw)
    up_s = time.perf_counter() - t0
    rng = random.Random(args.seed)
    try:
        vocab = target["vocab_size"]
        measure_point(engine, max(args.concurrency), argparse.Namespace(
            **{**vars(args), "repeat": 1, "decode_tokens": 16}), rng, vocab)  # warm-up
        points = []
        for conc in args.concurrency:
            points.append(measure_point(engine, conc, args, rng, vocab))
            print(json.dumps(points[-1]), flush=True)
    finally:
        engine.shutdown()
    return {"block": args.block, "plugin": args.plugin, "engine_up_s": round(up_s, 1),
            "sglang": sglang.__version__,
            "model_config": target, "drafter_config": draft, "points": points}


def merge(folder: Path) -> dict[str, Any]:
    """The per-block files of one run as the measured-points JSON of `turnspec simulate`."""
    parts = [json.loads(p.read_text()) for p in sorted(folder.glob("sizing-b*.json"))]
    if not parts:
        raise SystemExit(f"{folder}: no sizing-b*.json files to merge")
    plugins = {p.get("plugin", "off") for p in parts if p["block"] >= 2}
    if len(plugins) > 1:
        raise SystemExit(f"{folder}: blocks measured with different plugin modes {sorted(plugins)}; "
                         "expected one mode a folder")
    meta = json.loads((folder / "sizing-meta.json").read_text())
    # one drafter shape for every point: the config of the largest block (the others differ
    # only in `block_size`, and a drafter serves any block up to its own)
    drafters = sorted((p["drafter_config"] for p in parts if p["drafter_config"]),
                      key=lambda d: d["block_size"], reverse=True)
    return {**meta, "plugin": plugins.pop() if plugins else "off",
            "model_config": parts[0]["model_config"],
            "drafter_config": drafters[0] if drafters else None,
            "engine_up_s": {str(p["block"]): p["engine_up_s"] for p in parts},
            "points": [pt for p in parts for pt in p["points"]]}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, help="folder for configs and JSON")
    p.add_argument("--config", default=None,
                   help="target HF config.json to size (default: Qwen3-8B's, built here)")
    p.add_argument("--block", type=int, default=0, help="0: no speculation; >= 2: DFlash block")
    p.add_argument("--concurrency", type=lambda s: [int(x) for x in s.split(",")],
                   default=[1, 8, 32])
    p.add_argument("--prompt-tokens", type=int, default=1024)
    p.add_argument("--decode-tokens", type=int, default=128)
    p.add_argument("--drafter-layers", type=int, default=5)
    p.add_argument("--plugin", choices=("off", "lookup", "trees"), default="off",
                   help="turnspec's speculator inside DFLASH (needs --block >= 2)")
    p.add_argument("--mem-fraction", type=float, default=0.85,
                   help="SGLang's mem_fraction_static: weights and KV pool; the rest holds the "
                        "CUDA graphs, which grow with the block (256 nodes at 32 streams on an "
                        "80 GB H100 ran out of memory at 0.85)")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--bandwidth", action="store_true",
                   help="only measure the copy bandwidth and the device into sizing-meta.json")
    p.add_argument("--merge", action="store_true", help="merge the folder's files into sizing.json")
    args = p.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.block == 1 or args.block < 0:
        raise SystemExit(f"--block: expected 0 (no speculation) or >= 2, got {args.block}")
    if not 0.0 < args.mem_fraction < 1.0:
        raise SystemExit(f"--mem-fraction: expected a fraction in (0, 1), got {args.mem_fraction}")
    if args.plugin != "off" and args.block < 2:
        raise SystemExit(f"--plugin {args.plugin}: rides on DFLASH; expected --block >= 2")
    if args.merge:
        (out / "sizing.json").write_text(json.dumps(merge(out), indent=1))
        print(out / "sizing.json")
    elif args.bandwidth:
        import torch

        meta = {"device": torch.cuda.get_device_name(), "copy_bandwidth_gbs":
                round(copy_bandwidth_gbs(), 1), "prompt_tokens": args.prompt_tokens,
                "decode_tokens": args.decode_tokens}
        (out / "sizing-meta.json").write_text(json.dumps(meta, indent=1))
        print(json.dumps(meta))
    else:
        res = run(args)
        (out / f"sizing-b{args.block:02d}.json").write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
