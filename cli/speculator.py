"""`turnspec speculator {datagen,train,eval,export}`: build the DFlash drafter end to end.

datagen renders workload + generic prompts with the target's chat template and answers them
greedily with the target itself, on the local engine or SGLang's (`--engine sglang`); train/eval
read the target through transformers (speculator/target.py); export writes the z-lab / SGLang
layout.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from turnspec.cli.speculator_datagen import add_datagen
from turnspec.engine.spec.swaps import BRANCH_PLANS

_DTYPES = ("bfloat16", "float16", "float32")  # speculator.train_config.EXPORT_DTYPES (no torch import here)


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("speculator", help="DFlash drafter: datagen, train, eval, export")
    sub = p.add_subparsers(dest="speculator_command", required=True)

    add_datagen(sub)

    from turnspec.cli.speculator_magpie import add_magpie

    add_magpie(sub)
    _add_train(sub)
    _add_eval(sub)
    _add_export(sub)
    _add_packs(sub)


def _add_train(sub: argparse._SubParsersAction) -> None:
    t = sub.add_parser("train", help="train a drafter on datagen output")
    t.add_argument("--train-sources", default=None,
                   help="train only on these sources, comma-separated (tools, generic); "
                        "held-out tau is still reported for every split")
    t.add_argument("--data", required=True, type=Path)
    t.add_argument("--out", required=True, type=Path,
                   help="run folder: checkpoint.pt, drafter/, metrics.json, train.log")
    _add_model(t)
    t.add_argument("--layers", type=int, default=3)
    t.add_argument("--block-size", type=int, default=16)
    t.add_argument("--taps", type=int, default=5, help="target layers tapped (K)")
    t.add_argument("--mask-token-id", type=int, default=None)
    t.add_argument("--batch-size", type=int, default=32, help="sequences per step")
    t.add_argument("--anchors", type=int, default=64, help="blocks per sequence per step")
    t.add_argument("--epochs", type=float, default=6.0)
    t.add_argument("--max-steps", type=int, default=None)
    t.add_argument("--time-budget", type=float, default=None,
                   help="seconds for the training loop; the cosine schedule is fitted to it")
    t.add_argument("--lr", type=float, default=6e-4)
    t.add_argument("--warmup", type=float, default=0.04)
    t.add_argument("--weight-decay", type=float, default=0.01)
    t.add_argument("--gamma", type=float, default=None, help="loss decay (default: paper's)")
    t.add_argument("--max-len", type=int, default=2048,
                   help="tokens per sequence (tool prompts run ~850-1700 tokens)")
    t.add_argument("--log-every", type=int, default=50)
    t.add_argument("--eval-every", type=int, default=0, help="steps between tau evals (0: end)")
    t.add_argument("--eval-samples", type=int, default=64)
    t.add_argument("--final-eval-samples", type=int, default=512)
    t.add_argument("--ckpt-every", type=int, default=1000)
    t.add_argument("--export-dtype", choices=_DTYPES, default="bfloat16")
    t.add_argument("--device", default="auto", help="auto | cpu | cuda[:N]")
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--no-resume", action="store_true", help="ignore out/checkpoint.pt")
    t.add_argument("--init-from", default=None, metavar="DRAFTER",
                   help="start from an exported drafter's weights (a folder, or 'default'); "
                        "its config must match --layers/--block-size/--taps/--mask-token-id")
    t.add_argument("--intermediate-size", type=int, default=None,
                   help="the drafter's MLP width (default: the target's)")
    t.add_argument("--grow", "--grow-layers", dest="grow_layers", action="store_true",
                   help="--init-from may have fewer layers than --layers or a narrower MLP than "
                        "--intermediate-size: added layers and MLP units start silent (zero "
                        "output projections), so training starts from the source's function")
    t.add_argument("--soft-weight", type=float, default=0.0,
                   help="weight w of the soft-label loss: (1-w) CE on the target's token + w CE "
                        "on the target's top-k distribution at that position (distillation; "
                        "runs the target to its LM head; default: %(default)s)")
    t.add_argument("--soft-topk", type=int, default=8,
                   help="tokens kept of the target's distribution (default: %(default)s)")
    t.add_argument("--load-workers", type=int, default=None,
                   help="processes parsing the data (default: 1 below 64 MB, else one per "
                        "core up to 12)")
    t.add_argument("--width-multiple", type=int, default=32,
                   help="round each batch's width up to a multiple of this (default 32: few "
                        "shapes for CUDA's per-shape attention plans; 1: the longest row)")
    t.add_argument("--no-progress", action="store_true")
    t.set_defaults(func=run_train)


def _add_eval(sub: argparse._SubParsersAction) -> None:
    e = sub.add_parser("eval", help="offline greedy tau per held-out split")
    e.add_argument("--data", required=True, type=Path, action="append",
                   help="samples file or folder; repeat it to score several sets with one load "
                        "of the target and drafter (~18 s a process on the H200)")
    _add_model(e)
    e.add_argument("--drafter", default="default", help="drafter folder or 'default'")
    e.add_argument("--block-size", type=_block_sizes, default=None, metavar="B[,B...]",
                   help="serve block(s), each <= trained, e.g. 8,16: one target pass per batch "
                        "scores them all (default: the drafter's trained block)")
    e.add_argument("--samples", type=int, default=512, help="per split")
    e.add_argument("--lookup", action="store_true",
                   help="also score each split with prompt lookup, as the local engine takes it "
                        "(split NAME+lookup; full blocks, as on CUDA)")
    e.add_argument("--branches", type=int, default=1,
                   help="with --lookup: verify this many blocks a step and keep the one accepted "
                        "furthest, as `serve --spec-branches N` does (split NAME+lookup+Nbr; "
                        "the CUDA default is 16; default: %(default)s)")
    e.add_argument("--branch-plan", choices=BRANCH_PLANS, default="planned",
                   help="with --branches: which drafts the drafter's extra blocks swap, as "
                        "`serve --spec-branch-plan` (split NAME+lookup+Nbr+planned for planned; "
                        "default: %(default)s)")
    e.add_argument("--datastore", type=Path, default=None, metavar="PATH",
                   help="with --branches: the last branch drafts from the target's earlier answers "
                        "in PATH, as `serve --spec-datastore PATH` (split NAME+lookup+Nbr+ds)")
    e.add_argument("--max-len", type=int, default=2048)
    e.add_argument("--device", default="auto")
    e.add_argument("--with-train", action="store_true", help="also a sample of the train split")
    e.add_argument("--json", type=Path, action="append", default=None,
                   help="write the results here too (one per --data, in the same order)")
    e.set_defaults(func=run_eval)


def _add_export(sub: argparse._SubParsersAction) -> None:
    x = sub.add_parser("export", help="write a drafter in the z-lab / SGLang layout")
    x.add_argument("--out", required=True, type=Path)
    x.add_argument("--checkpoint", default=None,
                   help="train checkpoint.pt, a train --out folder, or a drafter folder "
                        "(default: the committed default drafter)")
    x.add_argument("--dtype", choices=_DTYPES, default="bfloat16")
    x.add_argument("--reproduce", action="append", default=[],
                   help="a command line for the card's Reproduce section (repeatable)")
    x.set_defaults(func=run_export)


def _add_packs(sub: argparse._SubParsersAction) -> None:
    k = sub.add_parser("pack-responses", help="datagen folder -> its completions only (.xz or "
                       ".gz by the name of --out), to carry across GPU sessions")
    k.add_argument("--data", required=True, type=Path)
    k.add_argument("--out", required=True, type=Path,
                   help="e.g. responses-seed7.jsonl.xz (as committed under models/data/)")
    k.set_defaults(func=run_pack)

    u = sub.add_parser("unpack-responses", help="packed completions -> a datagen folder, prompts "
                       "rebuilt from the workload (no target run)")
    u.add_argument("--responses", required=True, type=Path)
    u.add_argument("--out", required=True, type=Path)
    u.add_argument("--train-fraction", type=float, default=1.0,
                   help="keep this stable share of the train samples (held-out: all), 0 < f <= 1")
    u.add_argument("--subset-seed", type=int, default=0,
                   help="which share --train-fraction keeps (e.g. the session's datagen seed)")
    u.add_argument("--conversations", type=Path, default=None,
                   help="for a pack answered from conversations (datagen --from-conversations): "
                   "the folder or .jsonl(.xz) file they came from")
    _add_model(u)
    u.set_defaults(func=run_unpack)


def _add_model(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default=None,
                   help="target HF folder (default: SmolLM2-135M-Instruct, prepared on first use)")


def _block_sizes(text: str) -> tuple[int, ...]:
    """'8,16' -> (8, 16)."""
    try:
        sizes = tuple(int(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--block-size {text!r}: expected integers separated "
                                         "by commas, e.g. 8,16") from None
    if any(b < 2 for b in sizes):
        raise argparse.ArgumentTypeError(f"--block-size {text!r}: expected block sizes >= 2")
    return sizes


def run_train(args: argparse.Namespace) -> int:
    from turnspec.engine.local.args import resolve_model_dir
    from turnspec.speculator.train import TrainConfig, train

    cfg = TrainConfig(
        data=args.data, model_dir=Path(resolve_model_dir(args.model)), out=args.out,
        num_layers=args.layers, intermediate_size=args.intermediate_size,
        block_size=args.block_size, num_taps=args.taps,
        mask_token_id=args.mask_token_id, batch_size=args.batch_size, anchors=args.anchors,
        epochs=args.epochs, max_steps=args.max_steps, time_budget_s=args.time_budget,
        lr=args.lr, warmup=args.warmup, weight_decay=args.weight_decay, gamma=args.gamma,
        max_len=args.max_len, log_every=args.log_every, eval_every=args.eval_every,
        eval_samples=args.eval_samples, final_eval_samples=args.final_eval_samples,
        ckpt_every=args.ckpt_every, export_dtype=args.export_dtype, device=args.device,
        seed=args.seed, resume=not args.no_resume, progress=not args.no_progress,
        train_sources=tuple(args.train_sources.split(",")) if args.train_sources else None,
        init_from=args.init_from, grow_layers=args.grow_layers,
        soft_weight=args.soft_weight, soft_topk=args.soft_topk,
        load_workers=args.load_workers, width_multiple=args.width_multiple)
    m = train(cfg)
    print(json.dumps({"tau": m["tau"], "steps": m["steps"], "train_seconds": m["train_seconds"],
                      "tokens_per_s": m["tokens_per_s"], "export": m["export"]}))
    return 0


def run_eval(args: argparse.Namespace) -> int:
    from turnspec.engine.local.args import resolve_model_dir
    from turnspec.speculator.evaluate import evaluate_sets, tau_table

    if args.json is not None and len(args.json) != len(args.data):
        raise SystemExit(f"speculator eval: {len(args.json)} --json for {len(args.data)} --data; "
                         "expected one per --data, in the same order")
    for path, outs in zip(args.data, evaluate_sets(
            args.data, drafter=args.drafter, model_dir=resolve_model_dir(args.model),
            block_sizes=args.block_size, samples=args.samples, max_len=args.max_len,
            device=args.device, with_train=args.with_train, json_out=args.json,
            lookup=args.lookup, branches=args.branches, plan=args.branch_plan,
            datastore=args.datastore), strict=False):
        print(f"{path}: tau per split, 90% interval over turns\n{tau_table(outs)}",
              file=sys.stderr)
        for out in outs:
            print(json.dumps(out["tau"]))
    return 0


def run_export(args: argparse.Namespace) -> int:
    from turnspec.speculator.export import export_drafter

    out = export_drafter(args.checkpoint, args.out, args.dtype, args.reproduce or None)
    print(f"wrote {out} ({args.dtype})", file=sys.stderr)
    return 0


def run_pack(args: argparse.Namespace) -> int:
    from turnspec.speculator.responses import pack_responses

    print(json.dumps(pack_responses(args.data, args.out)))
    return 0


def run_unpack(args: argparse.Namespace) -> int:
    from turnspec.engine.chat import ChatTemplate
    from turnspec.engine.local.args import resolve_model_dir
    from turnspec.speculator.responses import unpack_responses

    chat = ChatTemplate.from_model_dir(resolve_model_dir(args.model))
    print(json.dumps(unpack_responses(args.responses, chat.render_many, args.out,
                                      args.train_fraction, args.subset_seed,
                                      args.conversations)))
    return 0
