"""scripts/analysis/pool_tau.py: τ pooled over sets evaluated apart."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from turnspec.speculator.tau import tau_interval

ROOT = Path(__file__).resolve().parents[3]
spec = importlib.util.spec_from_file_location("pool_tau", ROOT / "scripts/analysis/pool_tau.py")
pool_tau = importlib.util.module_from_spec(spec)
spec.loader.exec_module(pool_tau)


def _entry(rows: list[tuple[int, int]], with_rows: bool = True) -> dict:
    tokens, steps = sum(t for t, _ in rows), sum(n for _, n in rows)
    e = {"tau": tokens / steps, "tokens": tokens, "steps": steps, "samples": len(rows),
         "ci90": list(tau_interval([t for t, _ in rows], [n for _, n in rows]))}
    return {**e, "rows": rows} if with_rows else e


def test_pooled_tau_is_tokens_over_steps_with_an_interval_over_every_turn():
    a = _entry([(30, 5), (8, 4), (60, 5), (12, 6)])
    b = _entry([(14, 7), (45, 4), (9, 3)])
    p = pool_tau.pool([a, b])
    assert p["tau"] == (a["tokens"] + b["tokens"]) / (a["steps"] + b["steps"])  # not a mean of taus
    assert p["samples"] == 7 and p["ci90_method"] == "bootstrap over turns"
    assert p["ci90"] == list(tau_interval([30, 8, 60, 12, 14, 45, 9], [5, 4, 5, 6, 7, 4, 3]))
    # sets without per-turn rows (evals before they were written): the per-set intervals,
    # weighted by steps; narrower than either set's own
    old = pool_tau.pool([_entry(a["rows"], False), _entry(b["rows"], False)])
    assert old["tau"] == p["tau"] and old["ci90_method"].startswith("approx")
    lo, hi = old["ci90"]
    assert lo < old["tau"] < hi
    assert hi - lo < min(e["ci90"][1] - e["ci90"][0] for e in (a, b))
    with pytest.raises(ValueError, match="at least one"):
        pool_tau.pool([])


def test_cli_pools_committed_evals(tmp_path):
    runs = ROOT / "docs/gpu-runs/2026-12-02-drafter-run22"
    files = [runs / f"tau_main_heldout-seed{s}.json" for s in (7, 8)]
    out = tmp_path / "pooled.json"
    res = subprocess.run([sys.executable, str(ROOT / "scripts/analysis/pool_tau.py"), *map(str, files),
                          "--json", str(out)], capture_output=True, text=True, check=True)
    evals = [json.loads(f.read_text())["eval"]["tools-heldout"] for f in files]
    pooled = json.loads(out.read_text())["pooled"]
    assert pooled["tau"] == sum(e["tokens"] for e in evals) / sum(e["steps"] for e in evals)
    assert f"{pooled['tau']:.3f}" in res.stdout.splitlines()[-1]
    bad = subprocess.run([sys.executable, str(ROOT / "scripts/analysis/pool_tau.py"), str(files[0]),
                          "--split", "nope"], capture_output=True, text=True)
    assert bad.returncode != 0 and "no 'nope'" in bad.stderr
