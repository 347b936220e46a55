"""`turnspec simulate`: predicted decode and DFlash step times, tokens per second and speedup for a
target (and drafter) on a device, from the model's shapes, a roofline and τ; with --measured,
each measured point against its prediction. The model and its assumptions: docs/simulate.md.

    turnspec simulate --model qwen3-8b --drafter dflash-5 --hardware h200 --bandwidth-gbs 4210 \\
        --tau 6.5 --blocks 4,8,16 --concurrency 1,8,32
    turnspec simulate --measured run.json [--calibrate [--fit-on 1,8]] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from typing import Any

from turnspec.benchmarks.simulate import (
    DEFAULT_OVERHEAD_MS,
    HARDWARE,
    Prediction,
    Simulation,
    alpha_from_tau,
    hardware,
    projection,
    tau_at_block,
)
from turnspec.benchmarks.simulate_fit import (
    Calibration,
    calibrated_projection,
    calibrated_rows,
    fit,
)
from turnspec.benchmarks.simulate_measured import (
    FLAG_ABOVE,
    Comparison,
    MeasuredRun,
    compare,
    read_measured,
)
from turnspec.benchmarks.simulate_shapes import (
    DRAFTER_PRESETS,
    MODEL_PRESETS,
    DrafterShape,
    TransformerShape,
    load_drafter,
    load_model,
)


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("simulate", help="token-timing model of decode and DFlash steps "
                                               "(roofline + τ), against measured points")
    p.add_argument("--model", default=None,
                   help=f"{' | '.join(MODEL_PRESETS)} | PATH to an HF config.json or model folder "
                        "(default: the --measured file's model_config, else qwen3-8b)")
    p.add_argument("--drafter", default=None,
                   help=f"{' | '.join(DRAFTER_PRESETS)} | PATH to a z-lab drafter config.json or "
                        "folder (default: the --measured file's drafter_config, else dflash-5)")
    p.add_argument("--hardware", choices=tuple(HARDWARE), default=None,
                   help="spec-sheet bandwidth and dense bf16 peak (default: the preset the "
                        "--measured file's device names, else h200)")
    p.add_argument("--bandwidth-gbs", type=float, default=None,
                   help="memory bandwidth in GB/s, e.g. a measured copy bandwidth (default: the "
                        "--measured file's copy_bandwidth_gbs, else the preset's)")
    p.add_argument("--peak-tflops", type=float, default=None, help="peak FLOP/s x 1e12")
    p.add_argument("--overhead-ms", type=float, default=DEFAULT_OVERHEAD_MS,
                   help="fixed time per forward pass that the roofline cannot see: kernel "
                        "launches and scheduling (default: %(default)s)")
    p.add_argument("--weight-bytes", type=float, default=2.0, help="bytes per weight (bf16: 2)")
    p.add_argument("--kv-bytes", type=float, default=2.0, help="bytes per KV element (bf16: 2)")
    p.add_argument("--tau", type=float, default=None,
                   help="tokens per DFlash step (bonus included) measured at --tau-block; "
                        "carried to smaller blocks through an i.i.d. acceptance rate")
    p.add_argument("--tau-block", type=int, default=None,
                   help="block --tau was measured at (default: the drafter's block_size, 16)")
    p.add_argument("--blocks", default="4,8,16", help="block sizes B (default: %(default)s)")
    p.add_argument("--concurrency", default="1,8,32",
                   help="concurrent users b, one row each (default: %(default)s)")
    p.add_argument("--context", type=float, default=None,
                   help="tokens already in each row's KV (default: the --measured file's "
                        "prompt_tokens + decode_tokens / 2, else 1024)")
    p.add_argument("--measured", default=None, help="measured points JSON (docs/simulate.md)")
    p.add_argument("--compare-published", type=float, default=None, metavar="TOK_S",
                   help="a published tok/s at concurrency 1 to set the projection against")
    p.add_argument("--calibrate", action="store_true",
                   help="with --measured: fit the bandwidth efficiency, the per-pass overhead and "
                        "a DFlash step's extra cost on the points, then predict them again")
    p.add_argument("--fit-on", default=None, metavar="B,B",
                   help="with --calibrate: fit on these concurrencies only; the other points "
                        "check the fit (default: every point)")
    p.add_argument("--json", default=None, help="also write the record here")
    p.set_defaults(func=run)


def _ints(text: str, flag: str, minimum: int) -> list[int]:
    try:
        values = [int(x) for x in text.split(",")]
    except ValueError:
        raise ValueError(f"{flag} {text!r}: expected comma-separated integers") from None
    if any(v < minimum for v in values):
        raise ValueError(f"{flag} {text!r}: expected every value >= {minimum}")
    return values


def _setup(args: argparse.Namespace, measured: MeasuredRun | None
           ) -> tuple[str, str, Simulation]:
    """(model label, drafter label, simulation): command-line flags first, then the measured
    file's configs, device and bandwidth, then the defaults."""
    if args.model is None and measured is not None and measured.model_config:
        model_label = "model_config of --measured"
        target = TransformerShape.from_hf_dict(measured.model_config, model_label)
    else:
        model_label, target = load_model(args.model or "qwen3-8b")
    drafter: DrafterShape | None
    if args.drafter is None and measured is not None:
        drafter_label = "drafter_config of --measured" if measured.drafter_config else "none"
        drafter = (DrafterShape.from_hf_dict(measured.drafter_config, drafter_label)
                   if measured.drafter_config else None)
    else:
        drafter_label, drafter = load_drafter(args.drafter or "dflash-5", target)
    name = args.hardware
    if name is None and measured is not None:
        name = measured.hardware_name()
        if name is None:
            raise ValueError(f"--measured device {measured.device!r} names no hardware preset; "
                             f"expected --hardware {'|'.join(HARDWARE)}")
    bandwidth = args.bandwidth_gbs
    if bandwidth is None and measured is not None:
        bandwidth = measured.copy_bandwidth_gbs
    hw = hardware(name or "h200", bandwidth, args.peak_tflops)
    return model_label, drafter_label, Simulation(target, drafter, hw, args.overhead_ms,
                                                  args.weight_bytes, args.kv_bytes)


