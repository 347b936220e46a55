"""Issue 53's load table, from the load-test JSONs scripts/gpu/plugin_load.sh writes: per workload
and concurrency, output tok/s, TTFT p50 and τ (tokens per verify step, pooled over the turns) of no
speculation, stock DFLASH
and DFLASH with turnspec's plugin through `turnspec serve --engine sglang`, and the plugin in
SGLang's own server, with the issue's bars:

    c=1: plugin >= 1.5x stock (voice), >= 1.2x (generic); c=8: >= 1.2x; c=32: >= 0.97x the
    better of stock and none; TTFT p50 within +1 ms of stock; SGLang's own server with the
    plugin within 5% of turnspec's tok/s.

    python scripts/gpu/plugin_load_table.py RUN_DIR [RUN_DIR ...] [--json OUT.json]

RUN_DIR holds NAME-WORKLOAD.json (one round) or NAME-WORKLOAD-rK.json (`ROUNDS=N plugin_load.sh`:
each cell is then the median over the rounds, its tok/s range shown as ±half of it in percent of
the median, and each bar is also judged paired: the median over the rounds of that round's own
ratio, plugin over the bar's floor and SGLang's own server over its peer, so a round, or a whole
session, on a slower host moves both sides of a ratio alike) for NAME in ts-none, ts-stock,
ts-lookup (the plugin planning on the host: --sglang-spec-plan-at verify), ts-device (planning on
the GPU, the default: the plugin the bars judge where it ran; ts-lookup is then judged by the
same tok/s bar as `verify`), ts-trees (verify trees, --sglang-spec trees), ts-served (trees or
plain decode step by step, --sglang-spec-width served: judged first where it ran, then ts-trees),
ts-trees32 (trees of 32 nodes: shown, not judged), ts-early (ts-trees with an early first token:
shown, not judged), sg-lookup and WORKLOAD in voice, generic; a
missing file leaves its cells empty. Several RUN_DIRs (sessions, hosts) pool their rounds: each
folder's round K pairs only with the same folder's round K (files as `tar xzf` of each session's
plugin-load.tgz leaves them, no renaming).
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from same_tokens_table import levels

NAMES = ("ts-none", "ts-stock", "ts-lookup", "ts-device", "ts-trees", "ts-trees32", "ts-served",
         "ts-early", "sg-lookup")
WORKLOADS = ("voice", "generic")
C1_BAR = {"voice": 1.5, "generic": 1.2}
C8_BAR, C32_FLOOR, TTFT_MS, OWN_SERVER = 1.2, 0.97, 1.0, 0.05
ROUND_STRIDE = 1000  # round numbers a folder may use before the next folder's begin


def pooled_tau(run: dict[str, Any]) -> float | None:
    """Tokens per verify step over all turns: the load test's own (`throughput.tau`), or for a
    result written before it had one, from each turn's τ and tokens ((E2E - TTFT) / TPOT + 1)."""
    if "tau" in run["throughput"]:
        return run["throughput"]["tau"]
    s = run.get("samples") or {}
    turns = list(zip(s.get("e2e_ms") or [], s.get("ttft_ms") or [], s.get("tpot_ms") or [],
                     s.get("tau") or [], strict=False))
    tokens = [((e - t) / p + 1 if p else 1.0, tau) for e, t, p, tau in turns if tau]
    steps = sum(k / tau for k, tau in tokens)
    return sum(k for k, _ in tokens) / steps if steps else None


def one(run: dict[str, Any]) -> dict[str, Any]:
    m = run["metrics"]
    return {"tok_s": run["throughput"]["output_tokens_per_s"],
            "ttft_p50": (m.get("ttft_ms") or {}).get("p50"),
            "tau": pooled_tau(run), "errors": run["requests"]["errors"]}


def cell(per: list[dict[str, Any]]) -> dict[str, Any] | None:
    """A server's figures at one level (`per`: each round's `one`): the median of each over its
    rounds (None: no round)."""
    if not per:
        return None

    def med(key: str) -> float | None:
        vals = [p[key] for p in per if p[key] is not None]
        return statistics.median(vals) if vals else None

    toks = [p["tok_s"] for p in per]
    return {"tok_s": med("tok_s"), "ttft_p50": med("ttft_p50"), "tau": med("tau"),
            "errors": sum(p["errors"] for p in per), "rounds": len(per),
            "tok_s_range": [min(toks), max(toks)]}


