"""`turnspec bench engine`: turnspec vs transformers generate on this machine; table + JSON."""

from __future__ import annotations

import argparse
import json
import time
from datetime import date
from typing import Any

import torch

from turnspec.benchmarks.host import cpu_name
from turnspec.engine.local.args import add_engine_args, engine_config_from_args


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("engine", help="embedded engine vs transformers generate (greedy)")
    p.add_argument("--max-new-tokens", type=int, default=48)
    p.add_argument("--prompts", type=int, default=8, help="how many voice prompts (max 8)")
    p.add_argument("--turn2-trials", type=int, default=5)
    p.add_argument("--json", default="bench-engine.json", help="where to write the JSON record")
    add_engine_args(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from transformers import AutoModelForCausalLM

    from turnspec.benchmarks import runs as B
    from turnspec.engine.chat import ChatTemplate
    from turnspec.engine.local.core import EngineCore
    from turnspec.engine.model.cpu_linear import describe_gemm_plan

    cfg = engine_config_from_args(args)
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    core = EngineCore(cfg)
    chat = ChatTemplate.from_model_dir(cfg.model_dir, core.tokenizer)
    hf = AutoModelForCausalLM.from_pretrained(cfg.model_dir, dtype=cfg.torch_dtype).to(cfg.device).eval()
    eos = core.tokenizer.eos_token_id
    n = args.max_new_tokens
    prompts = [chat.render([{"role": "user", "content": u}]) for u in B.VOICE_PROMPTS[: args.prompts]]

    # warm-up both (first-call allocations, MKL packing, thread pools)
    B.run_core(core, prompts[:1], 4, concurrent=False)
    B.run_hf(hf, prompts[:1], 4, eos)
    same, concurrency1, batched = _throughput(core, hf, prompts, n, eos)
    record = {
        "bench": "engine", "date": date.today().isoformat(), "device": cfg.device,
        "cpu": cpu_name(), "threads": torch.get_num_threads(),
        "cpu_gemm_plan": describe_gemm_plan(core.model),
        "dtype": str(cfg.torch_dtype).removeprefix("torch."), "model": cfg.model_dir,
        "max_new_tokens": n, "prompts": len(prompts), "tokens_identical": same,
        "concurrency1": concurrency1, "batched": batched,
        "ttft": _turn2_ttft(core, hf, chat, n, args.turn2_trials),
    }
    print_table(record)
    with open(args.json, "w") as f:
        json.dump(record, f, indent=2)
    print(f"wrote {args.json}")
    return 0 if same else 1


def _throughput(core: Any, hf: Any, prompts: list[list[int]], n: int,
                eos: int) -> tuple[bool, dict[str, float], dict[str, float]]:
    """Greedy tokens identical to transformers', and both engines' tok/s one prompt after
    another and all at once."""
    from turnspec.benchmarks import runs as B

    ours = B.run_core(core, prompts, n, concurrent=False)
    peer = B.run_hf(hf, prompts, n, eos)
    same = all([a == b for a, b in zip(ours.tokens, peer.tokens, strict=True)])
    ours_tps = sum(len(t) for t in ours.tokens) / sum(ours.seconds)
    peer_tps = sum(len(t) for t in peer.tokens) / sum(peer.seconds)
    B.clear_prefix_cache(core)
    t0 = time.perf_counter()
    batched = B.run_core(core, prompts, n, concurrent=True)
    ours_batch_tps = sum(len(t) for t in batched.tokens) / (time.perf_counter() - t0)
    peer_batch_tps = sum(len(t) for t in peer.tokens) / B.run_hf_batched(hf, prompts, n, eos)
    return same, {
        "turnspec_tok_s": ours_tps, "transformers_tok_s": peer_tps, "ratio": ours_tps / peer_tps,
        "turnspec_ttft_ms_p50": B.p50(ours.ttft_ms)}, {
        "turnspec_tok_s": ours_batch_tps, "transformers_batched_tok_s": peer_batch_tps,
        "ratio_vs_transformers_sequential": ours_batch_tps / peer_tps,
        "ratio_vs_transformers_batched": ours_batch_tps / peer_batch_tps}


def _turn2_ttft(core: Any, hf: Any, chat: Any, n: int, trials: int) -> dict[str, float]:
    """TTFT of turn 1 cold against turn 2 with and without KV reuse, under a ~600-token
    system prompt with tools."""
    from turnspec.benchmarks import runs as B
    from turnspec.tools_grammar.schema import parse_tools

    tools = parse_tools(B.TOOLS)
    sys_msg = {"role": "system", "content": B.SYSTEM}
    t1_cold, t2_reuse, t2_fresh, hf_t2, prompt2_len = [], [], [], [], []
    cached, prefilled = [], []
    for i in range(trials):
        msgs = [sys_msg, {"role": "user", "content": B.VOICE_PROMPTS[i % len(B.VOICE_PROMPTS)]}]
        p1 = chat.render(msgs, tools)
        B.clear_prefix_cache(core)
        r1 = B.run_core(core, [p1], n, concurrent=False)
        t1_cold.append(r1.ttft_ms[0])
        reply = core.tokenizer.decode(r1.tokens[0], skip_special_tokens=True)
        msgs2 = msgs + [{"role": "assistant", "content": reply},
                        {"role": "user", "content": B.TURN2_PROMPTS[i % len(B.TURN2_PROMPTS)]}]
        p2 = chat.render_continuation(p1 + r1.tokens[0], msgs2, tools)
        prompt2_len.append(len(p2))
        r2 = B.run_core(core, [p2], 1, concurrent=False)
        t2_reuse.append(r2.ttft_ms[0])
        cached.append(r2.cached_tokens[0])
        prefilled.append(r2.prefill_tokens[0])
        B.clear_prefix_cache(core)
        t2_fresh.append(B.run_core(core, [p2], 1, concurrent=False).ttft_ms[0])
        hf_t2.append(B.hf_ttft_ms(hf, p2))
    system_tokens = len(chat.render([sys_msg, {"role": "user", "content": "hi"}], tools))
    return {"system_prompt_tokens": system_tokens, "turn2_prompt_tokens_p50": B.p50(prompt2_len),
            "turn1_cold_ms_p50": B.p50(t1_cold), "turn2_kv_reuse_ms_p50": B.p50(t2_reuse),
            "turn2_no_reuse_ms_p50": B.p50(t2_fresh), "turn2_transformers_ms_p50": B.p50(hf_t2),
            "turn2_cached_tokens_p50": B.p50(cached), "turn2_prefill_tokens_p50": B.p50(prefilled)}


def print_table(r: dict) -> None:
    c1, bt, tt = r["concurrency1"], r["batched"], r["ttft"]
    w = 62
    print("\n" + " turnspec bench engine ".center(w, "="))
    print(f"{'device / dtype / threads':<44}{r['device']} {r['dtype']} {r['threads']}")
    if r.get("cpu_gemm_plan"):
        print(f"{'cpu fp32 GEMM per row bucket':<44}{r['cpu_gemm_plan']}")
    print(f"{'greedy outputs token-identical':<44}{r['tokens_identical']}")
    print(" concurrency 1 ".center(w, "-"))
    print(f"{'turnspec tok/s':<44}{c1['turnspec_tok_s']:.2f}")
    print(f"{'transformers generate tok/s':<44}{c1['transformers_tok_s']:.2f}")
    print(f"{'ratio':<44}{c1['ratio']:.2f}x")
    print(f" all {r['prompts']} prompts in flight ".center(w, "-"))
    print(f"{'turnspec tok/s (continuous batching)':<44}{bt['turnspec_tok_s']:.2f}")
    print(f"{'transformers batched generate tok/s':<44}{bt['transformers_batched_tok_s']:.2f}")
    print(f"{'ratio vs transformers one-by-one':<44}{bt['ratio_vs_transformers_sequential']:.2f}x")
    print(f"{'ratio vs transformers batched':<44}{bt['ratio_vs_transformers_batched']:.2f}x")
    print(" TTFT p50 (ms) ".center(w, "-"))
    print(f"{'system prompt + tools (tokens)':<44}{tt['system_prompt_tokens']}")
    print(f"{'turn 1, cold cache':<44}{tt['turn1_cold_ms_p50']:.1f}")
    print(f"{'turn 2, KV reuse':<44}{tt['turn2_kv_reuse_ms_p50']:.1f}  "
          f"({tt['turn2_cached_tokens_p50']:.0f} cached, {tt['turn2_prefill_tokens_p50']:.0f} prefilled)")
    print(f"{'turn 2, no reuse':<44}{tt['turn2_no_reuse_ms_p50']:.1f}")
    print(f"{'turn 2, transformers (full prefill)':<44}{tt['turn2_transformers_ms_p50']:.1f}")
    print("=" * w)
