"""`turnspec bench voice-defaults`: how each candidate default behaves on voice turns.

Every sampling setting (temperature, top_p) runs the voice turns (benchmarks/voice_turns.py:
held-out workload turns + the dental turn) once per seed, tools given and no tool_choice (what
pipecat sends), no loop guard, up to --max-tokens. Since the guard and a budget only cut an
output short, one long run per turn answers every (guard, budget) question offline: the guard
is replayed over the tokens (engine/loop_guard.first_loop, only where the grammar could end),
a budget B cuts whatever runs past B.

Per setting it reports: turns that ended on their own (the model's stop token), runaways (still
going at --max-tokens), what the guard catches of the runaways and how early, where it fires
on turns that ended on their own (the false-positive check), tokens per turn with the guard on,
and the share of turns each candidate budget would cut. A second table sweeps the guard's
thresholds over all runs. Prints tables, writes JSON.

    turnspec bench voice-defaults --n 30 --kv-memory-gb 4 --json docs/cpu-runs/voice-defaults.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from turnspec.engine.local.args import add_engine_args, engine_config_from_args
from turnspec.engine.loop_guard import LoopGuard, first_loop
from turnspec.loadtest.stats import percentile

if TYPE_CHECKING:
    from turnspec.engine.chat import ChatTemplate
    from turnspec.engine.local.core import EngineCore
    from turnspec.workloads import PromptTurn

SETTINGS = "0:1,0.3:0.9,0.5:0.9,0.7:0.9,1:1"  # temperature:top_p
BUDGETS = (96, 128, 192, 256, 384)
GUARD_SWEEP = ((8, 2), (8, 3), (12, 2), (12, 3), (16, 3), (24, 2))  # (ngram, repeats)


@dataclass(slots=True, frozen=True)
class Run:
    """One turn's output under one setting and seed."""

    turn_id: str
    temperature: float
    top_p: float
    seed: int
    tokens: tuple[int, ...]
    completed: tuple[bool, ...]  # per token: the grammar could end right after it
    ended: bool  # the model's own stop token (else it ran to max_tokens)
    text: str


def guard_cut(run: Run, guard: LoopGuard) -> int | None:
    """Tokens the engine would emit before `guard` stops this run (None: never), replaying
    the engine's rule: the detector fires and the grammar may end there."""
    body = len(run.tokens) - 1 if run.ended else len(run.tokens)  # the stop token ends first
    return first_loop(run.tokens[:body], guard, run.completed[:body])


def summarize(runs: list[Run], guard: LoopGuard, budgets: tuple[int, ...]) -> dict:
    """The numbers of one setting (pure: runs in, dict out)."""
    cuts = [guard_cut(r, guard) for r in runs]
    runaway = [r for r in runs if not r.ended]
    caught = [c for r, c in zip(runs, cuts, strict=True) if not r.ended and c is not None]
    false_fire = [r.turn_id for r, c in zip(runs, cuts, strict=True) if r.ended and c is not None]
    lengths = [float(c if c is not None else len(r.tokens)) for r, c in zip(runs, cuts, strict=True)]
    stopped_clean = [r.ended or c is not None for r, c in zip(runs, cuts, strict=True)]
    dental = [i for i, r in enumerate(runs) if r.turn_id.startswith("dental")]
    return {
        "runs": len(runs), "ended_on_own": len(runs) - len(runaway), "runaway": len(runaway),
        "guard_caught": len(caught), "guard_tokens_to_catch_mean":
            statistics.fmean(caught) if caught else None,
        "guard_fired_on_ended": false_fire,
        "tokens_guard_on": {"mean": statistics.fmean(lengths) if lengths else 0.0,
                            "p50": percentile(lengths, 50) if lengths else 0.0,
                            "p90": percentile(lengths, 90) if lengths else 0.0,
                            "max": max(lengths, default=0.0)},
        "budget_cut_share": {str(b): sum(n > b for n in lengths) / len(lengths) if lengths else 0.0
                             for b in budgets},
        "dental": {"runs": len(dental),
                   "completed_guard_on": {str(b): sum(stopped_clean[i] and lengths[i] <= b
                                                      for i in dental) for b in budgets}},
    }


def sweep(runs: list[Run], grid: tuple[tuple[int, int], ...]) -> list[dict]:
    """Guard thresholds over all runs: runaways caught (and how early) vs fires on turns that
    ended on their own."""
    out = []
    for n, k in grid:
        g = LoopGuard(ngram=n, repeats=k)
        cuts = [guard_cut(r, g) for r in runs]
        caught = [c for r, c in zip(runs, cuts, strict=True) if not r.ended and c is not None]
        out.append({"ngram": n, "repeats": k, "runaways": sum(not r.ended for r in runs),
                    "caught": len(caught),
                    "tokens_to_catch_mean": statistics.fmean(caught) if caught else None,
                    "fired_on_ended": sum(r.ended and c is not None
                                          for r, c in zip(runs, cuts, strict=True))})
    return out