def by_round(folders: Sequence[Path], name: str, workload: str
             ) -> dict[int, dict[int, dict[str, Any]]]:
    """Round -> its levels over `folders`: folder i's round K as i * ROUND_STRIDE + K, so that a
    round pairs only with the same sweep's rounds of the other servers (rounds_in)."""
    out = {}
    for i, folder in enumerate(folders):
        for k, lv in rounds_in(folder, name, workload).items():
            if k >= ROUND_STRIDE:
                raise ValueError(f"{folder}: round {k} of {name}-{workload}; expected rounds "
                                 f"below {ROUND_STRIDE} a folder")
            out[i * ROUND_STRIDE + k] = lv
    return out


def rounds_in(folder: Path, name: str, workload: str) -> dict[int, dict[int, dict[str, Any]]]:
    """Round K -> its levels: NAME-WORKLOAD-rK.json where the sweep ran in rounds, else the one
    NAME-WORKLOAD.json as round 0 ({} for neither)."""
    prefix = f"{name}-{workload}-r"
    paths = {int(p.stem[len(prefix):]): p for p in folder.glob(f"{prefix}[0-9]*.json")
             if p.stem[len(prefix):].isdigit()}
    if not paths and (single := folder / f"{name}-{workload}.json").exists():
        paths = {0: single}
    return {k: levels(json.loads(paths[k].read_text())) for k in sorted(paths)}


def floor(workload: str, c: int, stock: float | None, none: float | None) -> float | None:
    """The tok/s a plugin server must reach at concurrency `c` (None: no bar at `c`, or a peer
    missing): 1.5x / 1.2x stock at 1, 1.2x at 8, 0.97x the better of stock and none at 32."""
    if stock is None or c not in (1, 8, 32) or (c == 32 and none is None):
        return None
    if c == 32:
        return C32_FLOOR * max(stock, none)
    return (C1_BAR[workload] if c == 1 else C8_BAR) * stock


def within_own(own: float, peer: float) -> bool:
    """SGLang's own server's tok/s within OWN_SERVER of its turnspec peer's."""
    return abs(own - peer) <= OWN_SERVER * peer


def judged_name(got: dict[str, Any]) -> str:
    """The plugin server the tok/s bars judge: the served width where it ran, else the trees,
    else the device plan, else the host plan."""
    return next((n for n in ("ts-served", "ts-trees", "ts-device") if got.get(n)), "ts-lookup")


def paired(workload: str, c: int, at: dict[str, dict[int, float]],
           own_peer: str) -> dict[str, Any] | None:
    """The bars as medians of per-round ratios (`at`: name -> round -> tok/s at level c): the
    judged plugin's tok/s over the floor its round's stock and none set (>= 1 meets it), and
    SGLang's own server over `own_peer` in the same round (within 1 ± OWN_SERVER meets it).
    None with fewer than two rounds that have both sides."""
    judged = judged_name(at)
    need = {k: floor(workload, c, v, at.get("ts-none", {}).get(k))
            for k, v in at.get("ts-stock", {}).items()}
    bar = [at[judged][k] / f for k, f in need.items() if f and k in at.get(judged, {})]
    peer, own = at.get(own_peer, {}), at.get("sg-lookup", {})
    ratio = [own[k] / peer[k] for k in own if peer.get(k)]
    if len(bar) < 2 and len(ratio) < 2:
        return None
    out: dict[str, Any] = {"rounds": max(len(bar), len(ratio))}
    if len(bar) >= 2:
        out[f"c{c}_of_floor"] = statistics.median(bar)
        out[f"c{c}"] = out[f"c{c}_of_floor"] >= 1.0
    if len(ratio) >= 2:
        out["own_server_ratio"] = statistics.median(ratio)
        out["own_server"] = within_own(out["own_server_ratio"], 1.0)
    return out


