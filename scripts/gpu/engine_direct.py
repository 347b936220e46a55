"""Issue 53: SGLang's Engine in this process, as `turnspec serve --engine sglang` builds it, fed a
rendered workload's prompt ids one turn after another, with no turnspec server in the way.

At one voice stream SGLang's own server with the plugin's trees ran each verify step ~2 ms
faster than `turnspec serve --engine sglang` with the same plugin, the same SGLang arguments and
the same prompt ids (SGLang's own clocks, docs/benchmarks.md). This run splits
that: the same Engine turnspec builds (`SGLangConfig.engine_kwargs`, the plugin armed the same
way), driven straight from a loop here. If its steps are as fast as SGLang's server, the time
goes in turnspec's process; if as slow as turnspec's, in SGLang's Engine mode. `--url` plays the
same turns through the same loop on SGLang's own server's `/generate`, the peer.

    python3 scripts/gpu/engine_direct.py IDS.jsonl --speculator D --spec trees \
        [--turns 150] [--max-tokens 96] [--sglang-arg KEY=VALUE ...] [--json OUT.json]
        [--profile-dir DIR [--profile-steps 16]]
    python3 scripts/gpu/engine_direct.py IDS.jsonl --url http://127.0.0.1:PORT [...]

IDS.jsonl: `turnspec workload render` output (independent_set.sh `render_ids`). Each turn is sent
as the load test sends it to SGLang's `/generate` (loadtest/generate_client.sampling_params, the
"auto" structural tag where the conversation has tools), in file order: a conversation's turns
in sequence, so the radix cache reuses each prefix as a served conversation does.
Printed: per turn p50 and mean of E2E, the gap between chunks, prefill and decode from
SGLang's own clocks (read as the load test reads them, loadtest/generate_client.sglang_block),
and decode per verify step, SGLang's way in and the first token's way back (engine_in_ms,
first_back_ms); gaps between content chunks, as the load test counts them.
`--profile-dir` also takes a torch profile of the scheduler's next steps (as profile_step.sh takes
SGLang's own server's), which inflates those turns: time a run without it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from pathlib import Path
from typing import Any

from turnspec.loadtest.aggregate import ENGINE_SPANS
from turnspec.loadtest.generate_client import GenerateClient, sampling_params, sglang_block
from turnspec.loadtest.record import verify_step_ms


def turns_of(path: Path, limit: int) -> list[tuple[list[int], str | None]]:
    """(prompt ids, structural tag or None) for the first `limit` turns, in file order."""
    out: list[tuple[list[int], str | None]] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        raw = json.loads(line)["turnspec_tokens"]
        tag = (raw.get("structural_tags") or {}).get("auto")
        out += [([int(t) for t in ids], tag) for ids in raw["turns"].values()]
        if len(out) >= limit:
            break
    if not out:
        raise SystemExit(f"{path}: no turns with token ids; write it with "
                         "`turnspec workload render`")
    return out[:limit]


def turn_row(e2e_ms: float, gaps_ms: list[float], tokens: int,
             block: dict[str, Any]) -> dict[str, Any]:
    """One turn's figures (ms) from its E2E, its content chunks' gaps and the completion block
    SGLang's last meta_info gives (loadtest's `sglang_block`: its clocks, its verify count)."""
    timing, spec = block.get("timing") or {}, block.get("spec") or {}
    row: dict[str, Any] = {"e2e_ms": e2e_ms, "gaps_ms": gaps_ms, "tokens": float(tokens)}
    if timing:
        row["prefill_ms"], row["decode_ms"] = timing["prefill_ms"], timing["decode_ms"]
        # SGLang's way in (its API receipt to the scheduler queue) and the first token's way
        # back (the prefill mark to its API process's first yield), where it stamped them
        row.update({k: timing[k] for k in ENGINE_SPANS if timing.get(k) is not None})
    if spec:  # SGLang counts the decode's verify steps (the prefill's token is apart)
        row["tau"] = spec["tau"]
    if (step := verify_step_ms(block)) is not None:
        row["step_ms"] = step
    return row


def summary(rows: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """p50 and mean of each figure over the turns (chunk gaps pooled)."""
    out = {}
    for key in ("e2e_ms", "prefill_ms", "decode_ms", "step_ms", "tau", "tokens", "gaps_ms",
                *ENGINE_SPANS):
        vals = [v for r in rows if key in r for v in (r[key] if key == "gaps_ms" else [r[key]])]
        if vals:
            out[key] = {"n": len(vals), "p50": statistics.median(vals),
                        "mean": statistics.fmean(vals)}
    return out


async def play_http(url: str, todo: list[tuple[list[int], str | None]], max_tokens: int
                    ) -> list[dict[str, Any]]:
    """The same turns on a server's `POST /generate` (SGLang's own, `--enable-metrics`), one
    after another, through the load test's client."""
    client = GenerateClient(url.rstrip("/") + "/generate")
    rows = []
    try:
        for ids, tag in todo:
            rec = await client.generate(ids, sampling_params(
                max_tokens=max_tokens, temperature=None, structural_tag=tag))
            if not rec.ok:
                raise SystemExit(f"{url}: {rec.error}")
            rows.append(turn_row(rec.e2e_ms, rec.itl_ms, rec.output_tokens or 0, rec.turnspec))
    finally:
        await client.close()
    return rows


