"""Grammar overhead per decode and per speculative verify step (CPU µs), for one model's tokenizer.

    turnspec bench mask [--model DIR] --block-size 16 --json out.json

Measured on the workload's held-out tool calls and spoken replies (tools of all 8 domains):
  compile      cold compile per tool set and mode (fresh compiler), and a cache hit
  token        per-token fill_mask + accept along real call / text token streams
  verify block B positions: fill_block_masks over the next B-1 reference tokens (all accepted,
               and with a refused draft mid-block), vs the plain per-position loop it replaces
  apply        apply_bitmask on [B, V] fp32 logits (CPU; and CUDA with/without the H2D copy)
  batch        a whole step at once (benchmarks/mask_batch.py): b tool-call rows, the engine's
               way against a row at a time; b free-text rows and b free-text verify blocks under
               tool_choice auto, all-allowed rows skipped (the engine) against applied
Prints a table and writes JSON with the device, date and command.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from collections.abc import Callable
from datetime import date

import torch

from turnspec.benchmarks.mask_batch import bench_batch, bench_text, bench_text_blocks, us_stats
from turnspec.benchmarks.tool_calls import reference_output, select_turns
from turnspec.tools_grammar.compiler import GrammarCompiler
from turnspec.tools_grammar.formats import get_format
from turnspec.tools_grammar.grammar import ToolGrammarMatcher, apply_bitmask
from turnspec.tools_grammar.schema import ToolChoice, parse_tools
from turnspec.workloads import scenarios_for


def bench_compile(compiler: GrammarCompiler, fmt, domain_tools: list[list]) -> dict:
    out = {}
    for mode in ("auto", "required", "function"):
        cold, hit = [], []
        for tools in domain_tools:
            compiler.clear_cache()
            choice = ToolChoice("function", tools[0].name) if mode == "function" else ToolChoice(mode)
            t0 = time.perf_counter_ns()
            compiler.compile(tools, choice, fmt)
            cold.append(time.perf_counter_ns() - t0)
            for _ in range(20):
                t1 = time.perf_counter_ns()
                compiler.compile(tools, choice, fmt)
                hit.append(time.perf_counter_ns() - t1)
        out[mode] = {"cold_ms": {k: v / 1000 if k != "n" else v for k, v in us_stats(cold).items()}, "cached_us": us_stats(hit)}
    return out


def bench_tokens(matchers: list[tuple[ToolGrammarMatcher, list[int]]]) -> dict:
    fill, accept = [], []
    for matcher, tokens in matchers:
        bitmask = matcher.new_bitmask(1)
        for token in tokens:
            t0 = time.perf_counter_ns()
            matcher.fill_mask(bitmask, 0)
            t1 = time.perf_counter_ns()
            ok = matcher.accept(token)
            t2 = time.perf_counter_ns()
            assert ok, "reference token refused by the grammar"
            fill.append(t1 - t0)
            accept.append(t2 - t1)
        matcher.rollback(len(tokens))
    total = [a + b for a, b in zip(fill, accept, strict=True)]
    return {"fill_us": us_stats(fill), "accept_us": us_stats(accept), "fill_plus_accept_us": us_stats(total)}


def _loop_block(matcher: ToolGrammarMatcher, drafts: list[int], bitmask: torch.Tensor) -> None:
    """The straightforward verify-block masking: fill, accept, ..., then roll back."""
    accepted = 0
    for k, token in enumerate(drafts):
        matcher.fill_mask(bitmask, k)
        if not matcher.accept(token):
            break
        accepted += 1
    else:
        matcher.fill_mask(bitmask, len(drafts))
    matcher.rollback(accepted)


def bench_blocks(matchers: list[tuple[ToolGrammarMatcher, list[int]]], block: int, refuse_id: int) -> dict:
    results: dict[str, list[int]] = {"all_accepted": [], "refused_mid_block": [], "python_loop": []}
    for matcher, stream in matchers:
        tokens = stream[:-1]  # without the stop token, so every block is mid-output
        bitmask = matcher.new_bitmask(block)
        for start in range(0, max(1, len(tokens) - block + 1), 2):
            drafts = tokens[start:start + block - 1]
            if len(drafts) < block - 1:
                break
            bad = list(drafts)
            bad[len(bad) // 2] = refuse_id
            for name, fn, args in (("all_accepted", matcher.fill_block_masks, (drafts, bitmask)),
                                   ("refused_mid_block", matcher.fill_block_masks, (bad, bitmask)),
                                   ("python_loop", _loop_block, (matcher, drafts, bitmask))):
                t0 = time.perf_counter_ns()
                fn(*args)
                results[name].append(time.perf_counter_ns() - t0)
            matcher.accept_tokens(tokens[start:start + 2])
        matcher.reset()
    out = {name: us_stats(samples) for name, samples in results.items() if samples}
    out["per_position_us"] = out["all_accepted"]["mean"] / block
    return out


def bench_apply(vocab: int, block: int, device: str) -> dict:
    logits = torch.randn(block, vocab, device=device)
    bitmask = torch.randint(-(2**31), 2**31 - 1, (block, (vocab + 31) // 32), dtype=torch.int32)
    on_device = bitmask.to(device)
    sync: Callable[[], None] = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    out = {}
    for name, mask in (("with_copy", bitmask), ("mask_resident", on_device)):
        samples = []
        for i in range(220):
            sync()
            t0 = time.perf_counter_ns()
            apply_bitmask(logits, mask)
            sync()
            if i >= 20:  # warm-up (first CUDA/Triton launch compiles)
                samples.append(time.perf_counter_ns() - t0)
        out[name] = us_stats(samples)
    return out


def measure(model_dir: str, block: int, n_calls: int, threads: int | None) -> dict:
    from transformers import AutoConfig, AutoTokenizer

    if threads:
        torch.set_num_threads(threads)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    vocab = int(AutoConfig.from_pretrained(model_dir).vocab_size)
    stops = [tokenizer.eos_token_id]
    fmt = get_format("hermes")
    t0 = time.perf_counter()
    compiler = GrammarCompiler(tokenizer, vocab, stops)
    tokenizer_info_ms = (time.perf_counter() - t0) * 1000
    domain_tools = {s.domain.name: parse_tools(s.domain.all_tools) for s in scenarios_for("all")}

    encode = lambda text: tokenizer(text, add_special_tokens=False)["input_ids"]  # noqa: E731
    call_streams, text_streams = [], []
    for turn in select_turns(n_calls, split="heldout", kind="tool_call"):
        m = compiler.matcher(parse_tools(turn.tools), ToolChoice("required"), fmt)
        call_streams.append((m, encode(reference_output(turn, fmt)) + stops))
    for turn in select_turns(max(8, n_calls // 2), split="heldout", kind="text"):
        m = compiler.matcher(parse_tools(turn.tools), ToolChoice("auto"), fmt)
        text_streams.append((m, encode(reference_output(turn, fmt)) + stops))
    t0 = time.perf_counter_ns()
    for _ in range(100):
        compiler.matcher(domain_tools["restaurant"], ToolChoice("auto"), fmt)
    matcher_us = (time.perf_counter_ns() - t0) / 100 / 1000

    bench_tokens(call_streams[:2])  # warm-up
    # tool_choice auto matchers a few tokens into a call (fresh ones: the benches below reset
    # theirs); required/named calls add the budget steer's closing path to every fill
    mid_call = []
    for turn in select_turns(16, split="heldout", kind="tool_call"):
        m = compiler.matcher(parse_tools(turn.tools), ToolChoice("auto"), fmt)
        m.accept_tokens(encode(reference_output(turn, fmt))[:6])
        mid_call.append(m)
    # The refused draft is a token the grammar never allows mid-call (a special token).
    refuse_id = tokenizer.convert_tokens_to_ids("<|im_start|>") if "<|im_start|>" in tokenizer.get_vocab() else 0
    return {
        "device": {"cpu": platform.processor() or platform.machine(), "threads": torch.get_num_threads(),
                   "cuda": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None},
        "date": date.today().isoformat(), "command": " ".join(["turnspec", *sys.argv[1:]]),
        "model_dir": model_dir, "vocab_size": vocab, "block_size": block, "format": fmt.name,
        "tokenizer_info_ms": tokenizer_info_ms, "matcher_create_us": matcher_us,
        "compile": bench_compile(compiler, fmt, list(domain_tools.values())),
        "token_call": bench_tokens(call_streams), "token_text_auto": bench_tokens(text_streams),
        "verify_block_call": bench_blocks(call_streams, block, refuse_id),
        "verify_block_text_auto": bench_blocks(text_streams, block, refuse_id),
        "apply_cpu": bench_apply(vocab, block, "cpu"),
        "apply_cuda": bench_apply(vocab, block, "cuda") if torch.cuda.is_available() else None,
        "batch_cpu": bench_batch(mid_call, vocab, "cpu"),
        "batch_cuda": bench_batch(mid_call, vocab, "cuda") if torch.cuda.is_available() else None,
        "text_cpu": bench_text([m for m, _ in text_streams], vocab, "cpu"),
        "text_cuda": bench_text([m for m, _ in text_streams], vocab, "cuda") if torch.cuda.is_available() else None,
        "text_blocks_cpu": bench_text_blocks(text_streams, vocab, block, "cpu"),
        "text_blocks_cuda": (bench_text_blocks(text_streams, vocab, block, "cuda")
                             if torch.cuda.is_available() else None),
    }


def table(r: dict) -> str:
    b = r["block_size"]
    rows = [("tokenizer info (once per model)", f"{r['tokenizer_info_ms']:.1f} ms"),
            ("matcher per request (cached grammar)", f"{r['matcher_create_us']:.1f} µs")]
    for mode, c in r["compile"].items():
        rows.append((f"compile {mode}: cold p50 / max", f"{c['cold_ms']['p50']:.1f} / {c['cold_ms']['p99']:.1f} ms"))
        rows.append((f"compile {mode}: cached", f"{c['cached_us']['p50']:.1f} µs"))
    for key, label in (("token_call", "tool call"), ("token_text_auto", "text, auto mode")):
        t = r[key]
        rows.append((f"per token, {label}: fill+accept mean / p99",
                     f"{t['fill_plus_accept_us']['mean']:.1f} / {t['fill_plus_accept_us']['p99']:.1f} µs"))
    for key, label in (("verify_block_call", "tool call"), ("verify_block_text_auto", "text, auto")):
        v = r[key]
        rows.append((f"verify block B={b}, {label}", f"{v['all_accepted']['mean']:.1f} µs ({v['per_position_us']:.2f} µs/pos)"))
        if "refused_mid_block" in v:
            rows.append(("  refused draft mid-block / python loop", f"{v['refused_mid_block']['mean']:.1f} / {v['python_loop']['mean']:.1f} µs"))
    for key in ("apply_cpu", "apply_cuda"):
        if r[key]:
            a = r[key]
            rows.append((f"apply_bitmask [{b}, V] {key[6:]}: +copy / resident", f"{a['with_copy']['p50']:.1f} / {a['mask_resident']['p50']:.1f} µs"))
    for key in ("batch_cpu", "batch_cuda"):
        for b, x in (r[key] or {}).items():
            rows.append((f"mask a step of {b} call rows {key[6:]}: batched / per row",
                         f"{x['batched']['p50']:.0f} / {x['per_row']['p50']:.0f} µs"))
    for key, what in (("text", "text rows"), ("text_blocks", f"text blocks of B={r['block_size']}")):
        for dev in ("cpu", "cuda"):
            for n, x in (r.get(f"{key}_{dev}") or {}).items():
                rows.append((f"mask a step of {n} {what} {dev}: skipped / applied",
                             f"{x['skipped']['p50']:.0f} / {x['applied']['p50']:.0f} µs"))
    width = max(len(k) for k, _ in rows)
    head = f"grammar mask cost, {r['model_dir']} (V={r['vocab_size']}), {r['device']['cpu']} x{r['device']['threads']}, {r['date']}"
    return "\n".join([head, *(f"  {k:<{width}}  {v:>22}" for k, v in rows)])


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("mask", help="grammar mask cost per token and per verify block")
    p.add_argument("--model", default=None,
                   help="HF model folder for the tokenizer (default: SmolLM2, prepared once)")
    p.add_argument("--model-dir", dest="model", help=argparse.SUPPRESS)  # the old spelling
    p.add_argument("--block-size", type=int, default=16, help="verify block size B (default 16)")
    p.add_argument("--calls", type=int, default=40, help="held-out tool calls to walk (default 40)")
    p.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    p.add_argument("--json", default=None, help="write the results here")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from turnspec.engine.local.args import resolve_model_dir

    if args.block_size < 2:
        raise ValueError(f"--block-size {args.block_size}: expected >= 2 (anchor + at least one "
                         "draft)")
    result = measure(resolve_model_dir(args.model), args.block_size, args.calls, args.threads)
    print(table(result))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(result, out, indent=1)
    return 0
