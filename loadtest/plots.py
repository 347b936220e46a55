"""PNG plots of one or more results (matplotlib, Agg): TTFT and ITL CDFs, the E2E breakdown
per percentile (stacked), the tau histogram, and the load sweep curve (with 2+ levels)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

PARTS = (("rtt_ms", "RTT"), ("host_overhead_ms", "host overhead"), ("queue_ms", "queue"),
         ("prefill_ms", "prefill"), ("decode_ms", "decode"), ("residual_ms", "residual"))


def _label(res: dict[str, Any]) -> str:
    load = res["load"]
    how = f"c={load['concurrency']}" if load["mode"] == "closed" else f"{load['rate']:g}/s"
    return f"{res['target']['transport']} {how}"


def write_plots(results: list[dict[str, Any]], folder: str | Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    written = []

    def save(fig: Any, name: str) -> None:
        fig.tight_layout()
        fig.savefig(out / name, dpi=110)
        plt.close(fig)
        written.append(out / name)

    _cdfs(plt, results, save)
    _breakdown(plt, results, save)
    _tau(plt, results, save)
    if len(results) > 1:
        _sweep(plt, results, save)
    return written


def _cdfs(plt: Any, results: list[dict[str, Any]], save: Callable[[Any, str], None]) -> None:
    for key, name, title in (("ttft_ms", "ttft_cdf.png", "TTFT"),
                             ("itl_all_ms", "itl_cdf.png", "inter-token latency")):
        fig, ax = plt.subplots(figsize=(6.4, 4.0))
        for res in results:
            xs = sorted(res["samples"].get(key) or [])
            if xs:
                ax.step(xs, [(i + 1) / len(xs) for i in range(len(xs))], where="post",
                        label=_label(res))
        ax.set(xlabel=f"{title} (ms)", ylabel="fraction of turns" if key == "ttft_ms"
               else "fraction of gaps", title=f"{title} CDF")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        save(fig, name)


def _breakdown(plt: Any, results: list[dict[str, Any]],
               save: Callable[[Any, str], None]) -> None:
    fig, axes = plt.subplots(1, len(results), figsize=(3.2 * len(results) + 1.5, 4.0),
                             squeeze=False)
    for ax, res in zip(axes[0], results, strict=True):
        rows = {q: r for q, r in res["breakdown"].items() if r}
        bottom = [0.0] * len(rows)
        for key, label in PARTS:
            vals = [r[key] for r in rows.values()]
            ax.bar(list(rows), vals, bottom=bottom, label=label)
            bottom = [b + v for b, v in zip(bottom, vals, strict=True)]
        ax.plot(list(rows), [r["e2e_ms"] for r in rows.values()], "k_", markersize=30,
                label="client E2E")
        ax.set(title=_label(res), ylabel="ms")
    axes[0][-1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.suptitle("client E2E by part, per E2E percentile")
    save(fig, "breakdown.png")


def _tau(plt: Any, results: list[dict[str, Any]], save: Callable[[Any, str], None]) -> None:
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    for res in results:
        taus = res["samples"].get("tau") or []
        if taus:
            ax.hist(taus, bins=20, alpha=0.6, label=_label(res))
    ax.set(xlabel="tau (tokens per verify step, per turn)", ylabel="turns",
           title="speculation: tau per turn")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8)
    else:
        ax.text(0.5, 0.5, "no speculation ran", ha="center", transform=ax.transAxes)
    save(fig, "tau_hist.png")


def _sweep(plt: Any, results: list[dict[str, Any]], save: Callable[[Any, str], None]) -> None:
    xs = [r["load"]["concurrency"] or r["load"]["rate"] for r in results]
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    for key, label in (("ttft_ms", "TTFT"), ("itl_ms", "ITL"), ("e2e_ms", "E2E")):
        for q, style in (("p50", "-o"), ("p90", "--o")):
            ax.plot(xs, [r["metrics"][key][q] for r in results], style, label=f"{label} {q}")
    ax.set(xlabel="concurrency" if results[0]["load"]["mode"] == "closed" else "rate",
           ylabel="ms", yscale="log", title="load sweep")
    ax2 = ax.twinx()
    ax2.plot(xs, [r["throughput"]["output_tokens_per_s"] for r in results], "k:s",
             label="output tok/s")
    ax2.set_ylabel("output tokens/s")
    ax.legend(fontsize=7, loc="upper left")
    ax2.legend(fontsize=7, loc="lower right")
    save(fig, "sweep.png")