def _taus(args: argparse.Namespace, sim: Simulation,
          blocks: list[int]) -> tuple[int | None, dict[int, float] | None]:
    """(the block τ was measured at, τ(B) per block); None without a drafter / without --tau."""
    if sim.drafter is not None and max(blocks) > sim.drafter.block_size:
        raise ValueError(f"--blocks {args.blocks}: expected at most the drafter's trained block "
                         f"{sim.drafter.block_size} (the engine refuses a larger one)")
    if args.compare_published is not None and not (args.tau and args.compare_published > 0):
        raise ValueError(f"--compare-published {args.compare_published}: expected a tok/s > 0 "
                         "and --tau (the projection needs it)")
    tau_block = args.tau_block
    if sim.drafter is not None and tau_block is None:
        tau_block = sim.drafter.block_size
    if args.tau is None:
        return tau_block, None
    if sim.drafter is None:
        raise ValueError("--tau: expected a drafter (--drafter none has no DFlash step)")
    if tau_block is None or tau_block < 2:
        raise ValueError(f"--tau-block {tau_block}: expected >= 2")
    return tau_block, {b: tau_at_block(args.tau, tau_block, b) for b in blocks}


def run(args: argparse.Namespace) -> int:
    measured = read_measured(args.measured) if args.measured else None
    model_label, drafter_label, sim = _setup(args, measured)
    blocks = _ints(args.blocks, "--blocks", minimum=2)
    concurrency = _ints(args.concurrency, "--concurrency", minimum=1)
    ctx = args.context if args.context is not None else (
        measured.context if measured is not None else 1024.0)
    if ctx < 0:
        raise ValueError(f"--context {ctx}: expected >= 0 tokens")
    tau_block, taus = _taus(args, sim, blocks)
    if sim.drafter is None:
        preds = [sim.predict(b, None, ctx) for b in concurrency]
    else:
        preds = [sim.predict(b, B, ctx, taus[B] if taus else None)
                 for b in concurrency for B in blocks]
    record: dict[str, Any] = {
        "tool": "simulate", "model": model_label, "target": asdict(sim.target),
        "target_params": sim.target.params, "drafter": drafter_label,
        "drafter_shape": asdict(sim.drafter) if sim.drafter else None,
        "drafter_params": sim.drafter.params if sim.drafter else None,
        "hardware": asdict(sim.hardware), "overhead_ms": sim.overhead_ms,
        "weight_bytes": sim.weight_bytes, "kv_bytes": sim.kv_bytes, "context": ctx,
        "tau": args.tau, "tau_block": tau_block,
        "predictions": [p.to_dict() for p in preds], "projection": None, "measured": None}
    print_header(record, sim)
    print_predictions(preds)
    if taus:
        record["projection"] = projection(sim, max(blocks), ctx, taus[max(blocks)],
                                          args.compare_published)
        print_projection(record["projection"])
    if measured is not None:
        comparisons = compare(sim, measured)
        record["measured"] = {"device": measured.device, "sglang": measured.sglang,
                              "context": measured.context, "points": [c.to_dict()
                                                                      for c in comparisons]}
        print_measured(measured, comparisons)
    if args.calibrate or args.fit_on:
        if measured is None:
            raise ValueError("--calibrate: expected --measured (the points to fit)")
        fit_on = tuple(_ints(args.fit_on, "--fit-on", minimum=1)) if args.fit_on else None
        cal = fit(sim, measured, fit_on)
        rows = calibrated_rows(sim, measured, cal)
        record["calibration"] = {"constants": cal.to_dict(), "points": rows}
        print_calibrated(cal, rows)
        if taus:
            record["calibration"]["projection"] = calibrated_projection(
                sim, cal, max(blocks), ctx, taus[max(blocks)], args.compare_published)
            print_projection(record["calibration"]["projection"], "calibrated projection")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(record, f, indent=2)
        print(f"wrote {args.json}")
    return 0