def bars(workload: str, c: int, got: dict[str, dict | None],
         own_peer: str = "ts-device") -> dict[str, bool | None]:
    """Each bar this row is judged by: True / False, None where a side is missing. SGLang's own
    server is held to `own_peer`, turnspec's server planning where it plans."""
    def tok(name: str) -> float | None:
        return got[name]["tok_s"] if got.get(name) else None

    judged = judged_name(got)
    plug, stock, none, own = tok(judged), tok("ts-stock"), tok("ts-none"), tok("sg-lookup")
    need = floor(workload, c, stock, none)
    out: dict[str, bool | None] = {}
    if c in (1, 8, 32):
        out[f"c{c}"] = None if None in (plug, need) else plug >= need
    ttft = [(got[n] or {}).get("ttft_p50") for n in (judged, "ts-stock")]
    out["ttft"] = None if None in ttft else ttft[0] - ttft[1] <= TTFT_MS
    peer = tok(own_peer)
    out["own_server"] = None if None in (peer, own) else within_own(own, peer)
    verify = tok("ts-lookup")
    if judged != "ts-lookup" and verify is not None and stock is not None:
        out["verify"] = None if need is None else verify >= need
    return out


def table(folders: Path | Sequence[Path], own_peer: str = "ts-device") -> list[dict[str, Any]]:
    """The rows of the table over one run folder, or several pooled (by_round)."""
    folders = [folders] if isinstance(folders, Path) else list(folders)
    rows = []
    for wl in WORKLOADS:
        runs = {n: by_round(folders, n, wl) for n in NAMES}
        for c in sorted({c for rounds in runs.values() for lv in rounds.values() for c in lv}):
            per = {n: {k: one(lv[c]) for k, lv in runs[n].items() if c in lv} for n in NAMES}
            got = {n: cell(list(per[n].values())) for n in NAMES}
            at = {n: {k: p["tok_s"] for k, p in per[n].items()} for n in NAMES if per[n]}
            rows.append({"workload": wl, "concurrency": c, **got, "bars": bars(wl, c, got, own_peer),
                         "paired": paired(wl, c, at, own_peer)})
    return rows


def spread(x: dict | None) -> str:
    """±half the rounds' tok/s range, in percent of their median ('' for one round)."""
    if not x or x.get("rounds", 1) < 2:
        return "    "
    lo, hi = x["tok_s_range"]
    return f"±{50 * (hi - lo) / x['tok_s']:2.0f}%" if x["tok_s"] else "    "


def show(rows: list[dict[str, Any]]) -> None:
    def fmt(x: dict | None, key: str, f: str) -> str:
        return format(x[key], f) if x and x.get(key) is not None else "-"

    print(f"{'workload':8} {'c':>3} | " + " | ".join(f"{n:>21}" for n in NAMES) + " | bars")
    print(f"{'':12} | " + " | ".join(f"{'tok/s ±% ttft50 tau':>21}" for _ in NAMES) + " |")
    for r in rows:
        cells = [f"{fmt(r[n], 'tok_s', '5.0f')}{spread(r[n])} {fmt(r[n], 'ttft_p50', '5.1f')} "
                 f"{fmt(r[n], 'tau', '4.2f')}" for n in NAMES]
        marks = " ".join(f"{k}:{'-' if v is None else 'ok' if v else 'MISS'}"
                         for k, v in r["bars"].items())
        print(f"{r['workload']:8} {r['concurrency']:>3} | " + " | ".join(f"{c:>21}" for c in cells)
              + f" | {marks}{paired_marks(r.get('paired'), r['concurrency'])}")


def paired_marks(p: dict[str, Any] | None, c: int) -> str:
    """' | paired over N rounds: c1 0.87x the floor MISS, own +2% ok' ('' without pairs)."""
    if not p:
        return ""
    verdict = {True: "ok", False: "MISS"}
    marks = []
    if f"c{c}" in p:
        marks.append(f"c{c} {p[f'c{c}_of_floor']:.2f}x the floor {verdict[p[f'c{c}']]}")
    if "own_server" in p:
        marks.append(f"own {100 * (p['own_server_ratio'] - 1):+.0f}% {verdict[p['own_server']]}")
    return f" | paired over {p['rounds']} rounds: " + ", ".join(marks)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("folders", type=Path, nargs="+", metavar="RUN_DIR")
    p.add_argument("--json", type=Path)
    p.add_argument("--own-peer", choices=NAMES[2:7], default="ts-device",
                   help="the turnspec server SGLang's own is held to (the same plan point)")
    args = p.parse_args()
    rows = table(args.folders, args.own_peer)
    show(rows)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
