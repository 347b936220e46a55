"""`turnspec speculator datagen`'s arguments: answer workload and generic prompts with the target
itself (speculator/datagen_run.py), on the local engine or SGLang's."""

from __future__ import annotations

import argparse
from pathlib import Path

from turnspec.speculator.datagen_run import run_datagen
from turnspec.speculator.datagen_target import ENGINES
from turnspec.workloads.catalog import LATEST_WORKLOAD, WORKLOADS


def add_datagen(sub: argparse._SubParsersAction) -> None:
    d = sub.add_parser("datagen", help="answer workload + generic prompts with the target")
    d.add_argument("--out", required=True, type=Path, help="data folder (samples.jsonl; resumable)")
    d.add_argument("--tool-conversations", type=int, default=2000,
                   help="workload conversations from train scenarios, ~4.4 prompts each "
                        "(default: %(default)s)")
    d.add_argument("--heldout-conversations", type=int, default=200,
                   help="workload conversations from held-out scenarios (default: %(default)s)")
    d.add_argument("--generic", type=int, default=None,
                   help="generic chat prompts (default: all of them, ~390)")
    d.add_argument("--generic-heldout-frac", type=float, default=0.2)
    d.add_argument("--readback-frac", type=float, default=0.0,
                   help="share of conversations that also give a readback prompt (the caller asks "
                        "to hear the last reply again: in-context copying; source 'readback')")
    d.add_argument("--dictation-frac", type=float, default=0.0,
                   help="share of conversations that also give a dictation prompt (the caller "
                        "reads out random details and asks for them back: copies that cannot be "
                        "memorised; source 'dictation')")
    d.add_argument("--synthetic-conversations", type=int, default=0,
                   help="calls to made-up businesses with random tools and results (source "
                        "'synthetic': copies of what cannot be memorised; default: %(default)s)")
    d.add_argument("--synthetic-heldout", type=int, default=0,
                   help="such calls from a separate random stream, held out "
                        "(split synthetic-heldout; default: %(default)s)")
    d.add_argument("--workload", type=int, choices=WORKLOADS, default=LATEST_WORKLOAD,
                   help="workload version: which train goals the tool conversations draw from "
                        "(2 adds 40; the held-out goals are the same in each; default: %(default)s)")
    f = d.add_argument_group("prompts from files instead of the workload generator (the "
                             "workload flags above are then unused)")
    f.add_argument("--eval-set", action="store_true",
                   help="answer the independent evaluation set (speculator/eval/, hand-written, "
                        "never trained on): every sample held out, sources independent-voice "
                        "and independent-generic, for `speculator eval`")
    f.add_argument("--from-conversations", type=Path, default=None, metavar="DIR",
                   help="answer the conversations `turnspec serve --record-conversations DIR` "
                        "recorded (source 'recorded'), e.g. to fine-tune with `speculator train "
                        "--init-from default`; or one such .jsonl(.xz) file (the Magpie "
                        "conversations kept under models/data/)")
    f.add_argument("--conversations-heldout-frac", type=float, default=0.1,
                   help="share of recorded calls held out, by call (default: %(default)s)")
    _add_answering(d)
    from turnspec.engine.local.args import add_engine_args
    from turnspec.engine.sglang_args import add_sglang_args

    add_engine_args(d)
    add_sglang_args(d)
    d.set_defaults(func=run_datagen)


def _add_answering(d: argparse.ArgumentParser) -> None:
    """How the prompts are answered: lengths, engine, batches, feed, budget, shards."""
    d.add_argument("--max-new-tokens", type=int, default=192)
    d.add_argument("--max-prompt-tokens", type=int, default=1800,
                   help="skip prompts longer than this (default: %(default)s)")
    d.add_argument("--engine", choices=ENGINES, default="local",
                   help="what answers: local, the embedded engine (its flags under 'engine'); "
                        "sglang, SGLang's in-process batch engine on a GPU machine (its flags "
                        "under '--engine sglang'), the same prompts and output format, bf16 "
                        "(default: %(default)s)")
    d.add_argument("--batch-size", type=int, default=None,
                   help="prompts per planned batch: whole conversations in waves of turns (and, "
                        "with --feed batches or --engine sglang, per engine call; with stream, "
                        "per file write; default: 256 local, 1024 sglang)")
    d.add_argument("--feed", choices=("stream", "batches"), default=None,
                   help="local engine: stream (default), one continuous prompt stream, a new "
                        "prompt as a slot frees up (no tail at the end of each batch); batches: "
                        "one engine call per planned batch (the pre-run-12 path, kept for A/B runs)")
    d.add_argument("--admit-min-free", type=int, default=None,
                   help="local engine, stream: prefill waits until this many batch slots are "
                        "free (default: max_batch/8; 1 admits each prompt as soon as a row finishes)")
    d.add_argument("--tool-grammar", action="store_const", const="auto", default=None,
                   help="local engine: answer each prompt that has tools under the tool grammar "
                        "the server applies with tool_choice auto (tools_grammar/README.md), so the "
                        "data holds what the server writes (default: no grammar)")
    d.add_argument("--time-budget", type=float, default=None,
                   help="seconds; no prompt is handed to the engine after it, those it holds "
                        "finish (rerun to resume)")
    d.add_argument("--seed", type=int, default=0)
    d.add_argument("--shard", type=_shard, default=(0, 1), metavar="I/N",
                   help="answer only every N-th conversation from the I-th (0-based; a call's turns "
                        "stay in one shard and share their prefill), so N processes can share "
                        "one GPU; concatenate their samples.jsonl (default: 0/1)")
    d.add_argument("--prompt-parts", type=int, default=4,
                   help="render the shard's prompts in this many parts (every N-th conversation) "
                        "in a child process, answering part 0 while the rest render "
                        "(default: %(default)s)")
    d.add_argument("--no-progress", action="store_true")


def _shard(text: str) -> tuple[int, int]:
    """'I/N' -> (I, N) with 0 <= I < N."""
    try:
        i, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--shard {text!r}: expected I/N, e.g. 0/3") from None
    if n < 1 or not 0 <= i < n:
        raise argparse.ArgumentTypeError(f"--shard {text!r}: expected 0 <= I < N")
    return i, n
