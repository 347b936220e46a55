"""Render deploy/grafana/turnspec.json's panels as one PNG from a real Prometheus (matplotlib):
each panel's queries run through Prometheus' HTTP API (`query_range`) over a window, drawn
where the dashboard's grid places them, for docs without a Grafana.

    python scripts/deploy/render_dashboard.py --prometheus http://127.0.0.1:9090 \\
        --start 1700000000 --end 1700000600 --out docs/img/dashboard.png

Grafana's variables are set to match everything ($job, $model) and `$__rate_interval` to
--rate-interval (at least four scrape intervals, as Grafana picks it).
"""

from __future__ import annotations

import argparse
import json
import re
import urllib.parse
import urllib.request
from datetime import datetime
from pathlib import Path
from typing import Any

DASHBOARD = Path(__file__).resolve().parents[2] / "deploy" / "grafana" / "turnspec.json"
UNIT_SCALE = {"s": (1000.0, "ms"), "percentunit": (100.0, "%"), "reqps": (1.0, "/s"),
              "none": (1.0, ""), "short": (1.0, "")}


def query_range(prom: str, expr: str, start: float, end: float, step: float) -> list[dict]:
    q = urllib.parse.urlencode({"query": expr, "start": start, "end": end, "step": step})
    with urllib.request.urlopen(f"{prom}/api/v1/query_range?{q}", timeout=30) as r:
        body = json.loads(r.read())
    if body.get("status") != "success":
        raise RuntimeError(f"{expr}: {body}")
    return body["data"]["result"]


def legend(fmt: str, labels: dict[str, str]) -> str:
    return re.sub(r"\{\{\s*(\w+)\s*\}\}", lambda m: labels.get(m[1], ""), fmt).strip()


def series(panel: dict, prom: str, window: tuple[float, float, float],
           variables: dict[str, str]) -> list[tuple[str, list[float], list[float]]]:
    """(legend, times, values) of every series every target of `panel` returns."""
    out = []
    for t in panel.get("targets", []):
        expr = t["expr"]
        for var, value in variables.items():
            expr = expr.replace(var, value)
        for s in query_range(prom, expr, *window):
            pts = [(float(ts), float(v)) for ts, v in s["values"] if v not in ("NaN", "+Inf")]
            if pts:
                out.append((legend(t.get("legendFormat", ""), s["metric"]) or t["refId"],
                            [p[0] for p in pts], [p[1] for p in pts]))
    return out


def draw(fig: Any, panel: dict, data: list, rows: int, start: float, end: float) -> None:
    g = panel["gridPos"]
    # [left, bottom, width, height] in figure fractions from Grafana's 24-column grid, with
    # room on the left for the tick labels
    box = [g["x"] / 24 + 0.03, 1 - (g["y"] + g["h"]) / rows + 0.03, g["w"] / 24 - 0.04,
           g["h"] / rows - 0.05]
    ax = fig.add_axes(box)
    ax.set_title(panel["title"], fontsize=8, loc="left")
    scale, unit = UNIT_SCALE.get(panel["fieldConfig"]["defaults"].get("unit", "none"), (1, ""))
    if panel["type"] == "stat":
        ax.axis("off")
        text = "   ".join(f"{name}: {vals[-1] * scale:g}" for name, _, vals in data) or "no data"
        ax.text(0.5, 0.4, text, ha="center", va="center", fontsize=11, transform=ax.transAxes)
        return
    for name, ts, vals in data:
        ax.plot([(t - start) / 60 for t in ts], [v * scale for v in vals], lw=1, label=name)
    if not data:
        ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes,
                fontsize=8, color="grey")
    ax.set_xlim(0, (end - start) / 60)
    ax.tick_params(labelsize=6)
    ax.set_ylabel(unit, fontsize=6)
    ax.grid(alpha=0.3)
    if data:
        ax.legend(fontsize=5, loc="upper left", ncol=3, frameon=False)


def render(dashboard: dict, prom: str, start: float, end: float, out: Path,
           rate_interval: str, step: float) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    variables = {"$__rate_interval": rate_interval, "$job": ".*", "$model": ".*"}
    panels = [p for p in dashboard["panels"] if p["type"] != "row"]
    rows = max(p["gridPos"]["y"] + p["gridPos"]["h"] for p in dashboard["panels"])
    fig = plt.figure(figsize=(16, rows * 0.3), dpi=72)
    for p in panels:
        draw(fig, p, series(p, prom, (start, end, step), variables), rows, start, end)
    for r in (p for p in dashboard["panels"] if p["type"] == "row"):
        fig.text(0.006, 1 - (r["gridPos"]["y"] + 0.8) / rows, r["title"], fontsize=9,
                 weight="bold")
    when = datetime.fromtimestamp(start).strftime("%Y-%m-%d %H:%M")
    fig.suptitle(f"{dashboard['title']}  ({when}, {(end - start) / 60:.0f} min; x: minutes)",
                 fontsize=10, x=0.5, y=0.998)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.canvas.draw()
    from PIL import Image  # matplotlib's own dependency: a 128-colour palette keeps it small

    image = Image.frombuffer("RGBA", fig.canvas.get_width_height(),
                             fig.canvas.buffer_rgba()).convert("RGB")
    image.quantize(128).save(out, optimize=True)
    plt.close(fig)
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--prometheus", default="http://127.0.0.1:9090")
    p.add_argument("--dashboard", type=Path, default=DASHBOARD)
    p.add_argument("--start", type=float, required=True, help="unix seconds")
    p.add_argument("--end", type=float, required=True, help="unix seconds")
    p.add_argument("--step", type=float, default=5.0, help="seconds between points")
    p.add_argument("--rate-interval", default="20s")
    p.add_argument("--out", type=Path, required=True)
    a = p.parse_args()
    out = render(json.loads(a.dashboard.read_text()), a.prometheus.rstrip("/"), a.start, a.end,
                 a.out, a.rate_interval, a.step)
    print(f"wrote {out} ({out.stat().st_size // 1024} KB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