def _f(x: float | None, spec: str, width: int) -> str:
    return f"{'-':>{width}}" if x is None else f"{x:>{width}{spec}}"


WIDTH = 100


def print_header(r: dict[str, Any], sim: Simulation) -> None:
    t, d, hw = sim.target, sim.drafter, sim.hardware
    print(f"\n{' turnspec simulate ':=^{WIDTH}}")
    print(f"target {r['model']}: {t.params:,} params, a pass reads "
          f"{t.read_params * sim.weight_bytes / 1e9:.2f} GB of weights")
    if d is not None:
        print(f"drafter {r['drafter']}: {d.layers.num_layers} layers, {d.params:,} params + "
              f"the target's LM head, taps {d.target_layer_ids}, trained B={d.block_size}")
    sheet = HARDWARE[hw.name]
    bw = f"{hw.bandwidth / 1e9:.0f} GB/s" + ("" if hw.bandwidth == sheet.bandwidth
                                             else f" (sheet {sheet.bandwidth / 1e9:.0f})")
    peak = f"{hw.peak_flops / 1e12:.0f} TFLOP/s" + (
        "" if hw.peak_flops == sheet.peak_flops else f" (sheet {sheet.peak_flops / 1e12:.0f})")
    print(f"hardware {hw.name}: {bw}, {peak}; overhead {sim.overhead_ms:g} ms per pass; "
          f"{sim.weight_bytes:g} B per weight, {sim.kv_bytes:g} B per KV element")
    line = f"context {r['context']:g} tokens per row"
    if r["tau"] is not None:
        alpha = alpha_from_tau(r["tau"], r["tau_block"])
        line += (f"; tau {r['tau']:g} at B={r['tau_block']}, i.i.d. alpha {alpha:.3f} for "
                 "smaller B;\ndrafter context rows per step = tau(B)")
    elif d is not None:
        line += "; no --tau (tok/s and eta need it); drafter context rows per step = 1"
    print(line)


