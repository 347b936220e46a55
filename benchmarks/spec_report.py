"""`turnspec bench spec`'s report: a row per source with every configuration's tok/s, τ and
speedup over plain decode (`result_rows`), the fixed-width table (`print_table`)."""

from __future__ import annotations

from statistics import median

from turnspec.benchmarks.spec_runs import ConfigTotals, merged
from turnspec.speculator.tau import format_interval


def config_label(x: dict) -> str:
    """A spec row's or `best`'s settings: "adaptive B=8 p0.1 +lookup +3br" ("+3br planned"
    with the planned branches, "+3br +ds" with the datastore branch)."""
    n = x.get("branches", 1)
    plan = f" {x['plan']}" if n > 1 and x.get("plan", "first") != "first" else ""
    plan += " +ds" if n > 1 and x.get("datastore") else ""
    return (f"{x['policy']} B={x['block']} p{x.get('min_confidence', 0):g}"
            + (" +lookup" if x.get("lookup") else "") + (f" +{n}br{plan}" if n > 1 else "")
            + (" peer" if x.get("drafter") == "peer" else ""))


def print_table(r: dict) -> None:
    w = max([9, *(len(row["source"]) + 1 for row in r["rows"])])  # the source column
    hdr = (f"{'source':<{w}}{'config':<44}{'tok/s':>9}{'tau':>7}{'90% CI':>12}{'spec tok':>9}"
           f"{'vs plain':>10}{'identical':>11}")
    print(f"\n{' turnspec bench spec ':=^{len(hdr)}}")
    cpu = f" ({r['cpu']})" if r.get('cpu') else ""
    peer = f", peer {r['peer_speculator']}" if r.get("peer_speculator") else ""
    print(f"device {r['device']}{cpu} {r['dtype']} threads {r['threads']}  drafter {r['speculator']}{peer}")
    if r.get("cpu_gemm_plan"):
        print(f"cpu fp32 GEMM per row bucket {r['cpu_gemm_plan']}")
    if r.get("triton_compiles_timed"):
        print(f"WARNING: {r['triton_compiles_timed']} Triton kernel variants compiled inside the "
              "timed pass: the configurations that met them first carry their compile time")
    print(hdr)
    print("-" * len(hdr))
    for row in r["rows"]:
        base = row["turnspec_plain_tok_s"]
        print(f"{row['source']:<{w}}{'turnspec, no spec':<44}{base:>9.2f}{'':>28}{1.0:>9.2f}x")
        for x in row["spec"]:
            tau = f"{x['tau']:.2f}" if x["tau"] is not None else "-"
            share = f"{100 * x['spec_share']:.0f}%" if x["spec_share"] is not None else "-"
            ci = format_interval(x.get("tau_ci90"))
            name = f"DFlash {config_label(x)}"
            print(f"{'':<{w}}{name:<44}{x['tok_s']:>9.2f}{tau:>7}{ci:>12}{share:>9}{x['speedup']:>9.2f}x"
                  f"{str(x['identical']):>11}")
        if "transformers_tok_s" in row:
            for name, key in (("transformers", "transformers_tok_s"), ("tf prompt-lookup", "prompt_lookup_tok_s")):
                print(f"{'':<{w}}{name:<44}{row[key]:>9.2f}{'':>28}{row[key] / base:>9.2f}x")
        print(f"{'':<{w}}best: {config_label(row['best'])}")
        if row.get("passes", 1) > 1:
            best = next(x for x in row["spec"] if config_label(x) == config_label(row["best"]))
            per = " ".join(f"{v:.2f}x" for v in best["speedup_per_pass"])
            print(f"{'':<{w}}{row['passes']} passes: no spec tok/s "
                  f"{' '.join(f'{v:.2f}' for v in row['plain_tok_s_per_pass'])}; best per pass "
                  f"{per}, median {best['speedup_median']:.2f}x")
    print("=" * len(hdr))


def result_rows(by_source: dict[str, list], passes: list[dict], configs: list[tuple],
                repeat: int, with_hf: bool) -> list[dict]:
    """Per source: plain decode's tok/s, each configuration's tok/s, τ (90% interval), share of
    tokens from verify steps, speedup and whether its tokens equal plain decode's; with several
    passes each speedup per pass and their median; the best configuration."""
    rows = []
    for source, prompts in sorted(by_source.items()):
        acc = {name: merged([p[source][name] for p in passes]) for name in passes[0][source]}
        base = acc["plain"].result()
        row = {"source": source, "prompts": len(prompts), "passes": repeat,
               "turnspec_plain_tok_s": base["tok_s"], "spec": []}
        if repeat > 1:
            row["plain_tok_s_per_pass"] = [p[source]["plain"].result()["tok_s"] for p in passes]
        for c in configs:
            row["spec"].append(_config_result(c, acc[c], acc["plain"], base["tok_s"]))
            if repeat > 1:
                per_pass = [p[source][c].result()["tok_s"] / p[source]["plain"].result()["tok_s"]
                            for p in passes]
                row["spec"][-1].update(speedup_per_pass=per_pass, speedup_median=median(per_pass))
        if with_hf:
            row["transformers_tok_s"] = acc["hf"].result()["tok_s"]
            row["prompt_lookup_tok_s"] = acc["lookup"].result()["tok_s"]
        best = max(row["spec"], key=lambda x: x["tok_s"])
        row["best"] = {k: best[k] for k in ("policy", "block", "min_confidence", "lookup",
                                            "branches", "plan", "drafter", "datastore")}
        rows.append(row)
    return rows


def _config_result(c: tuple, acc: ConfigTotals, plain: ConfigTotals, plain_tok_s: float) -> dict:
    r = acc.result()
    return {"policy": c[0], "block": c[1], "min_confidence": c[2], "lookup": c[3],
            "branches": c[4], "plan": c[5], "datastore": c[6], "drafter": c[7],
            "tok_s": r["tok_s"], "tau": r["tau"], "tau_ci90": r["tau_ci90"],
            "spec_share": r["spec_share"], "speedup": r["tok_s"] / plain_tok_s,
            "identical": acc.tokens == plain.tokens}
