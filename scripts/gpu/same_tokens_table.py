"""The same-tokens decomposition (issue 58), from the load-test JSONs scripts/gpu/same_tokens.sh
writes: per mode (none: no tools; prompt: tools in the prompt, no grammar; grammar: tools and
the grammar) and concurrency, turnspec over SGLang against SGLang's own server on the same
prompt ids, with the issue's bars: output tok/s >= 0.97x, TTFT p50 within +1 ms, p90 within
+2 ms (checked in modes none and grammar).

    python scripts/gpu/same_tokens_table.py RUN_DIR [--json OUT.json]

RUN_DIR holds ts-MODE.json (turnspec) and sg-MODE.json (SGLang) per mode; a missing pair is
skipped.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

MODES = ("none", "prompt", "grammar")
GATED = ("none", "grammar")
TOK_S_RATIO, TTFT_P50_MS, TTFT_P90_MS = 0.97, 1.0, 2.0


def levels(result: dict[str, Any]) -> dict[int, dict[str, Any]]:
    """Concurrency -> that level's result (a sweep's `runs`, or the single run)."""
    return {r["load"]["concurrency"]: r for r in result.get("runs") or [result]}


def _p(run: dict[str, Any], metric: str, q: str) -> float | None:
    return (run["metrics"].get(metric) or {}).get(q)


def compare(ts: dict[str, Any], sg: dict[str, Any], mode: str) -> list[dict[str, Any]]:
    rows = []
    a, b = levels(ts), levels(sg)
    for c in sorted(set(a) & set(b)):
        t, s = a[c], b[c]
        row = {"mode": mode, "concurrency": c,
               "tok_s": [t["throughput"]["output_tokens_per_s"],
                         s["throughput"]["output_tokens_per_s"]],
               "ttft_p50": [_p(t, "ttft_ms", "p50"), _p(s, "ttft_ms", "p50")],
               "ttft_p90": [_p(t, "ttft_ms", "p90"), _p(s, "ttft_ms", "p90")],
               "tpot_p50": [_p(t, "tpot_ms", "p50"), _p(s, "tpot_ms", "p50")],
               "prompt_tokens": [_mean_tokens(t, "prompt"), _mean_tokens(s, "prompt")],
               "errors": [t["requests"]["errors"], s["requests"]["errors"]]}
        row["tok_s_ratio"] = row["tok_s"][0] / row["tok_s"][1] if row["tok_s"][1] else None
        row["ttft_p50_delta"] = _delta(row["ttft_p50"])
        row["ttft_p90_delta"] = _delta(row["ttft_p90"])
        row["meets"] = (None if mode not in GATED else bool(
            row["tok_s_ratio"] is not None and row["tok_s_ratio"] >= TOK_S_RATIO
            and row["ttft_p50_delta"] is not None and row["ttft_p50_delta"] <= TTFT_P50_MS
            and row["ttft_p90_delta"] is not None and row["ttft_p90_delta"] <= TTFT_P90_MS))
        rows.append(row)
    return rows


def _delta(pair: list[float | None]) -> float | None:
    return None if None in pair else pair[0] - pair[1]


def _mean_tokens(run: dict[str, Any], kind: str) -> float | None:
    """Mean prompt tokens a turn, where the run's summary has them."""
    m = run["metrics"].get(f"{kind}_tokens") or {}
    return m.get("mean")


def table(rows: list[dict[str, Any]]) -> str:
    head = (f"{'mode':<8}{'conc':>5}{'tok/s ts':>10}{'tok/s sg':>10}{'ratio':>7}"
            f"{'TTFT50 ts':>11}{'sg':>8}{'d':>7}{'TTFT90 ts':>11}{'sg':>8}{'d':>7}"
            f"{'TPOT50 ts/sg':>14}{'bars':>6}")
    lines = [head, "-" * len(head)]

    def f(x: float | None, spec: str) -> str:
        return "-" if x is None else format(x, spec)

    for r in rows:
        bars = {None: "", True: "ok", False: "MISS"}[r["meets"]]
        lines.append(
            f"{r['mode']:<8}{r['concurrency']:>5}{f(r['tok_s'][0], '.0f'):>10}"
            f"{f(r['tok_s'][1], '.0f'):>10}{f(r['tok_s_ratio'], '.3f'):>7}"
            f"{f(r['ttft_p50'][0], '.1f'):>11}{f(r['ttft_p50'][1], '.1f'):>8}"
            f"{f(r['ttft_p50_delta'], '+.1f'):>7}{f(r['ttft_p90'][0], '.1f'):>11}"
            f"{f(r['ttft_p90'][1], '.1f'):>8}{f(r['ttft_p90_delta'], '+.1f'):>7}"
            f"{f(r['tpot_p50'][0], '.2f') + '/' + f(r['tpot_p50'][1], '.2f'):>14}{bars:>6}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("run_dir", type=Path)
    p.add_argument("--json", type=Path, default=None)
    args = p.parse_args(argv)
    rows = []
    for mode in MODES:
        ts, sg = args.run_dir / f"ts-{mode}.json", args.run_dir / f"sg-{mode}.json"
        if ts.is_file() and sg.is_file():
            rows += compare(json.loads(ts.read_text()), json.loads(sg.read_text()), mode)
    if not rows:
        print(f"{args.run_dir}: no ts-MODE.json / sg-MODE.json pair")
        return 1
    print(table(rows))
    if args.json is not None:
        args.json.write_text(json.dumps({"bars": {"tok_s_ratio": TOK_S_RATIO,
                                                  "ttft_p50_ms": TTFT_P50_MS,
                                                  "ttft_p90_ms": TTFT_P90_MS},
                                         "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