def print_predictions(preds: list[Prediction]) -> None:
    hdr = (f"{'b':>4}{'B':>4}{'t_AR ms':>9}{'T_draft':>9}{'T_verify':>10}{'c':>7}{'v':>7}"
           f"{'tau(B)':>8}{'tok/s/user':>12}{'tok/s total':>13}{'eta':>8}  bound")
    print(hdr)
    print("-" * WIDTH)
    for p in preds:
        bound = "".join("-" if s is None else s.bound[0] for s in (p.decode, p.draft, p.verify))
        print(f"{p.concurrency:>4}{_f(p.block, 'd', 4)}{p.decode.ms:>9.3f}"
              f"{_f(p.draft and p.draft.ms, '.3f', 9)}{_f(p.verify and p.verify.ms, '.3f', 10)}"
              f"{_f(p.c, '.3f', 7)}{_f(p.v, '.3f', 7)}{_f(p.tau, '.2f', 8)}"
              f"{_f(p.tok_s_user, '.1f', 12)}{_f(p.tok_s_total, '.0f', 13)}"
              f"{_f(p.speedup, '.2f', 7)}{'x' if p.speedup is not None else ' '}  {bound}")
    print("-" * WIDTH)
    print("ms per pass; c = T_draft/t_AR, v = T_verify/t_AR, eta = tau/(c+v); bound: "
          "m(emory) or c(ompute), for AR, draft, verify")


def print_projection(x: dict[str, Any], label: str = "projection") -> None:
    print(f"{label} at b=1, B={x['block']}: tau/(c+v) x step rate = {x['tau']:.2f}/"
          f"({x['c']:.3f}+{x['v']:.3f}) x {x['step_rate']:.1f}/s = {x['tok_s']:.0f} tok/s")
    if x["published_tok_s"]:
        print(f"published {x['published_tok_s']:g} tok/s: predicted / published = "
              f"{x['ratio_to_published']:.2f}")


def print_measured(m: MeasuredRun, rows: list[Comparison]) -> None:
    bw = f", copy bandwidth {m.copy_bandwidth_gbs:g} GB/s" if m.copy_bandwidth_gbs else ""
    print(f"\nmeasured on {m.device}" + (f", sglang {m.sglang}" if m.sglang else "") + bw
          + f"; context {m.context:g} = prompt {m.prompt_tokens} + decode {m.decode_tokens} / 2")
    hdr = (f"{'mode':<8}{'b':>4}{'B':>4}{'accept':>8}{'steps':>7}{'measured ms':>13}"
           f"{'predicted ms':>14}{'error':>9}  flag")
    print(hdr)
    print("-" * len(hdr))
    for c in rows:
        p = c.point
        print(f"{p.mode:<8}{p.concurrency:>4}{p.block:>4}{_f(p.accept_len, '.2f', 8)}"
              f"{p.steps:>7}{p.step_ms:>13.3f}{c.predicted_ms:>14.3f}{c.error:>+9.1%}"
              + ("  OFF" if c.flagged else ""))
    near = sum(not c.flagged for c in rows)
    print(f"{near} of {len(rows)} points within {FLAG_ABOVE:.0%} of the prediction "
          "(error = (predicted - measured) / measured; OFF: outside)")


def print_calibrated(cal: Calibration, rows: list[dict[str, Any]]) -> None:
    print(f"\ncalibrated on concurrency {','.join(map(str, cal.fit_on))}: decode reaches "
          f"{cal.efficiency:.1%} of the bandwidth, {cal.pass_overhead_ms:.3f} ms per pass; a "
          f"DFlash step adds {cal.spec_fixed_ms:.3f} ms + {cal.spec_per_row_ms:.3f} ms per row")
    hdr = f"{'mode':<8}{'b':>4}{'B':>4}{'measured ms':>13}{'calibrated ms':>15}{'error':>9}  flag"
    print(hdr)
    print("-" * len(hdr))
    for r in rows:
        print(f"{r['mode']:<8}{r['concurrency']:>4}{r['block']:>4}{r['measured_ms']:>13.3f}"
              f"{r['predicted_ms']:>15.3f}{r['error']:>+9.1%}  "
              + ("fit" if r["fitted"] else "check") + (" OFF" if r["flagged"] else ""))
    checks = [r for r in rows if not r["fitted"]]
    near = sum(not r["flagged"] for r in rows)
    print(f"{near} of {len(rows)} points within {FLAG_ABOVE:.0%}"
          + (f"; of the {len(checks)} not fitted, {sum(not r['flagged'] for r in checks)}"
             if checks else "; every point was fitted (no check)"))
