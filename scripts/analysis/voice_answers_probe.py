"""What running servers answer on the hand-written voice turns, by kind, side by side.

usage: python scripts/analysis/voice_answers_probe.py --server NAME=URL [--server NAME=URL ...]
           [--turns 80] [--concurrency 8] [--max-tokens 96] [--json OUT]

Each assistant turn of speculator/eval/voice.jsonl (a spread of --turns of them) is sent with
the messages before it and the call's tools, tool_choice "auto", temperature 0, through the
OpenAI SDK to every server in turn. An answer is counted as a tool call when the server returns
`tool_calls`; otherwise its text is sorted by tau_by_answer_kind.answer_kind (an invented
`<tool_response>`, talk about calling, or speech). For the same turns, the table also shows the
tool calls the hand-written conversation makes at that point. Where a server has turnspec's
/metrics, the difference over the run gives its speculative acceptance as served: tokens each
verify step committed (turnspec_spec_accepted_length), and the output tokens.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import urllib.request
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path

from openai import OpenAI
from prometheus_client.parser import text_string_to_metric_families

from turnspec.speculator.eval_set import SOURCES
from turnspec.workloads import load_jsonl, turns_for_prompting

_spec = importlib.util.spec_from_file_location(
    "tau_by_answer_kind", Path(__file__).with_name("tau_by_answer_kind.py"))
kinds = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(kinds)

KINDS = ("tool call", "invents a tool result", "talks about calling", "spoken")


def voice_turns(path: Path, n: int) -> list[dict]:
    """A spread of n assistant turns: {"id", "messages" (before the turn), "tools", "written"}."""
    turns = [{"id": f"{t.conversation_id}#{t.turn}", "messages": t.messages, "tools": t.tools,
              "written": "tool call" if t.expected.get("tool_calls") else "spoken"}
             for t in turns_for_prompting(load_jsonl(path)) if t.expected is not None]
    if n <= 0 or n > len(turns):
        raise SystemExit(f"--turns {n}: expected 1..{len(turns)} (the voice set has {len(turns)} assistant turns)")
    step = len(turns) / n
    return [turns[int(k * step)] for k in range(n)]


def answer(client: OpenAI, model: str, turn: dict, max_tokens: int) -> dict:
    r = client.chat.completions.create(model=model, messages=turn["messages"], tools=turn["tools"],
                                       tool_choice="auto", temperature=0, max_tokens=max_tokens)
    msg = r.choices[0].message
    if msg.tool_calls:
        calls = [f"{c.function.name}({c.function.arguments})" for c in msg.tool_calls]
        return {"id": turn["id"], "kind": "tool call", "text": (msg.content or "") + " ".join(calls)}
    text = msg.content or ""
    return {"id": turn["id"], "kind": kinds.answer_kind(text), "text": text}


# sample name -> what it counts, summed over labels (engine/server metrics, server/metrics.py)
SERVED = {"turnspec_spec_accepted_length_sum": "accepted", "turnspec_spec_accepted_length_count":
          "verify_steps", "turnspec_completion_tokens_total": "output_tokens"}


def served(url: str) -> dict[str, float] | None:
    """The server's SERVED counters now, from /metrics beside its /v1; None without them."""
    try:
        with urllib.request.urlopen(url.removesuffix("/").removesuffix("/v1") + "/metrics", timeout=10) as r:
            text = r.read().decode()
    except OSError:
        return None
    out = dict.fromkeys(SERVED.values(), 0.0)
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name in SERVED:
                out[SERVED[sample.name]] += sample.value
    return out


def parse_server(spec: str) -> tuple[str, str]:
    name, sep, url = spec.partition("=")
    if not sep or not name or not url.startswith("http"):
        raise SystemExit(f"--server {spec!r}: expected NAME=URL, e.g. head=http://127.0.0.1:8000/v1")
    return name, url


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--server", action="append", required=True, type=parse_server)
    ap.add_argument("--voice", type=Path, default=SOURCES["independent-voice"])
    ap.add_argument("--turns", type=int, default=80)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--max-tokens", type=int, default=96)
    ap.add_argument("--json", type=Path, default=None, help="write counts and answers here")
    args = ap.parse_args()
    turns = voice_turns(args.voice, args.turns)
    results: dict[str, list[dict]] = {}
    spec: dict[str, dict | None] = {}
    for name, url in args.server:
        client = OpenAI(base_url=url, api_key="unused", max_retries=0, timeout=600)
        model = client.models.list().data[0].id
        before = served(url)
        with ThreadPoolExecutor(args.concurrency) as pool:
            ask = partial(answer, client, model, max_tokens=args.max_tokens)
            results[name] = list(pool.map(ask, turns))
        after = served(url)
        spec[name] = None if before is None or after is None else {
            k: after[k] - before[k] for k in after}
        if spec[name] is not None and spec[name]["verify_steps"]:
            spec[name]["per_step"] = spec[name]["accepted"] / spec[name]["verify_steps"]
    written = Counter(t["written"] for t in turns)
    counts = {name: Counter(r["kind"] for r in rows) for name, rows in results.items()}
    names = list(results)
    print(f"{len(turns)} voice turns; answers by kind (share)")
    print(f"{'kind':24s}" + "".join(f"{n:>14s}" for n in names) + f"{'as written':>14s}")
    for kind in KINDS:
        cells = [counts[n][kind] for n in names] + [written[kind]]
        print(f"{kind:24s}" + "".join(f"{c:6d} ({c / len(turns):4.0%})" for c in cells))
    first = results[names[0]]
    print(f"{'same answer as ' + names[0]:24s}" + "".join(
        f"{sum(a['text'] == b['text'] for a, b in zip(first, results[n], strict=True)):14d}" for n in names))
    for key, label in (("per_step", "accepted per verify step"), ("output_tokens", "output tokens")):
        cells = ["-" if m is None or key not in m else f"{m[key]:.2f}" if key == "per_step"
                 else f"{m[key]:.0f}" for m in (spec[n] for n in names)]
        print(f"{label:24s}" + "".join(f"{c:>14s}" for c in cells))
    for name in names:
        for r in results[name][:3]:
            print(f"  {name} e.g. {r['kind']}: {r['text'][:120]!r}")
    if args.json:
        args.json.write_text(json.dumps({
            "turns": len(turns), "max_tokens": args.max_tokens, "written": dict(written),
            "counts": {n: dict(c) for n, c in counts.items()}, "served": spec, "answers": results},
            indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
