"""`turnspec speculator datagen`: the workload's prompts answered greedily by the target itself.

The prompts are built while the engine loads: on the H200 host each of run 17's six shards
spent ~28 s loading its engine (weights, KV cache, Triton warm-up) and then 50-59 s building
its prompts, with the GPU idle for both (run 18, overlapped: 71-78 s in all, the build slowed by
a host 95-98% busy with six shards and seven rebuilds). The prompts are rendered with the model
folder's own chat template (the tokenizer the engine loads too); once the engine is up, a
workload turn with tools is rendered through both, and any difference stops the run.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor


def run_datagen(args: argparse.Namespace) -> int:
    import torch

    from turnspec.engine.chat import ChatTemplate
    from turnspec.engine.local import LocalEngine
    from turnspec.engine.protocol import SamplingParams
    from turnspec.server.cli.common import engine_config_from_args
    from turnspec.server.cli.thread_cpu import other_threads_cpu, thread_cpu_seconds
    from turnspec.speculator.datagen import generate_dataset
    from turnspec.speculator.prompts import build_prompt_items

    cfg = engine_config_from_args(args)
    if args.feed == "stream":
        default = max(1, cfg.max_batch // 8)  # an explicit 0 reaches the config's check
        cfg = dataclasses.replace(cfg, admit_min_free=default if args.admit_min_free is None
                                  else args.admit_min_free)
    elif args.admit_min_free is not None:
        raise SystemExit("--admit-min-free applies to --feed stream only")

    def build() -> tuple[list, int, tuple[float, float], ChatTemplate]:
        t, cpu = time.perf_counter(), time.thread_time()
        chat = ChatTemplate.from_model_dir(cfg.model_dir)
        items, skipped = build_prompt_items(
            chat.render_many, tool_conversations=args.tool_conversations,
            heldout_conversations=args.heldout_conversations, generic=args.generic,
            generic_heldout_frac=args.generic_heldout_frac,
            max_prompt_tokens=args.max_prompt_tokens, seed=args.seed, shard=args.shard[0],
            num_shards=args.shard[1], readback_frac=args.readback_frac,
            dictation_frac=args.dictation_frac, synthetic_conversations=args.synthetic_conversations,
            synthetic_heldout=args.synthetic_heldout, workload=args.workload)
        return items, skipped, (time.perf_counter() - t, time.thread_time() - cpu), chat

    t0 = time.perf_counter()
    with ThreadPoolExecutor(1, thread_name_prefix="prompts") as pool:
        building = pool.submit(build)
        engine = LocalEngine(cfg)
        engine.load()
        t1 = time.perf_counter()
        items, skipped, (build_s, build_cpu_s), chat = building.result()
    _check_same_render(chat, engine.chat, args.workload)
    # the seconds before the first prompt reaches the engine, and what went into them
    setup = {"engine_load_s": round(t1 - t0, 1), "prompts_build_s": round(build_s, 1),
             "prompts_build_cpu_s": round(build_cpu_s, 1),
             "setup_s": round(time.perf_counter() - t0, 1)}
    sampling = SamplingParams(temperature=0.0, max_tokens=args.max_new_tokens)
    meta = {"model": cfg.model_dir, "sampling": "greedy", "max_new_tokens": args.max_new_tokens,
            "tool_conversations": args.tool_conversations,
            "heldout_conversations": args.heldout_conversations, "generic": args.generic,
            "readback_frac": args.readback_frac, "dictation_frac": args.dictation_frac,
            "synthetic_conversations": args.synthetic_conversations,
            "synthetic_heldout": args.synthetic_heldout, "workload": args.workload,
            "generic_heldout_frac": args.generic_heldout_frac,
            "max_prompt_tokens": args.max_prompt_tokens,
            "skipped_long_prompts": skipped, "seed": args.seed,
            "max_batch": cfg.max_batch, "max_prefill_tokens": cfg.max_prefill_tokens,
            "speculator": args.speculator, "feed": args.feed,
            "admit_min_free": cfg.admit_min_free, "threads": torch.get_num_threads(),
            "shard": f"{args.shard[0]}/{args.shard[1]}"}
    counts: dict[str, int] = {"prompt_tokens": 0, "cached_prompt_tokens": 0}
    # CPU of the answering part: the main thread steps the engine; the others are native threads
    threads0, main0, proc0 = thread_cpu_seconds(), time.thread_time(), time.process_time()
    common = dict(batch_size=args.batch_size, progress=not args.no_progress, meta=meta,
                  time_budget_s=args.time_budget, seed=args.seed)
    if args.feed == "stream":
        stats = generate_dataset(items, None, args.out, **common,
                                 stream=lambda ps: engine.generate_stream(ps, sampling, counts=counts))
    else:
        stats = generate_dataset(items, lambda ps: engine.generate_batch(ps, sampling, counts=counts),
                                 args.out, **common)
    cpu = {"process_cpu_s": round(time.process_time() - proc0, 2),
           "main_thread_cpu_s": round(time.thread_time() - main0, 2),
           **other_threads_cpu(threads0, thread_cpu_seconds(), {threading.get_native_id()})}
    print(json.dumps({**stats, **counts, **setup, **cpu, "skipped_long_prompts": skipped,
                      "out": str(args.out)}))
    return 0


def _check_same_render(ours, engines, workload: int) -> None:
    """The prompts were rendered with the model folder's template; the engine's must agree (one
    workload turn with tools, rendered by both)."""
    from turnspec.tools_grammar.schema import parse_tools
    from turnspec.tools_grammar.workloads import generate_conversations, turns_for_prompting

    turn = next(turns_for_prompting(generate_conversations(1, seed=0, split="train",
                                                           workload=workload)))
    probe = [(turn.messages, parse_tools(turn.tools))]
    if ours.render_many(probe) != engines.render_many(probe):
        raise SystemExit("datagen: a prompt renders differently through the engine's chat "
                         "template than through the model folder's; expected the same tokenizer "
                         "in both")