def collect(core: EngineCore, chat: ChatTemplate, turns: list[PromptTurn], temperature: float,
            top_p: float, seed: int, max_tokens: int) -> list[Run]:
    """Run every turn once (a batch, no speculation: the output distribution is the same)."""
    from turnspec.benchmarks.tool_turns import run_turns
    from turnspec.engine.protocol import SamplingParams
    from turnspec.tools_grammar.schema import parse_tool_choice, parse_tools

    params = [SamplingParams(temperature=temperature, top_p=top_p, max_tokens=max_tokens,
                             seed=seed * 100_003 + i) for i in range(len(turns))]
    results = run_turns(core, chat, turns, None, spec_block_size=0, sampling=params)
    runs = []
    for turn, res in zip(turns, results, strict=True):
        tools = parse_tools(turn.tools)
        matcher = chat.grammar_compiler.matcher(tools, parse_tool_choice(None, tools),
                                                chat.tool_format)
        completed = []
        for t in res.token_ids:  # replay: where could the output have ended?
            matcher.accept(t)
            completed.append(matcher.is_completed())
        ended = res.final.finish_reason == "stop"
        runs.append(Run(f"{turn.conversation_id}#{turn.turn}", temperature, top_p, seed,
                        tuple(res.token_ids), tuple(completed), ended, res.text))
    return runs


def table(rows: list[tuple[str, dict]], budgets: tuple[int, ...]) -> str:
    head = (f"{'setting':<14}{'runs':>5}{'ended':>6}{'runaway':>8}{'caught':>7}{'@tok':>6}"
            f"{'false':>6}{'tok p50':>8}{'p90':>6}{'max':>6}"
            + "".join(f"{'>' + str(b):>7}" for b in budgets) + f"{'dental ok@' + str(budgets[-1]):>14}")
    lines = [head]
    for name, s in rows:
        t = s["tokens_guard_on"]
        catch = s["guard_tokens_to_catch_mean"]
        lines.append(
            f"{name:<14}{s['runs']:>5}{s['ended_on_own']:>6}{s['runaway']:>8}"
            f"{s['guard_caught']:>7}{(f'{catch:.0f}' if catch else '-'):>6}"
            f"{len(s['guard_fired_on_ended']):>6}{t['p50']:>8.0f}{t['p90']:>6.0f}{t['max']:>6.0f}"
            + "".join(f"{s['budget_cut_share'][str(b)]:>7.1%}" for b in budgets)
            + f"{s['dental']['completed_guard_on'][str(budgets[-1])]:>9}/{s['dental']['runs']}")
    return "\n".join(lines)


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("voice-defaults", help="loops, budget cuts and tokens per turn of "
                              "candidate sampling defaults on voice turns (the server's defaults)")
    p.add_argument("--n", type=int, default=36, help="held-out workload turns (plus the dental turns)")
    p.add_argument("--settings", default=SETTINGS, help="temperature:top_p pairs, comma-separated")
    p.add_argument("--seeds", type=int, default=1, help="runs per sampled setting (greedy: one)")
    p.add_argument("--max-tokens", type=int, default=384,
                   help="where a turn counts as a runaway (the old default budget was 512)")
    p.add_argument("--json", default="bench-voice-defaults.json")
    add_engine_args(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from turnspec.benchmarks.tool_turns import load_core
    from turnspec.benchmarks.voice_turns import voice_turns

    cfg = engine_config_from_args(args)
    core, chat = load_core(cfg)
    turns = voice_turns(args.n)
    guard = LoopGuard()
    budgets = tuple(b for b in BUDGETS if b < args.max_tokens) + (args.max_tokens,)
    rows, all_runs, record = [], [], {"bench": "voice-defaults", "turns": len(turns),
                                      "max_tokens": args.max_tokens, "guard": vars_of(guard),
                                      "settings": []}
    def write() -> None:  # after every setting: a long sweep keeps what it has measured
        record["guard_sweep"] = sweep(all_runs, GUARD_SWEEP)
        record["runs"] = [{"turn": r.turn_id, "temperature": r.temperature, "top_p": r.top_p,
                           "seed": r.seed, "tokens": len(r.tokens), "ended": r.ended,
                           "guard_cut": guard_cut(r, guard), "text": r.text} for r in all_runs]
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(record, f, indent=1, ensure_ascii=False)

    for pair in args.settings.split(","):
        temperature, top_p = (float(x) for x in pair.split(":"))
        runs: list[Run] = []
        t0 = time.perf_counter()
        for seed in range(1 if temperature == 0 else args.seeds):
            runs += collect(core, chat, turns, temperature, top_p, seed, args.max_tokens)
        s = summarize(runs, guard, budgets)
        s.update(temperature=temperature, top_p=top_p, seconds=time.perf_counter() - t0)
        rows.append((f"T={temperature:g} p={top_p:g}", s))
        record["settings"].append(s)
        all_runs += runs
        print(table(rows[-1:], budgets).splitlines()[-1], f"({s['seconds']:.0f}s)", flush=True)
        write()
    print(table(rows, budgets))
    print("\nguard thresholds over all runs (ngram x repeats):")
    for g in record["guard_sweep"]:
        catch = g["tokens_to_catch_mean"]
        print(f"  {g['ngram']:>3} x {g['repeats']}: caught {g['caught']}/{g['runaways']} runaways"
              f" (at {catch:.0f} tokens on average)" if catch else
              f"  {g['ngram']:>3} x {g['repeats']}: caught 0/{g['runaways']} runaways",
              f"; fired on {g['fired_on_ended']} turns that ended on their own")
    print(f"wrote {args.json}")
    return 0


def vars_of(guard: LoopGuard) -> dict:
    return {"ngram": guard.ngram, "repeats": guard.repeats, "window": guard.window}