async def play(engine: Any, todo: list[tuple[list[int], str | None]], max_tokens: int
               ) -> list[dict[str, Any]]:
    rows = []
    for ids, tag in todo:
        params = sampling_params(max_tokens=max_tokens, temperature=None, structural_tag=tag)
        t0, arrivals, meta = time.perf_counter(), [], {}
        gen = await engine.async_generate(input_ids=ids, sampling_params=params, stream=True)
        async for chunk in gen:
            if chunk.get("text"):  # a content chunk, as the load test's client counts them
                arrivals.append(time.perf_counter())
            meta = chunk.get("meta_info") or meta
        tokens = int(meta.get("completion_tokens") or 0)
        gaps = [(b - a) * 1e3 for a, b in zip(arrivals, arrivals[1:], strict=False)]
        end = arrivals[-1] if arrivals else time.perf_counter()
        rows.append(turn_row((end - t0) * 1e3, gaps, tokens, sglang_block(meta, tokens)))
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("ids", type=Path)
    p.add_argument("--speculator", default="none", help="a drafter folder, or none")
    p.add_argument("--spec", default="off", choices=("off", "lookup", "trees"))
    p.add_argument("--turns", type=int, default=150)
    p.add_argument("--warmup", type=int, default=4, help="turns played first, not counted")
    p.add_argument("--max-tokens", type=int, default=96)
    p.add_argument("--mem", type=float, default=0.3)
    p.add_argument("--sglang-arg", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--url", help="play the turns on this server's /generate instead (SGLang's "
                   "own, e.g. http://127.0.0.1:18034): the same loop, the same figures")
    p.add_argument("--profile-dir", type=Path, help="a torch profile of the scheduler's first "
                   "--profile-steps steps after the warm-up, here (scripts/gpu/trace_steps.py)")
    p.add_argument("--profile-steps", type=int, default=16)
    p.add_argument("--json", type=Path)
    args = p.parse_args()
    todo = turns_of(args.ids, args.turns + args.warmup)
    if args.url:
        if args.profile_dir:
            raise SystemExit("--profile-dir profiles the Engine here; for a server use "
                             "scripts/gpu/profile_step.sh")
        rows = asyncio.run(play_http(args.url, todo, args.max_tokens))[args.warmup:]
        report({"url": args.url, "turns": len(rows), "summary": summary(rows)}, args.json)
        return
    import sglang

    from turnspec.engine.local.args import resolve_model_dir
    from turnspec.engine.sglang import SGLangConfig
    from turnspec.engine.sglang_args import sglang_extra
    from turnspec.engine.sglang_plugin.arm import arm
    from turnspec.engine.sglang_plugin.config import PluginConfig

    cfg = SGLangConfig(model_dir=resolve_model_dir(None), speculator=args.speculator,
                       mem_fraction=args.mem, extra=sglang_extra(args.sglang_arg),
                       plugin=PluginConfig(mode=args.spec))
    arm(cfg.plugin)  # as SGLangEngine.start does
    engine = sglang.Engine(**cfg.engine_kwargs())
    # on the Engine's own loop, as its sync API runs (its tokenizer manager binds to it)
    engine.loop.run_until_complete(play(engine, todo[: args.warmup], args.max_tokens))
    if args.profile_dir:  # the next STEPS steps of the scheduler, as profile_step.sh takes them
        args.profile_dir.mkdir(parents=True, exist_ok=True)
        engine.start_profile(output_dir=str(args.profile_dir.resolve()),
                             num_steps=args.profile_steps, activities=["CPU", "GPU"])
    rows = engine.loop.run_until_complete(play(engine, todo[args.warmup:], args.max_tokens))
    report({"spec": args.spec, "speculator": args.speculator, "turns": len(rows),
            "engine_kwargs": {k: str(v) for k, v in cfg.engine_kwargs().items()},
            "summary": summary(rows)}, args.json)
    engine.shutdown()


def report(out: dict[str, Any], path: Path | None) -> None:
    for key, s in out["summary"].items():
        print(f"{key:12} n {s['n']:5}  p50 {s['p50']:9.2f}  mean {s['mean']:9.2f}")
    if path:
        path.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
